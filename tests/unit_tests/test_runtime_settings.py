"""Runtime settings are per memory and public: two memories of one process, over one store, behave by their own.

Before 0.7 the replica bounds and the write linger were module constants a test had to poke
(``memory._state.writes.linger``); the back ends were told apart with ``isinstance(..., ChromaBackend)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from pydantic import ValidationError

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import UnsupportedOperationError
from langchain_session_rag.memory import MemoryService, RuntimeSettings
from langchain_session_rag.memory.replica_cache import MAX_USER_CHUNKS, ReplicaCache
from langchain_session_rag.stores.base import (
    COMPACTION,
    CORE_MEMORY,
    DAILY_LOGS,
    REEMBED,
    USER_LISTING,
    CompanionBackend,
    MemoryBackend,
)
from langchain_session_rag.stores.chroma import ChromaBackend


def _open(folder: Path, runtime: RuntimeSettings | None = None) -> SessionVectorMemory:
    extra: dict[str, Any] = {} if runtime is None else {"runtime": runtime}
    return SessionVectorMemory.local(
        path=folder, user_id="alice", embeddings=DeterministicFakeEmbedding(size=16), chunking="exchange", **extra
    )


def _conversation(n: int) -> list[dict[str, str]]:
    return [
        turn
        for i in range(n)
        for turn in (
            {"role": "user", "content": f"Question {i} about topic {i % 7}?", "id": f"q{i}"},
            {"role": "assistant", "content": f"Answer {i}.", "id": f"a{i}"},
        )
    ]


def test_the_defaults_are_the_previous_constants() -> None:
    runtime = RuntimeSettings()
    cache = ReplicaCache()
    assert (runtime.replica_max_users, runtime.replica_max_chunks) == (cache.max_users, cache.max_chunks)
    assert runtime.max_user_chunks == MAX_USER_CHUNKS == 50_000
    assert (runtime.write_linger, runtime.background_writes) == (0.1, True)


@pytest.mark.parametrize(
    "bad",
    [{"write_linger": -1}, {"write_linger": float("inf")}, {"max_user_chunks": 0}, {"replica_max_users": 0}, {"x": 1}],
)
def test_bad_settings_are_refused_naming_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=next(iter(bad))):
        RuntimeSettings(**bad)


def test_two_memories_over_one_store_keep_their_own_replica_bound(tmp_path: Path) -> None:
    capped = _open(tmp_path / "store", RuntimeSettings(max_user_chunks=10))
    free = _open(tmp_path / "store")  # the same store, the same process, the default bound
    ids = free.add_messages(_conversation(30), session_id="s1")
    assert len(ids) == 30
    assert capped.service.state is free.service.state, "one store: one set of replicas and one write queue"

    assert capped.service.user("alice").replica() is None, "30 chunks > 10: no replica, the store's index serves"
    found = capped.invoke("Question 3 about topic 3?", k=3)
    assert [d.metadata["user_id"] for d in found] == ["alice"] * 3
    replica = free.service.user("alice").replica()
    assert replica is not None, "30 chunks < 50,000: this memory holds a replica"
    assert len(replica) == 30
    assert capped.service.user("alice").replica() is None, "the capped memory still keeps to its own bound"


def test_replica_bounds_apply_to_the_memory_that_reads(tmp_path: Path) -> None:
    one_user = _open(tmp_path / "store", RuntimeSettings(replica_max_users=1))
    many = _open(tmp_path / "store")
    for user in ("alice", "bob", "carol"):
        many.for_user(user).add_messages(_conversation(2), session_id="s")
    replicas = many.service.state.replicas
    assert [u for u in ("alice", "bob", "carol") if u in replicas._replicas] == ["alice", "bob", "carol"]
    one_user.for_user("dave").invoke("anything")
    assert list(replicas._replicas) == ["dave"], "a read by the memory allowing one replica drops the others"


def test_background_writes_off_waits_for_every_write(tmp_path: Path) -> None:
    lingering = _open(tmp_path / "a", RuntimeSettings(write_linger=30))  # background writes wait 30 s for company
    waiting = _open(tmp_path / "b", RuntimeSettings(write_linger=30, background_writes=False))
    first = lingering.add_messages(_conversation(1), session_id="s", wait=False)
    second = waiting.add_messages(_conversation(1), session_id="s", wait=False)
    assert lingering.backend.all_ids("alice") == [], "the write lingers in the queue (another process sees nothing)"
    assert waiting.backend.all_ids("alice") == second, "background_writes=False: the store holds it on return"
    assert [d.id for d in lingering.get_by_ids(first)] == first, "this process retrieves it either way"
    lingering.flush()
    assert lingering.backend.all_ids("alice") == first


class _Proxy:
    """A back end that is not a ``ChromaBackend`` (it wraps one): it is judged by the capabilities it declares."""

    def __init__(self, inner: ChromaBackend) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def companion(self, suffix: str) -> CompanionBackend:
        return self.inner.companion(suffix)

    def stores_beside(self) -> Sequence[MemoryBackend]:
        return []


def test_core_memory_follows_the_declared_capability_not_the_class(tmp_path: Path) -> None:
    memory = _open(tmp_path / "store")
    proxy: Any = _Proxy(memory.backend)  # type: ignore[arg-type]
    assert CORE_MEMORY in proxy.capabilities
    service = MemoryService.open(
        proxy,
        model_id=memory.model_id,
        embeddings=memory.service.embeddings,
        writing=memory.service.writing,
        runtime=RuntimeSettings(),
    )
    core = service.core("alice", limits={"memory": 100}, agent_edits="pin")
    core.append("memory", "Alice keeps bees.")
    assert memory.core.read("memory") == "Alice keeps bees."


def test_the_back_ends_declare_what_they_can_do(tmp_path: Path) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    assert _open(tmp_path / "s").backend.capabilities == {CORE_MEMORY, REEMBED, COMPACTION, USER_LISTING, DAILY_LOGS}
    plain = SessionVectorMemory(vectorstore=InMemoryVectorStore(DeterministicFakeEmbedding(size=8)), user_id="a")
    assert plain.backend.capabilities == {DAILY_LOGS}
    with pytest.raises(UnsupportedOperationError, match="Chroma"):
        _ = plain.core
    with pytest.raises(UnsupportedOperationError, match="users"):
        plain.backend.users()
