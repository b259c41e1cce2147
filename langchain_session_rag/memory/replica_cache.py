"""The per-store cache of user replicas: which users' replicas are kept, and past what size a user gets none."""

from __future__ import annotations

from collections import OrderedDict

from langchain_session_rag import _fork
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.replica import UserReplica

MAX_USER_CHUNKS = 50_000
"""Chunks past which a user's searches use the store's own index instead of an in-process replica.

Measured with ``benchmarks/heavy_user.py`` (embedded Chroma, 384-dimension vectors, 40-80 word chunks, a busy
2-core machine): a fresh process's first query loaded 100,000 chunks in 36 s and peaked 721 MB above its
baseline (4.0x the raw vectors and texts), while the store's own index answered the same first query in 1.9 s
at 337 MB (later queries 0.44 s, against 0.03 s in a replica). At 50,000 a replica holds about 220 MB.
"""


class ReplicaCache:
    """Per-user replicas, least recently used first out (never one with writes still pending)."""

    def __init__(
        self, max_users: int = 1_000, max_chunks: int = 200_000, max_user_chunks: int = MAX_USER_CHUNKS
    ) -> None:
        """Keep at most ``max_users`` replicas holding at most ``max_chunks`` chunks in all (about 4.4 KB each).

        ``benchmarks/replica_memory.py`` measured 4.4 KB a chunk of 60-120 words with 384-dimension vectors
        (1.5 KB of it the vector), 11.3 KB before the postings and metadata were compacted. A user with more
        than ``max_user_chunks`` chunks gets no replica (see ``MAX_USER_CHUNKS``).
        """
        if min(max_users, max_chunks, max_user_chunks) < 1:
            msg = f"ReplicaCache limits must be >= 1, got {max_users=}, {max_chunks=}, {max_user_chunks=}."
            raise InvalidArgumentError(msg)
        self.max_users = max_users
        self.max_chunks = max_chunks
        self.max_user_chunks = max_user_chunks
        self._replicas: OrderedDict[str, UserReplica] = OrderedDict()
        self._lock = _fork.lock()

    def get(self, user_id: str, *, max_users: int | None = None, max_chunks: int | None = None) -> UserReplica:
        """The replica of ``user_id`` (created empty on first use); evicts the least recently used over the limits.

        ``max_users`` / ``max_chunks`` override the cache's limits for this call (the calling memory's
        :class:`~langchain_session_rag.memory.runtime.RuntimeSettings`).
        """
        users = self.max_users if max_users is None else max_users
        chunks = self.max_chunks if max_chunks is None else max_chunks
        with self._lock:
            replica = self._replicas.get(user_id)
            if replica is None:
                replica = UserReplica()
                self._replicas[user_id] = replica
            else:
                self._replicas.move_to_end(user_id)
            held = sum(len(r) for r in self._replicas.values())
            for victim in [u for u, r in self._replicas.items() if u != user_id and not r.busy]:
                if len(self._replicas) <= users and held <= chunks:
                    break
                held -= len(self._replicas.pop(victim))
            return replica

    def evict(self, user_id: str) -> None:
        """Forget one user's replica (rebuilt from the store on its next use)."""
        with self._lock:
            self._replicas.pop(user_id, None)

    def clear(self) -> None:
        """Forget every replica (each is rebuilt from the store on its next use)."""
        with self._lock:
            self._replicas.clear()
