"""SessionVectorMemory against a real Chroma server, as several processes would use it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from langchain_session_rag import SessionVectorMemory
from tests.conftest import chroma_session, cooking_session


def test_server_store_is_shared_and_scoped(chroma_server: tuple[str, int], real_embeddings) -> None:
    host, port = chroma_server
    writer = SessionVectorMemory.server(
        host, port, user_id="alice", embeddings=real_embeddings, collection_name="shared"
    )
    writer.add_messages(chroma_session(), session_id="s1")
    writer.for_user("bob").add_messages(cooking_session(), session_id="s1")

    # A second client object, as another process would open it.
    reader = SessionVectorMemory.server(
        host, port, user_id="alice", embeddings=real_embeddings, collection_name="shared"
    )
    docs = reader.invoke("chroma collection lost after restart", k=5)
    assert [d.metadata["message_ids"] for d in docs] == [["u1", "a1"]]
    assert docs[0].metadata["marker"] == "[S: 2026-02-06]"
    assert [d.metadata["user_id"] for d in reader.for_user("bob").invoke("bread", k=5)] == ["bob"]
    assert reader.for_user("bob").forget_all() == 1
    assert reader.count() == 1


def test_another_process_reads_what_this_one_wrote(
    chroma_server: tuple[str, int], real_embeddings, other_processes
) -> None:
    host, port = chroma_server
    SessionVectorMemory.server(
        host, port, user_id="dora", embeddings=real_embeddings, collection_name="xproc"
    ).add_messages(cooking_session(), session_id="s9")
    [other] = other_processes(1)
    code = """
        from langchain_session_rag import SessionVectorMemory
        m = SessionVectorMemory.server(host, port, user_id="dora", collection_name="xproc")
        print(m.invoke("how long to bake bread", k=1)[0].metadata["session_id"])
    """
    assert other.run(code, host=host, port=port).strip() == "s9"


async def test_server_async(chroma_server: tuple[str, int], real_embeddings) -> None:
    host, port = chroma_server
    m = SessionVectorMemory.server(host, port, user_id="erin", embeddings=real_embeddings, collection_name="asyncsrv")
    await m.aadd_messages(chroma_session(), session_id="s1")
    docs = await m.ainvoke("chroma", k=2)
    assert docs[0].metadata["user_id"] == "erin"


def test_semantic_cache_on_the_server_is_per_user(chroma_server: tuple[str, int], real_embeddings) -> None:
    from langchain_session_rag import SemanticCache

    host, port = chroma_server
    alice = SemanticCache.server(host, port, user_id="alice", embeddings=real_embeddings)
    alice.update("How do I reset my password?", "Settings.")
    again = SemanticCache.server(host, port, user_id="alice", embeddings=real_embeddings)
    assert again.lookup("How can I reset my password?") == "Settings."
    assert again.for_user("bob").lookup("How can I reset my password?") is None
    assert again.clear() == 1


def test_this_process_sees_another_process_write_and_forget(
    chroma_server: tuple[str, int], real_embeddings, other_processes
) -> None:
    """The write's process ends right after it (a write not waited for is flushed at exit); another forgets."""
    host, port = chroma_server
    here = SessionVectorMemory.server(host, port, user_id="fred", embeddings=real_embeddings, collection_name="xproc2")
    here.add_messages(chroma_session(), session_id="s1")
    assert len(here.invoke("bread", k=5)) == 1  # the replica is loaded

    writer = textwrap.dedent(f"""
        from langchain_session_rag import SessionVectorMemory
        from tests.conftest import cooking_session
        m = SessionVectorMemory.server({host!r}, {port}, user_id="fred", collection_name="xproc2")
        m.add_messages(cooking_session(), session_id="s2", wait=False)  # flushed at exit
    """)
    subprocess.run([sys.executable, "-c", writer], capture_output=True, text=True, timeout=120, check=True)
    assert [d.metadata["session_id"] for d in here.invoke("how long to bake bread", k=1)] == ["s2"]
    [other] = other_processes(1)
    forget = """
        from langchain_session_rag import SessionVectorMemory
        SessionVectorMemory.server(host, port, user_id="fred", collection_name="xproc2").forget(session_id="s2")
    """
    other.run(forget, host=host, port=port)
    assert [d.metadata["session_id"] for d in here.invoke("how long to bake bread", k=5)] == ["s1"]


def test_core_memory_is_shared_through_the_server_and_daily_logs_are_refused(
    chroma_server: tuple[str, int], real_embeddings, other_processes
) -> None:
    import pytest

    from langchain_session_rag.errors import UnsupportedOperationError

    host, port = chroma_server
    memory = SessionVectorMemory.server(
        host=host, port=port, user_id="core-ana", embeddings=real_embeddings, collection_name="core_test"
    )
    memory.core.write("memory", "- Ana prefers metric units.")
    code = """
        from langchain_session_rag import SessionVectorMemory
        from langchain_session_rag.models.embeddings import get_default_embeddings
        memory = SessionVectorMemory.server(host=host, port=port, user_id="core-ana",
                                            embeddings=get_default_embeddings(), collection_name="core_test")
        print(memory.core.read("memory"))
        memory.core.append("memory", "- Ana lives in Porto.")
    """
    [other] = other_processes(1)
    assert other.run(code, host=host, port=port).strip() == "- Ana prefers metric units."
    assert memory.core.read("memory") == "- Ana prefers metric units.\n- Ana lives in Porto."
    with pytest.raises(UnsupportedOperationError, match="embedded"):
        SessionVectorMemory.server(host=host, port=port, user_id="a", embeddings=real_embeddings, daily_log_dir="x")


def test_concurrent_core_edits_from_processes_lose_nothing(
    chroma_server: tuple[str, int], real_embeddings, other_processes
) -> None:
    host, port = chroma_server
    code = """
        from langchain_session_rag import SessionVectorMemory
        from langchain_session_rag.models.embeddings import get_default_embeddings
        memory = SessionVectorMemory.server(host=host, port=port, user_id="race", collection_name="core_race",
                                            embeddings=get_default_embeddings(), core_limits={"memory": 5000})
        for i in range(10):
            memory.core.append("memory", f"- {tag}-{i}")
    """
    processes = other_processes(3)
    for process, tag in zip(processes, "ABC", strict=True):
        process.send(code, host=host, port=port, tag=tag)  # the three run at once
    for process in processes:
        process.result()
    memory = SessionVectorMemory.server(
        host=host, port=port, user_id="race", collection_name="core_race", embeddings=real_embeddings,
        core_limits={"memory": 5000},
    )  # fmt: skip
    lines = memory.core.read("memory").split("\n")
    assert sorted(lines) == sorted(f"- {t}-{i}" for t in "ABC" for i in range(10))
    assert [v.version for v in memory.core.history("memory")] == list(range(1, 31))
