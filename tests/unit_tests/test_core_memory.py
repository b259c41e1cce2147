"""Pinned core memory: blocks with limits, versions and undo, markdown files, the graph's every prompt, the agent
tool and end-of-session curation. Real embedded Chroma and embeddings; scripted chat models (plumbing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory, TokenBudget, create_core_memory_tool
from langchain_session_rag.agents import curate_core_memory
from langchain_session_rag.errors import (
    BudgetExceededError,
    CoreMemoryFullError,
    InvalidArgumentError,
    UnsupportedOperationError,
)
from langchain_session_rag.graph import create_session_rag_graph

PIN = "- My name is Ana, I prefer metric units."


class Recording(GenericFakeChatModel):
    prompts: list[str] = []  # noqa: RUF012 - reset per instance

    def __init__(self, answers: list[str]) -> None:
        super().__init__(messages=iter([AIMessage(a) for a in answers]))
        self.prompts = []

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.prompts.append("\n".join(m.text for m in messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "m", user_id="ana", embeddings=real_embeddings)


def test_pinned_once_seen_in_every_prompt_edited_by_a_tool_undone_and_exported(
    memory: SessionVectorMemory, tmp_path: Path
) -> None:
    memory.core.append("memory", PIN)
    model = Recording(["Hi Ana.", "20 °C.", "Noted.", "Sure."])
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    for session, question in [("s1", "Hello!"), ("s2", "How warm is it in Porto?")]:
        graph.invoke(
            {"messages": [HumanMessage(question)]}, {"configurable": {"user_id": "ana", "session_id": session}}
        )
    assert all(PIN in prompt for prompt in model.prompts)

    tool = create_core_memory_tool(memory, agent_edits="pin")  # the application chose to pin a model's edits
    call = {"name": tool.name, "type": "tool_call", "id": "1",
            "args": {"action": "replace", "block": "memory", "old": PIN, "text": "- My name is Ana; metric units."}}  # fmt: skip
    out = tool.invoke(call, {"configurable": {"user_id": "ana"}})
    assert "version 2" in out.text
    graph.invoke(
        {"messages": [HumanMessage("And tomorrow?")]}, {"configurable": {"user_id": "ana", "session_id": "s3"}}
    )
    assert "- My name is Ana; metric units." in model.prompts[-1]
    assert PIN not in model.prompts[-1]

    memory.core.undo("memory")
    assert memory.core.read("memory") == PIN
    assert [(v.action, v.author) for v in memory.core.history("memory")] == [
        ("append", "user"),
        ("replace", "agent"),
        ("undo", "user"),
    ]
    files = memory.core.export_markdown(tmp_path / "md")
    assert [f.name for f in files] == ["NOW.md", "MEMORY.md"]
    assert (tmp_path / "md" / "MEMORY.md").read_text() == PIN + "\n"
    graph.invoke({"messages": [HumanMessage("Thanks")]}, {"configurable": {"user_id": "ana", "session_id": "s4"}})
    assert PIN in model.prompts[-1]


def test_limits_are_enforced_at_write_time_and_nothing_changes(memory: SessionVectorMemory) -> None:
    core = memory.core
    core.write("now", "Shipping the billing API.")
    with pytest.raises(CoreMemoryFullError, match="limit of 300"):
        core.write("now", "word " * 400)
    with pytest.raises(CoreMemoryFullError):
        core.append("now", "word " * 400)
    assert core.read("now") == "Shipping the billing API."
    assert len(core.history("now")) == 1
    with pytest.raises(InvalidArgumentError, match="Unknown core memory block"):
        core.write("secrets", "x")
    with pytest.raises(InvalidArgumentError, match="no line or heading"):
        core.remove("now", "nope")


def test_sections_are_removed_whole_and_undo_can_be_undone(memory: SessionVectorMemory) -> None:
    core = memory.core
    core.write("memory", "# Ana\n- metric units\n## Projects\n- billing API\n- the shop\n## Pets\n- cat Pixel")
    core.remove("memory", "Projects")
    assert core.read("memory") == "# Ana\n- metric units\n## Pets\n- cat Pixel"
    core.undo("memory")
    assert "billing API" in core.read("memory")
    core.undo("memory")
    assert "billing API" not in core.read("memory")


def test_core_memory_is_per_user_shared_by_objects_and_erased_by_forget_all(
    memory: SessionVectorMemory, tmp_path: Path, real_embeddings: Any
) -> None:
    memory.core.append("memory", PIN)
    memory.for_user("bob").core.append("memory", "- Bob likes imperial units.")
    other = SessionVectorMemory.local(path=tmp_path / "m", user_id="ana", embeddings=real_embeddings)
    assert other.core.read("memory") == PIN
    assert "Bob" not in memory.core.render()
    tool = create_core_memory_tool(memory.model_copy(update={"user_from_run": True}), agent_edits="pin")
    call = {"name": tool.name, "type": "tool_call", "id": "1", "args": {"action": "append", "text": "- Bob was here."}}
    tool.invoke(call, {"configurable": {"user_id": "bob"}})
    assert "Bob was here" not in memory.core.read("memory")
    assert memory.forget_all() == 0  # no conversation chunks; the core memory goes too (not counted)
    assert memory.core.blocks() == {"now": "", "memory": ""}
    assert memory.core.history("memory") == []
    assert "Bob was here" in memory.for_user("bob").core.read("memory")


def test_markdown_import_is_checked_whole_first(memory: SessionVectorMemory, tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "NOW.md").write_text("Planning the Lisbon offsite.\n")
    (folder / "MEMORY.md").write_text("word " * 900)
    with pytest.raises(CoreMemoryFullError):
        memory.core.import_markdown(folder)
    assert memory.core.blocks() == {"now": "", "memory": ""}
    (folder / "MEMORY.md").write_text(PIN + "\n")
    versions = memory.core.import_markdown(folder)
    assert [(v.block, v.action) for v in versions] == [("now", "import"), ("memory", "import")]
    assert memory.core.read("now") == "Planning the Lisbon offsite."


def test_core_memory_that_does_not_fit_the_budget_is_an_error_not_a_cut(memory: SessionVectorMemory) -> None:
    memory.core.write("memory", "- fact " * 100)
    graph = create_session_rag_graph(
        Recording(["x"]), memory, budget=TokenBudget(context_window=1536, reserve_for_answer=512)
    ).compile()
    with pytest.raises(BudgetExceededError, match="never truncated"):
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "ana", "session_id": "s"}})


def test_curation_applies_only_approved_edits_with_bounded_calls(memory: SessionVectorMemory) -> None:
    session = [HumanMessage("I moved to Porto last week, and I prefer metric units."), AIMessage("Noted!")]
    proposal = (
        'Here: [{"action": "append", "block": "memory", "text": "- Lives in Porto."},'
        ' {"action": "append", "block": "now", "text": "- Settling in Porto."},'
        ' {"action": "append", "block": "secrets", "text": "x"}]'
    )
    proposed = curate_core_memory(memory, Recording([proposal]), session)
    assert [e.text for e in proposed.proposed] == ["- Lives in Porto.", "- Settling in Porto."]
    assert proposed.applied == []
    assert memory.core.blocks() == {"now": "", "memory": ""}

    chosen = curate_core_memory(memory, Recording([proposal]), session, approve=lambda e: e.block == "memory")
    assert [e.text for e in chosen.applied] == ["- Lives in Porto."]
    assert memory.core.read("memory") == "- Lives in Porto."
    assert memory.core.history("memory")[-1].author == "curator"

    garbage = Recording(["I think you should remember Porto.", "Still no JSON.", "never asked"])
    bounded = curate_core_memory(memory, garbage, session, auto_apply=True, max_calls=2)
    assert (bounded.model_calls, bounded.proposed) == (2, [])


def test_stores_without_core_memory_say_so(real_embeddings: Any) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    memory = SessionVectorMemory(vectorstore=InMemoryVectorStore(real_embeddings), user_id="ana")
    with pytest.raises(UnsupportedOperationError, match="Chroma"):
        _ = memory.core
    graph = create_session_rag_graph(Recording(["Hi."]), memory).compile()
    out = graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "ana", "session_id": "s"}})
    assert out["core_memory"] == ""


async def test_async_edits_and_graph(memory: SessionVectorMemory) -> None:
    await memory.core.aappend("memory", PIN)
    assert await memory.core.aread("memory") == PIN
    model = Recording(["Hi Ana."])
    graph = create_session_rag_graph(model, memory).compile()
    await graph.ainvoke({"messages": [HumanMessage("Hello")]}, {"configurable": {"user_id": "ana", "session_id": "s"}})
    assert PIN in model.prompts[0]
    await memory.core.aundo("memory")
    assert await memory.core.arender() == ""


# -- found by review ------------------------------------------------------------------------------
def test_concurrent_appends_lose_nothing(memory: SessionVectorMemory) -> None:
    from concurrent.futures import ThreadPoolExecutor

    core = memory.model_copy(update={"core_limits": {"now": 300, "memory": 5000}}).core
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: core.append("memory", f"- line {i}"), range(20)))
    assert sorted(core.read("memory").split("\n")) == sorted(f"- line {i}" for i in range(20))
    assert len(core.history("memory")) == 20


def test_remove_respects_code_fences_and_refuses_bad_targets(memory: SessionVectorMemory) -> None:
    core = memory.core
    core.write("memory", "## Setup\n```bash\n# install\npip install x\n```\n## Pets\n- cat Pixel")
    core.remove("memory", "Pets")
    assert core.read("memory") == "## Setup\n```bash\n# install\npip install x\n```"
    for bad in ("", "   "):
        with pytest.raises(InvalidArgumentError):
            core.remove("memory", bad)
    with pytest.raises(InvalidArgumentError):
        core.append("memory", None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        core.remove("memory", None)  # type: ignore[arg-type]
    core.write("now", "line one\r\nline two\r\n")
    assert core.read("now") == "line one\nline two"


def test_invalid_core_limits_are_refused_at_construction(tmp_path: Path, real_embeddings: Any) -> None:
    from pydantic import ValidationError

    for limits in ({}, {"now": 0}, {"not a name": 10}):
        with pytest.raises(ValidationError):
            SessionVectorMemory.local(path=tmp_path / "x", user_id="a", embeddings=real_embeddings, core_limits=limits)


def test_compact_in_another_process_erases_forgotten_core_text(tmp_path: Path) -> None:
    """A child writes core memory and forgets everything; this process, which never held the text, compacts."""
    import subprocess
    import sys

    folder = tmp_path / "store"
    code = (
        "from langchain_session_rag import SessionVectorMemory\n"
        f"m = SessionVectorMemory.local(path={str(folder)!r}, user_id='ana')\n"
        "m.core.write('memory', '- SECRETZETA lives here')\n"
        "m.forget_all()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)
    assert [p for p in folder.rglob("*") if p.is_file() and b"secretzeta" in p.read_bytes().lower()], "written"
    SessionVectorMemory.local(path=folder, user_id="ana").compact()
    leftovers = [p for p in folder.rglob("*") if p.is_file() and b"secretzeta" in p.read_bytes().lower()]
    assert leftovers == []


def test_curation_never_rewrites_a_whole_block_and_asks_before_applying(memory: SessionVectorMemory) -> None:
    memory.core.write("memory", "- Ana prefers metric units.\n- Ana lives in Lisbon.")
    proposal = (
        'Sure. [{"action": "replace", "block": "memory", "text": "- wiped"},'
        ' {"action": "replace", "block": "memory", "old": 5, "text": "- wiped"},'
        ' {"action": "replace", "block": "memory", "old": "- Ana lives in Lisbon.", "text": "- Ana lives in Porto."}]'
        " and also [1]"
    )
    asked: list[str] = []

    def approve(edit: Any) -> bool:
        asked.append(edit.text)
        return True

    result = curate_core_memory(memory, Recording([proposal]), [HumanMessage("I moved to Porto.")], approve=approve)
    assert [e.text for e in result.proposed] == ["- Ana lives in Porto."]
    assert memory.core.read("memory") == "- Ana prefers metric units.\n- Ana lives in Porto."

    def broken(_: Any) -> bool:
        raise ZeroDivisionError

    two = '[{"action": "append", "block": "memory", "text": "- a"}, {"action": "append", "block": "now", "text": "b"}]'
    with pytest.raises(ZeroDivisionError):
        curate_core_memory(memory, Recording([two]), [], approve=broken)
    assert memory.core.read("memory") == "- Ana prefers metric units.\n- Ana lives in Porto."


def test_the_prompt_keeps_no_core_memory_in_the_state_after_the_turn(memory: SessionVectorMemory) -> None:
    memory.core.append("memory", PIN)
    graph = create_session_rag_graph(Recording(["Hi."]), memory).compile()
    out = graph.invoke({"messages": [HumanMessage("Hello")]}, {"configurable": {"user_id": "ana", "session_id": "s"}})
    assert out["core_memory"] == ""


def test_replace_through_the_tool_keeps_concurrent_appends(memory: SessionVectorMemory) -> None:
    from concurrent.futures import ThreadPoolExecutor

    core = memory.model_copy(update={"core_limits": {"now": 300, "memory": 5000}}).core
    core.write("memory", "- status: draft")
    tool = create_core_memory_tool(
        memory.model_copy(update={"core_limits": {"now": 300, "memory": 5000}}), agent_edits="pin"
    )

    def flip(i: int) -> None:
        old, new = ("- status: draft", "- status: final") if i % 2 == 0 else ("- status: final", "- status: draft")
        call = {"name": tool.name, "type": "tool_call", "id": str(i),
                "args": {"action": "replace", "old": old, "text": new}}  # fmt: skip
        tool.invoke(call, {"configurable": {"user_id": "ana"}})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: core.append("memory", f"- line {i}"), range(15)))
        list(pool.map(flip, range(6)))
    lines = core.read("memory").split("\n")
    assert sorted(line for line in lines if line.startswith("- line")) == sorted(f"- line {i}" for i in range(15))


def test_curation_finds_the_edit_list_after_a_stray_bracket(memory: SessionVectorMemory) -> None:
    answer = 'I found [2] edits: [{"action": "append", "block": "memory", "text": "- Lives in Porto."}]'
    result = curate_core_memory(
        memory, Recording([answer]), [HumanMessage("I moved to Porto.")], auto_apply=True, agent_edits="pin"
    )
    assert [e.text for e in result.applied] == ["- Lives in Porto."]


def test_a_cache_hit_turn_leaves_no_core_memory_in_the_state(memory: SessionVectorMemory, tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_session_rag import SemanticCache

    memory.core.append("memory", "- PINNEDSECRET")
    cache = SemanticCache.local(path=tmp_path / "cache", user_id="ana", embeddings=memory.embeddings)
    graph = create_session_rag_graph(Recording(["Blue.", "x"]), memory, cache=cache, background_writes=False)
    app = graph.compile(checkpointer=InMemorySaver())
    for thread in ("t1", "t2"):
        config = {"configurable": {"user_id": "ana", "session_id": thread, "thread_id": thread}}
        out = app.invoke({"messages": [HumanMessage("What colour is the sky on a clear day?")]}, config)
    assert out["cache"]["hit"] is True
    state = app.get_state({"configurable": {"thread_id": "t2"}}).values
    assert state["core_memory"] == ""


def test_boolean_core_limits_are_refused(tmp_path: Path, real_embeddings: Any) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        SessionVectorMemory.local(
            path=tmp_path / "x", user_id="a", embeddings=real_embeddings, core_limits={"now": True}
        )
