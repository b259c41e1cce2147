"""The per-user scoped store: a store's in-process state (replicas, write queue) and one user's side of it.

Memory objects over the same store (``for_user`` views, or separate objects on one client) share one
:class:`StoreState`, so each sees the others' writes at once. The state lives as long as some memory
object over the store does.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_ids, check_session_id
from langchain_session_rag._time import TimestampLike, parse_timestamp
from langchain_session_rag.errors import InvalidArgumentError, InvalidMessageError, UnsupportedOperationError
from langchain_session_rag.memory.chunk_index import SessionChunks
from langchain_session_rag.memory.commit import Committer
from langchain_session_rag.memory.documents import stored_document
from langchain_session_rag.memory.ingest import SessionPlanner
from langchain_session_rag.memory.portability import read_jsonl, write_jsonl
from langchain_session_rag.memory.replica import ReplicaSource, UserReplica
from langchain_session_rag.memory.replica_cache import ReplicaCache
from langchain_session_rag.memory.retrieval import (
    RetrievalQuery,
    lexical_candidates,
    rank,
    replica_search,
)
from langchain_session_rag.memory.speakers import FREQUENT_SPEAKER_SHARE, dense_query
from langchain_session_rag.memory.topics import TopicRecords
from langchain_session_rag.memory.whole import whole_memory
from langchain_session_rag.memory.writes import WriteQueue
from langchain_session_rag.stores.base import MemoryBackend, Record, Where
from langchain_session_rag.stores.encrypted import EncryptedBackend

if TYPE_CHECKING:
    from langchain_session_rag.memory.service import MemoryService

WRITE_SYNC_AGE = 1.0
"""Seconds a replica sync may be old when a write plans against it (reads always sync)."""
SPEAKERS_SYNC_AGE = 60.0
"""Seconds a replica sync stands for reading the frequent speakers (they change slowly)."""


class StoreState:
    """Replicas and the write queue of one store."""

    def __init__(self, backend: MemoryBackend) -> None:
        """The state of ``backend``'s store: no replica loaded yet, an idle write queue."""
        self._replicas, self._pid = ReplicaCache(), os.getpid()
        self.writes = WriteQueue(backend)
        self.trusted = backend.single_process
        """Every write comes through this process (embedded Chroma): a replica loaded once stays current."""

    @property
    def replicas(self) -> ReplicaCache:
        """The store's replicas in this process; new, empty ones in a forked child (its parent's may be locked)."""
        if self._pid != os.getpid():
            old = self._replicas
            self._replicas, self._pid = ReplicaCache(old.max_users, old.max_chunks, old.max_user_chunks), os.getpid()
        return self._replicas


_STATES: weakref.WeakValueDictionary[str, StoreState] = weakref.WeakValueDictionary()
_LOCK = _fork.lock()


def state_of(backend: MemoryBackend) -> StoreState:
    """The state of ``backend``'s store (created on first use)."""
    key = backend.process_key
    with _LOCK:
        state = _STATES.get(key)
        if state is None:
            state = _STATES[key] = StoreState(backend)
        return state


def reset_replicas(backend: MemoryBackend) -> None:
    """Drop the replicas of ``backend``'s store (after its vectors were rewritten)."""
    with _LOCK:
        state = _STATES.get(backend.process_key)
    if state is not None:
        state.replicas.clear()


@dataclass(frozen=True)
class Writers:
    """What one write of a user is planned and sent with, each collaborator one job (all over one replica sync)."""

    chunks: SessionChunks
    """The session's stored chunks and their numbering."""
    plan: SessionPlanner
    """Validates a batch and plans its exchange records."""
    topics: TopicRecords
    """Builds topic segment records."""
    commit: Committer
    """Publishes records to the replica and the store."""


