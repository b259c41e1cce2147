"""The maintenance side of ``SessionVectorMemory``: notes, listing, forgetting, compaction, export, re-embedding.

Plain functions over the memory (its public fields and its
:class:`~langchain_session_rag.memory.service.MemoryService`),
bound as its methods by :mod:`~langchain_session_rag.memory.retriever`; the work itself is the service's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag._checks import check_path, check_session_id
from langchain_session_rag._time import TimestampLike
from langchain_session_rag.identity import acting_user
from langchain_session_rag.memory.erasure import ErasureReceipt, LinkableCache
from langchain_session_rag.memory.listing import (
    SessionInfo,
    check_page,
    listing_where,
    memory_documents,
    note_record,
    sessions_of,
)
from langchain_session_rag.memory.scoped import UserStore
from langchain_session_rag.memory.service import reembed_store
from langchain_session_rag.memory.worth import Author
from langchain_session_rag.models.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.privacy.keyring import KeySource
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.encryption import check_key_before_opening, open_encrypted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chromadb.api import ClientAPI

    from langchain_session_rag.memory.retriever import SessionVectorMemory


def acting(self: SessionVectorMemory, *, check_run: bool = True) -> str:
    """The user a call of ``self`` acts for (the run may name it, or be refused: see ``for_run``)."""
    return acting_user(self.user_id, from_run=self.user_from_run) if check_run else self.user_id


def user_store(self: SessionVectorMemory, *, check_run: bool = True) -> UserStore:
    """The side of the store of the user a call of ``self`` acts for."""
    return self.service.user(acting(self, check_run=check_run))


# -- notes -----------------------------------------------------------------------------------
def add_note(  # noqa: D417 - bound as a method of the memory: self is the memory
    self: SessionVectorMemory,
    text: str,
    *,
    key: str | None = None,
    session_id: str = "",
    metadata: dict[str, Any] | None = None,
    timestamp: TimestampLike | None = None,
    author: Author = "user",
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
        author: Who wrote it. ``"user"`` (the default: application code saving what the user said or typed) makes
            it the user's statement, which recall ranks first and which may supersede an older one. ``"model"``
            (what the memory tools pass for a model's notes) makes it the assistant's claim: labelled "said by
            the assistant", ranked below the user's statements on its subject, superseding none of them.

    Returns:
        The note's id.

    Raises:
        InvalidArgumentError: Empty text or key, an unknown ``author``.
        MessageTooLargeError: Text longer than ``max_message_chars``.
        InvalidMetadataError: A reserved or unstorable metadata key, metadata over its limits (see
            :mod:`~langchain_session_rag.stores.limits`), a key over 1,024 characters.
        InvalidArgumentError: An unfit ``session_id`` (a line break, a control character, too long).
        InvalidArgumentError: With ``redact_secrets``, a ``key`` or ``session_id`` holding a secret (ids are not
            redacted: they must match exactly).
    """
    self.service.refuse_secret_ids(session_id=session_id, key=key)  # before the fit check, whose message shows it
    check_session_id(session_id, empty_ok=True)
    store = user_store(self)
    record = note_record(
        user_id=store.user_id,
        model_id=self.model_id,
        text=self.service.redacted(text) if isinstance(text, str) else text,
        key=key,
        session_id=session_id,
        timestamp=timestamp,
        metadata=self.service.redacted_metadata(metadata),
        count=self.chunker.count,
        max_chars=self.max_message_chars,
        author=author,
    )
    store.save([record])
    return record.id


