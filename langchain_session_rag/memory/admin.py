"""The maintenance side of ``SessionVectorMemory``: notes, listing, forgetting, compaction, export, re-embedding."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag._checks import check_path, check_session_id
from langchain_session_rag._time import TimestampLike, parse_timestamp
from langchain_session_rag.errors import UnsupportedOperationError
from langchain_session_rag.memory.core import CoreMemory, forget_cached
from langchain_session_rag.memory.erasure import (
    Forgotten,
    LinkableCache,
    erase_logs,
    erase_user_logs,
    linked_tiers,
)
from langchain_session_rag.memory.listing import (
    SessionInfo,
    check_page,
    listing_where,
    memory_documents,
    note_record,
    sessions_of,
)
from langchain_session_rag.memory.scoped import reset_replicas
from langchain_session_rag.memory.settings import MemorySettings
from langchain_session_rag.models.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chromadb.api import ClientAPI

__all__ = ["MemoryAdmin", "SessionInfo"]


class MemoryAdmin(MemorySettings):
    """Notes, listing, forgetting, compaction and portability of a user's memory (every method acts for ``user_id``)."""

    # -- core memory -----------------------------------------------------------------------------
    @property
    def core(self) -> CoreMemory:
        """The pinned core memory of the user this call acts for (blocks ``core_limits``; see :class:`CoreMemory`).

        Raises:
            UnsupportedOperationError: The memory's store is not a Chroma store (core memory lives next to it).
        """
        return CoreMemory(
            self._core_backend(),
            self._store().user_id,
            limits=self.core_limits,
            count=self.chunker.count,
            agent_edits=self.core_agent_edits,
        )

    def _core_backend(self) -> ChromaBackend:
        if not isinstance(self._backend, ChromaBackend):
            msg = (
                f"Core memory is kept in a Chroma store next to the memories; this memory uses "
                f"{type(self._backend).__name__}. Use SessionVectorMemory.local(...) or .server(...)."
            )
            raise UnsupportedOperationError(msg)
        return self._backend.companion("core")

    # -- notes -----------------------------------------------------------------------------------
    def add_note(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str = "",
        metadata: dict[str, Any] | None = None,
        timestamp: TimestampLike | None = None,
    ) -> str:
        """Save a note: a memory stated on purpose (a fact, a preference, a correction), not a conversation.

        Notes are retrieved with the sessions (``source_type="note"``, marked ``[S: date]`` by the date they were
        saved). Saving again with the same ``key`` (or, without a key, the same text) replaces the note.

        Args:
            text: The note.
            key: A stable name for the note, to replace it later; by default derived from the text.
            session_id: The session it was saved in (``""``: none).
            metadata: Extra metadata (scalar values; others are JSON-encoded).
            timestamp: When it was stated (default: now).

        Returns:
            The note's id.

        Raises:
            InvalidArgumentError: Empty text or key.
            MessageTooLargeError: Text longer than ``max_message_chars``.
            InvalidMetadataError: A reserved or unstorable metadata key, metadata over its limits (see
                :mod:`~langchain_session_rag.stores.limits`), a key over 1,024 characters.
            InvalidArgumentError: An unfit ``session_id`` (a line break, a control character, too long).
        """
        check_session_id(session_id, empty_ok=True)
        store = self._store()
        record = note_record(
            user_id=store.user_id,
            model_id=self._model_id,
            text=text,
            key=key,
            session_id=session_id,
            timestamp=timestamp,
            metadata=metadata,
            count=self.chunker.count,
            max_chars=self.max_message_chars,
        )
        store.save([record])
        return record.id

    async def aadd_note(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str = "",
        metadata: dict[str, Any] | None = None,
        timestamp: TimestampLike | None = None,
    ) -> str:
        """Async :meth:`add_note`."""
        return await asyncio.to_thread(
            self.add_note, text, key=key, session_id=session_id, metadata=metadata, timestamp=timestamp
        )

    # -- listing ---------------------------------------------------------------------------------
    def list_memories(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        session_id: str | None = None,
        since: TimestampLike | None = None,
        until: TimestampLike | None = None,
        source_type: str | Sequence[str] | None = None,
    ) -> list[Document]:
        """One page of this user's memories, newest first (by timestamp, then storage time, then id).

        Each document carries its metadata and ``marker``. Page with ``offset`` (``offset=20`` is the second page
        of 20); at most 1,000 a page.

        Args:
            limit: Page size (1..1000).
            offset: Memories to skip.
            session_id: Only this session's.
            since: Only memories at or after this time.
            until: Only memories at or before this time.
            source_type: Only ``"session"``, ``"document"`` or ``"note"`` memories (or a list of them).

        Raises:
            InvalidArgumentError: A malformed filter, or a page size out of range.
            UnsupportedOperationError: The vector store cannot list its records.
        """
        check_page(limit, offset)
        where = listing_where(session_id=session_id, since=since, until=until, source_type=source_type)
        store = self._store()
        return memory_documents(store.records(where), user_id=store.user_id, limit=limit, offset=offset)

    async def alist_memories(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        session_id: str | None = None,
        since: TimestampLike | None = None,
        until: TimestampLike | None = None,
        source_type: str | Sequence[str] | None = None,
    ) -> list[Document]:
        """Async :meth:`list_memories`."""
        return await asyncio.to_thread(
            self.list_memories,
            limit=limit,
            offset=offset,
            session_id=session_id,
            since=since,
            until=until,
            source_type=source_type,
        )

    def list_sessions(
        self, *, since: TimestampLike | None = None, until: TimestampLike | None = None
    ) -> list[SessionInfo]:
        """This user's sessions, most recently active first, with their dates and chunk and message counts.

        ``since`` / ``until`` keep the sessions with a chunk in that span.

        Raises:
            UnsupportedOperationError: The vector store cannot list its records.
        """
        store = self._store()
        return sessions_of(store.records(listing_where(since=since, until=until)), user_id=store.user_id)

    async def alist_sessions(
        self, *, since: TimestampLike | None = None, until: TimestampLike | None = None
    ) -> list[SessionInfo]:
        """Async :meth:`list_sessions`."""
        return await asyncio.to_thread(self.list_sessions, since=since, until=until)

    # -- forgetting ------------------------------------------------------------------------------
    def forget(
        self,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Delete this user's memories matching every given criterion; return how many were removed.

        Every tier goes with them: the daily log (``daily_log_dir``) is rewritten without the messages the
        removed chunks covered (and, without ``ids=``, without any message of the session / before the time),
        and linked caches (see ``SemanticCache.link_memory``) delete the answers derived from them.

        Args:
            session_id: Only chunks of this session.
            before: Only chunks whose timestamp is earlier than this.
            ids: Only these chunk ids (ids of other users are ignored).

        Raises:
            InvalidArgumentError: No criterion is given (use :meth:`forget_all`), or one is malformed.
            FileAccessError: The daily log could not be rewritten (the memories are gone; forget again to retry).
        """
        store = self._store()
        removed = store.forget(session_id, before, ids)
        gone = Forgotten.of(
            removed,
            session_id=session_id,
            before=None if before is None else parse_timestamp(before, what="before"),
            by_ids=ids is not None,
        )
        for tier in linked_tiers(self._backend.process_key):
            tier.forget_derived(store.user_id, gone)
        if self.daily_log_dir is not None:
            erase_logs(self.daily_log_dir, store.user_id, gone)
        return len(removed)

    async def aforget(
        self,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Async :meth:`forget`."""
        return await asyncio.to_thread(self.forget, session_id=session_id, before=before, ids=ids)

    def forget_all(self) -> int:
        """Delete every memory of this user (and only this user), core memory included; return how many chunks.

        The user's daily log folder is deleted and linked caches delete all of the user's entries.
        """
        store = self._store()
        removed = store.forget_all()
        if isinstance(self._backend, ChromaBackend):
            core = self._core_backend()
            core.purge(store.user_id)  # the core memory and its history go too (not counted)
            forget_cached(core.process_key, store.user_id)
        for tier in linked_tiers(self._backend.process_key):
            tier.forget_derived(store.user_id, None)
        if self.daily_log_dir is not None:
            erase_user_logs(self.daily_log_dir, store.user_id)
        return removed

    async def aforget_all(self) -> int:
        """Async :meth:`forget_all`."""
        return await asyncio.to_thread(self.forget_all)

    def compact(self, *, caches: Sequence[LinkableCache] = ()) -> int:
        """Erase what was forgotten from the store's files, for every user of the store, and from linked caches.

        ``forget`` and ``forget_all`` remove records from retrieval at once, but an embedded Chroma store
        keeps their text in its write-ahead log and in SQLite's free pages until its collections are rebuilt
        and its file vacuumed. ``compact()`` does both (crash-safe: copy, verify, switch), after which a byte
        scan of the folder finds none of the forgotten texts. Other stores in an embedded store's folder (a
        semantic cache kept there, another memory) are compacted with it. Caches linked to this memory
        (``SemanticCache.link_memory``, done by the graphs) and the ``caches`` given (linked from then on) are
        compacted first, in whatever folder they are. It copies the whole store: run it after forgetting, not
        after every write. On a Chroma server the collections are rebuilt; run ``chroma vacuum --path DIR`` on
        the server's host for its files. Returns the number of chunks kept.

        Raises:
            UnsupportedOperationError: The store is not a Chroma store.
        """
        for cache in caches:
            cache.link_memory(self)
        for tier in linked_tiers(self._backend.process_key):
            tier.compact()
        for other in _stores_beside(self._backend):
            try:
                other.compact()
            finally:
                reset_replicas(other)
        return self._store(check_run=False).compact()

    async def acompact(self, *, caches: Sequence[LinkableCache] = ()) -> int:
        """Async :meth:`compact`."""
        return await asyncio.to_thread(self.compact, caches=caches)

    def count(self) -> int:
        """How many chunks this user has stored (after :meth:`flush`)."""
        return self._store().count()

    # -- portability -----------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Write every chunk of this user to a JSON Lines file; return how many were written.

        Each line holds ``id``, ``text``, ``metadata`` (``message_ids`` as a list), ``embedding``
        and ``embedding_model``.
        """
        return self._store().export_jsonl(check_path("path", path))

    async def aexport_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Async :meth:`export_jsonl`."""
        return await asyncio.to_thread(self.export_jsonl, path)

    def import_jsonl(self, path: str | os.PathLike[str], *, reassign: bool = False) -> int:
        """Import an :meth:`export_jsonl` file into this user's memory; return how many chunks were added.

        The file is validated whole before anything is written. Chunks already stored are skipped;
        vectors are reused when the file was written with the same embedding model, and texts are
        re-embedded otherwise. An export of another user (its records' ``user_id``) is refused unless
        ``reassign=True`` makes its memories this user's.

        Raises:
            IdentityConflictError: The file holds another user's memories and ``reassign`` is off (nothing is
                imported).
            InvalidMessageError: A malformed line (nothing is imported).
            InvalidArgumentError: An id in the file belongs to another user of the same collection.
        """
        return self._store().import_jsonl(check_path("path", path), reassign=reassign)

    async def aimport_jsonl(self, path: str | os.PathLike[str], *, reassign: bool = False) -> int:
        """Async :meth:`import_jsonl`."""
        return await asyncio.to_thread(self.import_jsonl, path, reassign=reassign)

    @classmethod
    def reembed(
        cls,
        store: str | os.PathLike[str] | ClientAPI,
        *,
        embeddings: Embeddings,
        collection_name: str = "session_memory",
        embedding_model_id: str | None = None,
    ) -> int:
        """Re-embed a whole store (every user) with a new model, from its stored texts.

        Args:
            store: The folder of an embedded store, or a chromadb client.
            embeddings: The new embedding model.
            collection_name: The store name.
            embedding_model_id: The identity to record; derived from ``embeddings`` when not given.

        Returns:
            The number of chunks re-embedded.
        """
        client = open_chroma_client(path=store) if isinstance(store, str | os.PathLike) else store
        backend = ChromaBackend(client, name=collection_name)
        try:
            return backend.reembed(embeddings.embed_documents, embedding_model_id or model_id_of(embeddings))
        finally:
            reset_replicas(backend)


def _stores_beside(backend: object) -> list[ChromaBackend]:
    """The other partitioned stores in an embedded store's folder (each has a manifest and shard collections)."""
    if not isinstance(backend, ChromaBackend) or backend.persist_directory is None:
        return []
    names = {c.name if hasattr(c, "name") else str(c) for c in backend.client.list_collections()}
    base = backend.name
    stores = {n.removesuffix("-manifest") for n in names if n.endswith("-manifest")}
    return [
        ChromaBackend(backend.client, name=store)
        for store in sorted(stores)
        if store != base
        and not store.startswith(base + "-")  # the store's own companions are compacted with it
        and not base.startswith(store + "-")
        and any(n.startswith(store + "-u") and n[len(store) + 2 :].isdigit() for n in names)
    ]
