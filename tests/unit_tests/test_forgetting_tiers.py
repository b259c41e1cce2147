"""Forgetting reaches every tier: the store, the daily logs, semantic caches in any folder (byte scans)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.memory import read_daily_logs, rebuild_from_daily_logs

MARK = "ZQXMARKER7731"
OTHER = "KEEPSAKE4412"


def scan(folders: list[Path], needle: str) -> list[str]:
    """Every file under the folders whose bytes hold the needle (case-insensitively)."""
    want = needle.lower().encode()
    return [str(f) for folder in folders for f in folder.rglob("*") if f.is_file() and want in f.read_bytes().lower()]


def test_forget_all_and_compact_leave_no_byte_in_store_logs_or_cache(tmp_path: Path, real_embeddings: Any) -> None:
    store, logs, cache_dir = tmp_path / "store", tmp_path / "logs", tmp_path / "cache"
    memory = SessionVectorMemory.local(path=store, user_id="alice", embeddings=real_embeddings, daily_log_dir=logs)
    cache = SemanticCache.local(path=cache_dir, user_id="nobody", embeddings=real_embeddings)
    near = SemanticCache.local(path=store, user_id="nobody", embeddings=real_embeddings)  # in the memory's folder
    model = GenericFakeChatModel(messages=iter([AIMessage(f"Your locker code is {MARK}.")]))
    graph = create_session_rag_graph(model, memory, cache=cache, background_writes=False).compile()
    context = {"user_id": "alice", "session_id": "s1"}
    graph.invoke({"messages": [HumanMessage(f"Remember my locker code {MARK}, what is it?")]}, context=context)
    near.link_memory(memory)
    assert near.for_user("alice").update("What is my locker code?", f"It is {MARK}.")
    memory.for_user("bob").add_messages([{"role": "user", "content": f"Bob keeps {OTHER}."}], session_id="b1")
    memory.flush()
    assert scan([store], MARK), "the store holds the marker"
    assert scan([logs], MARK), "the daily log holds the marker"
    assert scan([cache_dir], MARK), "the graph's cache holds the answer"

    memory.forget_all()
    assert cache.for_user("alice").lookup(f"Remember my locker code {MARK}, what is it?") is None
    memory.compact()

    assert scan([store, logs, cache_dir], MARK) == [], "no tier keeps a byte of the forgotten text"
    assert scan([store], OTHER), "another user's memory is kept"
    assert memory.for_user("bob").count() == 1
    assert [m.user_id for m in read_daily_logs(logs)] == ["bob"]


def test_a_cleared_cache_compacts_to_nothing(tmp_path: Path, real_embeddings: Any) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=real_embeddings)
    assert cache.update("What is the vault code?", f"The vault code is {MARK}.")
    cache.for_user("bob").update("What is the vault code?", f"Bob's is {OTHER}.")
    cache.clear()
    assert scan([tmp_path / "c"], MARK), "a clear alone leaves the text in the files"
    assert cache.compact() == 1
    assert scan([tmp_path / "c"], MARK) == []
    assert cache.for_user("bob").lookup("What is the vault code?") == f"Bob's is {OTHER}."


def test_forget_session_rewrites_only_that_sessions_log_lines_and_rebuild_keeps_it_gone(
    tmp_path: Path, real_embeddings: Any
) -> None:
    logs = tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=tmp_path / "a", user_id="ana", embeddings=real_embeddings, daily_log_dir=logs
    )
    memory.add_messages([{"role": "user", "content": f"My passport number is {MARK}.", "id": "m1",
                          "timestamp": "2026-01-05T10:00:00Z"},
                         {"role": "assistant", "content": "Noted.", "id": "m2",
                          "timestamp": "2026-01-05T10:00:05Z"}], session_id="secret")  # fmt: skip
    memory.add_messages([{"role": "user", "content": f"I like {OTHER} tea.", "id": "k1",
                          "timestamp": "2026-01-05T11:00:00Z"}], session_id="kept")  # fmt: skip
    memory.for_user("bo").add_messages([{"role": "user", "content": "Bo's day.", "id": "b1"}], session_id="secret")
    assert memory.forget(session_id="secret") == 1
    logged = [(m.user_id, m.session_id, m.id) for m in read_daily_logs(logs)]
    assert ("ana", "kept", "k1") in logged
    assert ("bo", "secret", "b1") in logged, "another user's session of the same name is kept"
    assert not [entry for entry in logged if entry[:2] == ("ana", "secret")]
    assert scan([logs], MARK) == []
    assert scan([logs], OTHER)

    fresh = SessionVectorMemory.local(path=tmp_path / "b", user_id="ana", embeddings=real_embeddings)
    assert rebuild_from_daily_logs(logs, fresh, chunking="exchange") == {"ana": 1, "bo": 1}
    assert {s.session_id for s in fresh.list_sessions()} == {"kept"}
    assert all(MARK not in d.page_content for d in fresh.list_memories(limit=100))


def test_forget_by_ids_and_before_rewrite_the_log_too(tmp_path: Path, real_embeddings: Any) -> None:
    logs = tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=tmp_path / "a", user_id="ana", embeddings=real_embeddings, daily_log_dir=logs
    )
    memory.add_messages([{"role": "user", "content": f"Old secret {MARK}.", "id": "o1",
                          "timestamp": "2025-03-01T09:00:00Z"}], session_id="old")  # fmt: skip
    memory.add_messages([{"role": "user", "content": "ID-FORGET-ME-9", "id": "i1",
                          "timestamp": "2026-03-01T09:00:00Z"}], session_id="ids")  # fmt: skip
    memory.add_messages([{"role": "user", "content": f"New {OTHER}.", "id": "n1",
                          "timestamp": "2026-03-02T09:00:00Z"}], session_id="new")  # fmt: skip
    assert memory.forget(before="2026-01-01") == 1
    assert scan([logs], MARK) == []
    chunk = next(d.id for d in memory.list_memories(session_id="ids"))
    assert chunk is not None
    assert memory.forget(ids=[chunk]) == 1
    assert scan([logs], "ID-FORGET-ME-9") == []
    assert [m.id for m in read_daily_logs(logs)] == ["n1"]
    assert [p.name for p in (logs / "ana").iterdir()] == ["2026-03-02.md"], "emptied day files are deleted"


def test_forget_removes_cache_entries_derived_from_the_forgotten_session(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    cache = SemanticCache.local(path=tmp_path / "c", user_id="nobody", embeddings=real_embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage(f"It is {MARK}."), AIMessage(f"Bob: {OTHER}.")]))
    graph = create_session_rag_graph(model, memory, cache=cache, background_writes=False).compile()
    question = "What is the name of my first pet?"
    graph.invoke({"messages": [HumanMessage(question)]}, context={"user_id": "alice", "session_id": "s1"})
    graph.invoke({"messages": [HumanMessage(question)]}, context={"user_id": "bob", "session_id": "s1"})
    backend = cache._backend  # the entries as stored, served or not
    assert len(backend.get("user:alice", {})) == 1
    memory.forget(session_id="s1")
    assert backend.get("user:alice", {}) == [], "the entry is deleted, not only blocked"
    assert len(backend.get("user:bob", {})) == 1, "another user's entry is kept"


def _turn_with_pinned_marker(tmp_path: Path, real_embeddings: Any) -> tuple[SessionVectorMemory, Any]:
    from langchain_session_rag.graph import create_session_rag_graph as create

    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    memory.core.write("memory", f"Alice's door code is {MARK}.")
    model = GenericFakeChatModel(messages=iter([AIMessage("Hello."), AIMessage("Hi Bob.")]))
    return memory, create(model, memory, background_writes=False)


def test_purge_threads_erases_a_users_threads_from_a_sqlite_checkpointer(tmp_path: Path, real_embeddings: Any) -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_session_rag.graph import purge_threads

    _, graph = _turn_with_pinned_marker(tmp_path, real_embeddings)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    conn = sqlite3.connect(folder / "cp.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    app = graph.compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage("Hello there")]}, {"configurable": {"thread_id": "alice-1"}},
               context={"user_id": "alice", "session_id": "s1"})  # fmt: skip
    app.invoke({"messages": [HumanMessage(f"Bob says {OTHER}")]}, {"configurable": {"thread_id": "bob-1"}},
               context={"user_id": "bob", "session_id": "s1"})  # fmt: skip
    assert scan([folder], MARK), "default durability: the turn's intermediate checkpoints hold the pinned text"
    assert purge_threads(saver, ["alice-1"]) == 1
    assert scan([folder], MARK) == [], "neither the file nor its WAL holds it"
    assert saver.get_tuple({"configurable": {"thread_id": "alice-1"}}) is None
    assert saver.get_tuple({"configurable": {"thread_id": "bob-1"}}) is not None, "other threads are kept"
    assert scan([folder], OTHER)
    conn.close()


async def test_apurge_threads_erases_them_from_an_async_sqlite_checkpointer(
    tmp_path: Path, real_embeddings: Any
) -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from langchain_session_rag.graph import apurge_threads

    _, graph = _turn_with_pinned_marker(tmp_path, real_embeddings)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    async with aiosqlite.connect(folder / "cp.sqlite") as conn:
        saver = AsyncSqliteSaver(conn)
        app = graph.compile(checkpointer=saver)
        await app.ainvoke({"messages": [HumanMessage("Hello there")]}, {"configurable": {"thread_id": "alice-1"}},
                          context={"user_id": "alice", "session_id": "s1"})  # fmt: skip
        assert scan([folder], MARK)
        assert await apurge_threads(saver, ["alice-1"]) == 1
        assert scan([folder], MARK) == []
        assert await saver.aget_tuple({"configurable": {"thread_id": "alice-1"}}) is None


def test_compact_covers_a_cache_it_is_given_and_links_it(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    cache = SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=real_embeddings)
    assert cache.update("What is my vault code?", f"It is {MARK}.")
    cache.clear()
    assert scan([tmp_path / "c"], MARK)
    memory.compact(caches=[cache])
    assert scan([tmp_path / "c"], MARK) == []
    assert cache.update("What is my gym locker number?", f"It is {OTHER}.")
    memory.forget_all()
    assert cache._backend.get("user:alice", {}) == [], "given once, the cache follows the memory's forgetting"


def test_compact_covers_an_unlinked_cache_in_the_memorys_folder(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    memory.add_messages([{"role": "user", "content": f"Keep {OTHER} please."}], session_id="s1")
    cache = SemanticCache.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    assert cache.update("What is my vault code?", f"It is {MARK}.")
    cache.clear()
    assert scan([tmp_path / "m"], MARK)
    memory.compact()
    assert scan([tmp_path / "m"], MARK) == []
    assert cache.update("What is my vault code?", "Forgotten.")
    assert cache.lookup("What is my vault code?") == "Forgotten.", "the cache works after its rebuild"
    assert memory.count() == 1
