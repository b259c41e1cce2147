"""Publishing one user's records: the last checks, the replica (at once) and the store (through the write queue)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from langchain_session_rag import _fork
from langchain_session_rag.memory.annotate import annotate
from langchain_session_rag.memory.chunk_index import renumber
from langchain_session_rag.memory.relational import attach_facts
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.memory.writes import WriteQueue
from langchain_session_rag.relations.model import Extractor
from langchain_session_rag.stores.base import MemoryBackend, Probe, Record
from langchain_session_rag.stores.limits import check_record_keys
from langchain_session_rag.stores.records import stamp

_INDEX_LOCK = _fork.lock()


@dataclass(frozen=True)
class Committer:
    """Sends one user's records to the store, the deletion of what they replace after them."""

    backend: MemoryBackend
    user_id: str
    model_id: str
    queue: WriteQueue
    replica: UserReplica | None = None
    """The user's in-process replica: it holds a write from the start (``None`` when the store has none)."""
    scorer: Callable[[str], float] | None = None
    """Scores a chunk's importance (default: the heuristics of :mod:`~langchain_session_rag.memory.annotate`)."""
    extractor: Extractor | None = None
    """Finds each new chunk's entities and relations (``None``: none are stored)."""
    linger: float | None = None
    """Seconds a write nobody waits for may wait for company (``None``: the queue's)."""
    probe: Probe | None = None
    """The model's vectors for the fingerprint's probe texts (the store checks the model by them)."""

    def check_vectors(self, records: Sequence[Record]) -> None:
        """Refuse vectors of another dimension than the store holds, or of another model under the store's id."""
        vector = next((r.embedding for r in records if r.embedding is not None), None)
        if vector is not None:
            self.backend.check_model(self.model_id, len(vector), probe=self.probe)

    def store(self, records: list[Record], superseded: list[str], *, wait: bool = True) -> Future[None]:
        """Send records, then the deletion of what they replace, to the store (so a crash never loses coverage).

        The replica holds the change at once. With ``wait=False`` a failure is raised by the next write or
        ``flush()`` instead of through the returned future.
        """
        self.queue.raise_failures()
        for record in records:  # the last check before the store: one record must not break a shared shard
            check_record_keys(record.id, record.metadata)
        self.check_vectors(records)
        annotate(records, self.scorer)
        attach_facts(records, self.extractor, self.replica)
        stamp(records)  # a new revision per write: other processes' replicas see edits under the same id
        if not records and not superseded:
            done: Future[None] = Future()
            done.set_result(None)
            return done
        replica = self.replica
        added = [r.id for r in records]
        on_done = None
        if replica is not None:
            with _INDEX_LOCK:  # numbering and publishing are one step: concurrent writers never share an index
                renumber(replica, records)
                replica.begin(added, superseded)
                replica.put(records)
                replica.drop([i for i in superseded if i not in set(added)])

            def on_done(error: BaseException | None) -> None:
                replica.settle(added, superseded)
                if error is not None:  # the store did not change as the replica did: reload from the store
                    replica.invalidate()

        return self.queue.submit(
            self.user_id, records, superseded, detached=not wait, on_done=on_done, linger=self.linger
        )