@dataclass(frozen=True, eq=False)
class UserStore:
    """One user's side of a store: the replica it reads, the writers it plans with, forgetting and export.

    :class:`~langchain_session_rag.memory.service.MemoryService` hands one out per call (``service.user(id)``);
    every method acts for ``user_id`` only.
    """

    service: MemoryService
    user_id: str

    @property
    def backend(self) -> MemoryBackend:
        """The store's back end."""
        return self.service.backend

    @property
    def state(self) -> StoreState:
        """The store's in-process state (replicas, write queue)."""
        return self.service.state

    def replica(self, *, max_age: float = 0.0) -> UserReplica | None:
        """The user's replica, synced with the store (with vectors unless the store embeds itself).

        Coherence: on a store other processes write to (a Chroma server), a change any process made through
        this package (even under the same id) is seen here on the next read after that process's write returned
        (see :meth:`UserReplica.sync`). ``max_age`` lets a sync at most that many seconds old stand (writes only).
        Embedded Chroma is single-process (locked): its replica is loaded once and kept current by this process.

        ``None`` for stores that cannot list, and for a user past the memory's ``RuntimeSettings.max_user_chunks``,
        whose searches use the store's own index (even when another memory of the process, allowing more, holds
        a replica of the user).
        """
        replicas, runtime = self.state.replicas, self.service.runtime
        replica = replicas.get(self.user_id, max_users=runtime.replica_max_users, max_chunks=runtime.replica_max_chunks)
        backend, user_id, vectors = self.backend, self.user_id, not self.backend.embeds_itself
        source = ReplicaSource(
            log=lambda: backend.change_log(user_id),
            touched=lambda entries: backend.changed_ids(user_id, entries),
            ids=lambda: backend.all_ids(user_id),
            listing=lambda: backend.listing(user_id),
            pages=lambda ids: backend.pages(user_id, ids, with_embeddings=vectors),
        )
        bound = runtime.max_user_chunks
        if replica.oversize and bound > (replica.counted_past or 0):
            replica.invalidate()  # found oversize under a smaller bound than this memory's: count again
        try:
            replica.sync(source, max_age=math.inf if self.state.trusted else max_age, max_chunks=bound)
        except UnsupportedOperationError:
            return None
        replica.counted_past = max(replica.counted_past or 0, bound) if replica.oversize else None
        return None if replica.oversize or len(replica) > bound else replica

    def writers(self) -> Writers:
        """The writers of one write, planning against the replica (dedupe, numbering, the question it replaces).

        A sync up to ``WRITE_SYNC_AGE`` old stands: only another process's write of the same session in that
        second could be missed, and deterministic ids keep even that from duplicating a chunk.
        """
        service, writing = self.service, self.service.writing
        replica = self.replica(max_age=WRITE_SYNC_AGE)
        chunks = SessionChunks(self.backend, self.user_id, replica)
        return Writers(
            chunks=chunks,
            plan=SessionPlanner(
                chunks, service.model_id, writing.chunker, writing.max_message_chars, redact=writing.redact_secrets
            ),
            topics=TopicRecords(chunks, service.model_id),
            commit=Committer(
                self.backend,
                self.user_id,
                service.model_id,
                self.state.writes,
                replica,
                scorer=writing.scorer,
                extractor=writing.extractor,
                linger=service.runtime.write_linger,
                probe=service.probe,
            ),
        )

    def flush(self) -> None:
        """Wait until every queued write of the store has reached it (raises StoreWriteError on a failed one)."""
        self.service.flush()

    def embed_pending(self, records: list[Record]) -> None:
        """Embed the records that still need a vector (none when the store embeds itself), in one call."""
        pending = _pending(self.backend, records)
        if pending:
            vectors = self.service.embeddings.embed_documents([r.text for r in pending])
            for record, vector in zip(pending, vectors, strict=True):
                record.embedding = vector

    async def aembed_pending(self, records: list[Record]) -> None:
        """Async :meth:`embed_pending`."""
        pending = _pending(self.backend, records)
        if pending:
            vectors = await self.service.embeddings.aembed_documents([r.text for r in pending])
            for record, vector in zip(pending, vectors, strict=True):
                record.embedding = vector

    def dense_text(self, query: str) -> str:
        """The query's text for the dense embedding: without the names of the user's frequent speakers.

        See :mod:`~langchain_session_rag.memory.speakers`; the query itself for stores that cannot list.
        """
        replica = self.replica(max_age=SPEAKERS_SYNC_AGE)
        return query if replica is None else dense_query(query, replica.speakers(FREQUENT_SPEAKER_SHARE))

    def search(
        self, query: str, vector: list[float] | None, q: RetrievalQuery, *, dense_text: str | None = None
    ) -> list[Document]:
        """Rank the user's chunks for a query (in the replica when there is one, else in the store).

        With ``q.all_if_fits`` every matching chunk is returned instead, in time order, when they all fit.
        ``dense_text`` is what a store that embeds itself embeds (the query by default); BM25 reads ``query``.
        """
        if vector is not None:
            self.backend.check_model(self.service.model_id, len(vector), probe=self.service.probe)
        if isinstance(self.backend, EncryptedBackend):  # a filter the store cannot run is refused in the replica too
            self.backend.where(self.user_id, q.where)
        replica = self.replica()
        if q.all_if_fits is not None:
            if replica is not None:
                with replica.lock:
                    chosen = replica.select(q.where) if q.where else replica.ids()
                    held = [replica.record(i) for i in chosen]
            else:
                held = self.backend.get(self.user_id, q.where)
            everything = whole_memory(held, q, user_id=self.user_id)
            if everything is not None:
                return everything
        if replica is not None and vector is not None:
            return replica_search(replica, self.user_id, query, vector, q)
        hits = self.backend.query(self.user_id, dense_text or query, vector, q.fetch, q.where)
        if q.time_window is not None:  # the window's best chunks are candidates, however far the dense top reaches
            known = {r.id for r, _ in hits}
            inside = self.backend.query(
                self.user_id, dense_text or query, vector, q.fetch, q.time_window.within(q.where)
            )
            hits.extend(hit for hit in inside if hit[0].id not in known)
        lexical: dict[str, float] | None = None
        if q.lexical_weight > 0 and replica is not None:
            lexical = lexical_candidates(self.backend, replica, self.user_id, query, vector, q, hits)
        return rank(q, hits, user_id=self.user_id, lexical=lexical)

    def get_by_ids(self, ids: Sequence[str]) -> list[Document]:
        """The user's chunks among ``ids``, in ``ids`` order (queued writes included)."""
        replica = self.replica()
        if replica is not None:
            with replica.lock:  # a concurrent drop must not fall between the check and the read
                records = [replica.record(i) for i in dict.fromkeys(ids) if replica.has(i)]
        else:
            found = {r.id: r for r in self.backend.fetch(self.user_id, list(ids))}
            records = [found[i] for i in dict.fromkeys(ids) if i in found]
        return [stored_document(r) for r in records if r.metadata.get("user_id") == self.user_id]

    def forget(self, session_id: str | None, before: TimestampLike | None, ids: Sequence[str] | None) -> list[Record]:
        """Delete the user's chunks matching every given criterion (see ``SessionVectorMemory.forget``).

        Returns the chunks deleted, with their metadata (what the other tiers erase after them).
        """
        if session_id is None and before is None and ids is None:
            msg = "forget() needs session_id=, before= or ids=; to delete everything of this user call forget_all()."
            raise InvalidArgumentError(msg)
        if ids is not None:
            check_ids(ids)
        if session_id is not None:
            check_session_id(session_id)
        self.flush()
        targets = _forget_targets(self.backend, self.user_id, session_id, before, ids)
        try:
            self.backend.delete(self.user_id, [r.id for r in targets])
        finally:
            self.state.replicas.evict(self.user_id)
        return targets

    def forget_all(self) -> int:
        """Delete every chunk of the user; return how many."""
        self.flush()
        try:
            return self.backend.purge(self.user_id)
        finally:
            self.state.replicas.evict(self.user_id)

    def records(self, where: Where) -> list[Record]:
        """The user's stored chunks matching ``where`` (after a flush; without vectors)."""
        self.flush()
        return self.backend.get(self.user_id, where)

    def save(self, records: list[Record]) -> None:
        """Embed and store records as they are (notes, documents); a record with a stored id replaces it."""
        commit = self.writers().commit
        self.embed_pending(records)
        commit.store(records, []).result()

    def count(self) -> int:
        """How many chunks the user has stored (after a flush)."""
        self.flush()
        return len(self.backend.all_ids(self.user_id))

    def export_jsonl(self, path: str | os.PathLike[str], *, encrypt: bool | None = None) -> int:
        """Write the user's chunks to a JSON Lines file; return how many.

        On an encrypted store each line is sealed, unless ``encrypt`` is ``False``.
        """
        self.flush()
        records = self.backend.get(self.user_id, {}, with_embeddings=True)
        cipher = self.service.cipher(self.user_id) if encrypt is not False else None
        return write_jsonl(records, path, cipher=cipher)

    def import_jsonl(
        self, path: str | os.PathLike[str], *, reassign: bool = False, trust_provenance: bool = False
    ) -> int:
        """Import an export file into the user's memory (validated whole first); return how many were added.

        Records of another user (``metadata["user_id"]``) are refused unless ``reassign``; who said what is taken
        from the file only with ``trust_provenance`` (see ``read_jsonl``).
        """
        records = read_jsonl(
            path,
            user_id=self.user_id,
            model_id=self.service.model_id,
            reassign=reassign,
            trust_provenance=trust_provenance,
            max_chars=self.service.writing.max_message_chars,
            cipher=self.service.cipher(self.user_id),
        )
        if self.service.writing.redact_secrets:  # an import is stored like any write: a redacted text is re-embedded
            for record in records:
                text = self.service.redacted(record.text)
                if text != record.text:
                    record.text, record.embedding = text, None
                record.metadata = self.service.redacted_metadata(record.metadata) or {}
        sizes = {len(r.embedding) for r in records if r.embedding is not None}
        if sizes:  # vectors kept as written: they must be the model's size, or the store is unusable afterwards
            size = len(self.service.embeddings.embed_query("dimension check"))
            if sizes != {size}:
                model = self.service.model_id
                msg = (
                    f"{path} holds {'/'.join(map(str, sorted(sizes)))}-dimensional vectors, but {model!r} "
                    f"gives {size}; nothing was imported."
                )
                raise InvalidMessageError(msg)
        self.flush()
        ids = [r.id for r in records]
        foreign = self.backend.foreign_ids(self.user_id, ids)
        if foreign:
            msg = (
                f"{len(foreign)} id(s) in {path} belong to another user of this store "
                f"(e.g. {min(foreign)!r}); nothing was imported."
            )
            raise InvalidArgumentError(msg)
        stored = self.backend.existing_ids(self.user_id, ids)
        new = [r for r in records if r.id not in stored]
        self.save(new)
        return len(new)


def _pending(backend: MemoryBackend, records: list[Record]) -> list[Record]:
    """Records still needing a vector (none when the store embeds itself)."""
    return [] if backend.embeds_itself else [r for r in records if r.embedding is None]


def _forget_targets(
    backend: MemoryBackend,
    user_id: str,
    session_id: str | None,
    before: TimestampLike | None,
    ids: Sequence[str] | None,
) -> list[Record]:
    """The user's chunks matching every given criterion (with their metadata, without vectors)."""
    where: dict[str, Any] = {}
    if session_id is not None:
        where["session_id"] = session_id
    if before is not None:
        where["timestamp_epoch"] = {"$lt": parse_timestamp(before, what="before").timestamp()}
    if ids is not None and not where:
        return sorted(backend.fetch(user_id, list(dict.fromkeys(ids))), key=lambda r: r.id)
    wanted = set(ids) if ids is not None else None
    return [r for r in backend.get(user_id, where) if wanted is None or r.id in wanted]
