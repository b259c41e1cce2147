"""A session's stored chunks as a writer sees them: which chunks share messages with a batch, and their numbering.

Every session chunk carries a ``chunk_index`` (its position in the session). New chunks are numbered after the
session's stored ones when a batch is planned, and numbered again when it is published (:func:`renumber`), since
another writer of the same session may have published chunks in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_session_rag.errors import UnsupportedOperationError
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.stores.base import MemoryBackend, Record, decode_message_ids


def next_index(stored: Sequence[Record]) -> int:
    """The ``chunk_index`` after the highest of ``stored`` (0 for none)."""
    return 1 + max((int(r.metadata.get("chunk_index", -1)) for r in stored), default=-1)


def index(records: Sequence[Record], start: int) -> None:
    """Number new chunks from ``start`` (after the session's stored ones)."""
    for n, record in enumerate(records):
        record.metadata["chunk_index"] = start + n


def place(records: Sequence[Record], stored: Sequence[Record], start: int) -> tuple[list[Record], list[Record]]:
    """Split ``records`` into (edited, new) against ``stored``, each placed in the session.

    An edited record is rewritten in place (it keeps its stored ``chunk_index``); new ones are numbered from
    ``start``; unchanged records are dropped.
    """
    stored_by_id = {r.id: r for r in stored}
    new = [r for r in records if r.id not in stored_by_id]
    edited = [r for r in records if r.id in stored_by_id and stored_by_id[r.id].text != r.text]
    for record in edited:
        record.metadata["chunk_index"] = int(stored_by_id[record.id].metadata.get("chunk_index", 0))
    index(new, start)
    return edited, new


def renumber(replica: UserReplica, records: Sequence[Record]) -> None:
    """Give the new session chunks of each session the next free ``chunk_index`` as the replica holds it now.

    A batch was numbered when it was planned; another writer of the same session may have published chunks
    since. Chunks already held (edits) keep their index.
    """
    by_session: dict[str, list[Record]] = {}
    for record in records:
        meta = record.metadata
        if meta.get("source_type") == "session" and not replica.has(record.id):
            by_session.setdefault(str(meta.get("session_id")), []).append(record)
    for session_id, new in by_session.items():
        _, start = replica.session_view(session_id, set())
        index(sorted(new, key=lambda r: int(r.metadata.get("chunk_index", 0))), start)


@dataclass(frozen=True)
class SessionChunks:
    """One user's stored session chunks: from the replica when there is one, else from the store."""

    backend: MemoryBackend
    user_id: str
    replica: UserReplica | None = None
    """The user's in-process replica, already synced with the store (``None`` when the store has none)."""

    def stored(self, session_id: str, *, with_embeddings: bool = False) -> list[Record]:
        """The session chunks stored for the user (empty for stores that cannot list)."""
        where = {"session_id": session_id, "source_type": "session"}
        try:
            return self.backend.get(self.user_id, where, with_embeddings=with_embeddings)
        except UnsupportedOperationError:
            return []

    def view(self, session_id: str, messages: set[str]) -> tuple[list[Record], int]:
        """The session's stored chunks sharing a message with ``messages``, and the next free ``chunk_index``.

        Served by the replica in time independent of the session's length; read from the store otherwise.
        """
        if self.replica is not None:
            return self.replica.session_view(session_id, messages)
        stored = self.stored(session_id)
        touching = [r for r in stored if messages & set(decode_message_ids(r.metadata.get("message_ids")))]
        return touching, next_index(stored)
