"""The async twins made by ``memory/_threads.in_thread``: the caller's run and the object's own methods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.core import CoreMemory


@pytest.fixture
def per_run(tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding) -> SessionVectorMemory:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=fake_embeddings)
    return memory.model_copy(update={"user_from_run": True})


async def test_an_async_twin_acts_for_the_runs_user(per_run: SessionVectorMemory) -> None:
    """The thread it runs in sees the run's user, as the sync method would; without one it refuses."""

    async def note(_: object) -> str:
        return await per_run.aadd_note("Erin likes tea.")

    written = await RunnableLambda(note).ainvoke(1, {"configurable": {"user_id": "erin"}})
    assert [d.metadata["user_id"] for d in per_run.for_user("erin").get_by_ids([written])] == ["erin"]
    assert per_run.for_user("alice").count() == 0
    with pytest.raises(InvalidArgumentError, match="needs a user"):
        await per_run.alist_memories()


async def test_an_async_twin_runs_the_subclass_override(tmp_path: Path, fake_embeddings: Any) -> None:
    """``aNAME`` calls ``self.NAME``: an override (or a patch) of the sync method is what the async one runs."""
    calls: list[str] = []

    class Audited(SessionVectorMemory):
        def list_sessions(self, *args: Any, **kwargs: Any) -> Any:
            calls.append("list_sessions")
            return super().list_sessions(*args, **kwargs)

    class AuditedCore(CoreMemory):
        def read(self, *args: Any, **kwargs: Any) -> Any:
            calls.append("read")
            return super().read(*args, **kwargs)

    memory = Audited.local(path=tmp_path / "m", user_id="alice", embeddings=fake_embeddings)
    assert await memory.alist_sessions() == []
    core = memory.core
    core.__class__ = AuditedCore
    assert await core.aread("memory") == core.read("memory")
    assert calls == ["list_sessions", "read", "read"]