# -- listing ---------------------------------------------------------------------------------
def list_memories(  # noqa: D417 - bound as a method of the memory: self is the memory
    self: SessionVectorMemory,
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
    store = user_store(self)
    return memory_documents(store.records(where), user_id=store.user_id, limit=limit, offset=offset)


def list_sessions(
    self: SessionVectorMemory, *, since: TimestampLike | None = None, until: TimestampLike | None = None
) -> list[SessionInfo]:
    """This user's sessions, most recently active first, with their dates and chunk and message counts.

    ``since`` / ``until`` keep the sessions with a chunk in that span.

    Raises:
        UnsupportedOperationError: The vector store cannot list its records.
    """
    store = user_store(self)
    return sessions_of(store.records(listing_where(since=since, until=until)), user_id=store.user_id)


# -- forgetting ------------------------------------------------------------------------------
def forget(  # noqa: D417 - bound as a method of the memory: self is the memory
    self: SessionVectorMemory,
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
    return self.service.forget(acting(self), session_id=session_id, before=before, ids=ids)


def forget_all(self: SessionVectorMemory) -> ErasureReceipt:
    """Delete every memory of this user (and only this user), core memory included; return how many chunks.

    The user's daily log folder is deleted and linked caches delete all of the user's entries. On an encrypted
    store the user's data keys are destroyed first (crypto-shredding): every earlier copy of the user's data is
    unreadable at once. The count returned is an :class:`~langchain_session_rag.memory.erasure.ErasureReceipt`
    (an ``int``) that also names the destroyed keys.
    """
    return self.service.forget_all(acting(self))


def compact(self: SessionVectorMemory, *, caches: Sequence[LinkableCache] = ()) -> int:
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
        UnsupportedOperationError: The store cannot be compacted (no ``COMPACTION`` capability: not a Chroma store).
    """
    for cache in caches:
        cache.link_memory(self)
    return self.service.compact()


def count(self: SessionVectorMemory) -> int:
    """How many chunks this user has stored (after :meth:`flush`)."""
    return user_store(self).count()


# -- portability -----------------------------------------------------------------------------
def export_jsonl(self: SessionVectorMemory, path: str | os.PathLike[str], *, encrypt: bool | None = None) -> int:
    """Write every chunk of this user to a JSON Lines file; return how many were written.

    Each line holds ``id``, ``text``, ``metadata`` (``message_ids`` as a list), ``embedding``
    and ``embedding_model``. From an encrypted store each line is sealed under the user's data key (an export
    taken before ``forget_all`` is unreadable after it); ``encrypt=False`` writes the plain lines (to hand the
    user their data, or to move it to a store with another keyring).
    """
    return user_store(self).export_jsonl(check_path("path", path), encrypt=encrypt)


def import_jsonl(
    self: SessionVectorMemory, path: str | os.PathLike[str], *, reassign: bool = False, trust_provenance: bool = False
) -> int:
    """Import an :meth:`export_jsonl` file into this user's memory; return how many chunks were added.

    The file is validated whole before anything is written. Chunks already stored are skipped;
    vectors are reused when the file was written with the same embedding model, and texts are
    re-embedded otherwise. An export of another user (its records' ``user_id``) is refused unless
    ``reassign=True`` makes its memories this user's.

    Who said what is not taken from the file unless ``trust_provenance=True`` (a file the user vouches for: their
    own export, kept where no one else could edit it): anyone who can edit a file can write the fields a chunk's
    worth is computed from. By default an imported note is the model's (``author="model"``: recalled as the
    assistant's claim, never superseding what the user stated) and a session chunk's ``exchange_count`` is not
    taken (a ``User:`` line after a reply is read as part of the reply).

    Raises:
        IdentityConflictError: The file holds another user's memories and ``reassign`` is off (nothing is
            imported).
        InvalidMessageError: A malformed line (nothing is imported).
        InvalidArgumentError: An id in the file belongs to another user of the same collection.
    """
    store = user_store(self)
    return store.import_jsonl(check_path("path", path), reassign=reassign, trust_provenance=trust_provenance)


def reembed(  # noqa: D417 - bound as a method of the memory: self is the memory
    cls: type[SessionVectorMemory],  # noqa: ARG001 - bound as a classmethod of the memory
    store: str | os.PathLike[str] | ClientAPI,
    *,
    embeddings: Embeddings,
    collection_name: str = "session_memory",
    embedding_model_id: str | None = None,
    encryption_key: KeySource | None = None,
    keyring_dir: str | None = None,
) -> int:
    """Re-embed a whole store (every user) with a new model, from its stored texts.

    Args:
        store: The folder of an embedded store, or a chromadb client.
        embeddings: The new embedding model.
        collection_name: The store name.
        embedding_model_id: The identity to record; derived from ``embeddings`` when not given.
        encryption_key: An encrypted store's master key (else ``SESSION_RAG_MASTER_KEY``): texts are decrypted for
            the new model and the new vectors rotated, as the memory does.
        keyring_dir: An encrypted store's keyring folder (default: beside an embedded store).

    Returns:
        The number of chunks re-embedded.
    """
    if isinstance(store, str | os.PathLike):
        check_key_before_opening(store, encryption_key, keyring_dir, collection_name)
    client = open_chroma_client(path=store) if isinstance(store, str | os.PathLike) else store
    backend = open_encrypted(ChromaBackend(client, name=collection_name), encryption_key, keyring_dir)
    return reembed_store(backend, embeddings, embedding_model_id or model_id_of(embeddings))
