"""The memory tools called by a real model: SmolLM2-135M through llama.cpp's grammar-constrained tool calling.

The model's arguments are whatever it produced (a 135M model rarely asks a sensible query); what is tested is that
a real model's tool call goes through LangGraph's ``ToolNode`` and reaches the run's user only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_session_rag import SessionVectorMemory, create_manage_memory_tool, create_search_memory_tool
from langchain_session_rag.models.local_llm import LocalChatModel


def test_a_real_models_tool_calls_reach_the_run_user_only(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings, user_from_run=True)
    memory.for_user("alice").add_messages(
        [{"role": "user", "content": "We deploy to Fly.io, region ams."}, {"role": "assistant", "content": "Noted."}],
        session_id="s1",
    )
    memory.for_user("bob").add_messages(
        [{"role": "user", "content": "We deploy to Heroku, region eu."}, {"role": "assistant", "content": "Noted."}],
        session_id="b1",
    )
    search, manage = create_search_memory_tool(memory), create_manage_memory_tool(memory, actions=("create",))
    for tool in (search, manage):
        model = LocalChatModel(max_tokens=64).bind_tools([tool], tool_choice=tool.name)
        graph = (
            StateGraph(MessagesState)
            .add_node("model", lambda state, m=model: {"messages": [m.invoke(state["messages"])]})
            .add_node("tools", ToolNode([tool]))
            .add_edge(START, "model")
            .add_edge("model", "tools")
            .add_edge("tools", END)
            .compile()
        )
        out = graph.invoke(
            {"messages": [HumanMessage("Where do we deploy? Use your memory tool.")]},
            {"configurable": {"user_id": "alice", "session_id": "s2"}},
        )
        call, result = out["messages"][1], out["messages"][2]
        assert isinstance(call, AIMessage)
        assert [c["name"] for c in call.tool_calls] == [tool.name]
        assert isinstance(result, ToolMessage)
        assert "Heroku" not in result.text
        if tool is search and result.status == "success":
            assert "Fly.io" in result.text
    assert all(d.metadata["user_id"] == "bob" for d in memory.for_user("bob").list_memories())
    assert [d.metadata["source_type"] for d in memory.for_user("bob").list_memories()] == ["session"]


def test_a_prompt_over_the_window_is_a_typed_error_when_invoked_or_streamed() -> None:
    import pytest

    from langchain_session_rag.errors import BudgetExceededError

    model = LocalChatModel(n_ctx=256, max_tokens=8)
    prompt = "Tell me about the weather in Porto in spring. " * 80
    with pytest.raises(BudgetExceededError, match="n_ctx"):
        model.invoke(prompt)
    with pytest.raises(BudgetExceededError, match="n_ctx"):
        list(model.stream(prompt))
    assert [c.text for c in model.stream("Say hi")]  # short prompts still stream token by token


def test_curation_with_a_real_model_is_bounded_and_changes_nothing_unapproved(
    tmp_path: Path, real_embeddings: Any
) -> None:
    from langchain_session_rag.agents import curate_core_memory

    memory = SessionVectorMemory.local(path=tmp_path, user_id="ana", embeddings=real_embeddings)
    memory.core.write("memory", "- Ana prefers metric units.")
    session = [HumanMessage("I moved to Porto last week."), AIMessage("Welcome to Porto!")]
    result = curate_core_memory(memory, LocalChatModel(max_tokens=96), session, max_calls=2)
    assert 1 <= result.model_calls <= 2
    assert result.applied == []
    assert memory.core.read("memory") == "- Ana prefers metric units."
    assert len(memory.core.history("memory")) == 1


def test_tool_choice_any_of_several_auto_and_a_call_cut_short() -> None:
    """``any`` makes the model call one of the tools (its pick); ``auto`` lets it answer in words instead."""
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return city

    @tool
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    question = "What is the weather in Porto?"
    forced = LocalChatModel(max_tokens=64).bind_tools([get_weather, add], tool_choice="any").invoke(question)
    assert len(forced.tool_calls) == 1
    assert forced.tool_calls[0]["name"] in {"get_weather", "add"}
    schema = {"get_weather": {"city": str}, "add": {"a": int, "b": int}}[forced.tool_calls[0]["name"]]
    assert {k: type(v) for k, v in forced.tool_calls[0]["args"].items()} == schema
    assert forced.usage_metadata is not None
    assert forced.usage_metadata["output_tokens"] > 0
    auto = LocalChatModel(max_tokens=64).bind_tools([get_weather, add]).invoke(question)
    assert isinstance(auto, AIMessage)
    assert bool(auto.tool_calls) != bool(auto.text)  # a call or words, never both, never neither
    short = LocalChatModel(max_tokens=3).bind_tools([get_weather], tool_choice="get_weather")
    cut = short.invoke(question)
    assert cut.tool_calls == []
    assert [c["error"] for c in cut.invalid_tool_calls] == [
        "The answer stopped before its JSON was complete; raise max_tokens."
    ]
    streamed = [c for c in short.stream(question) if c.tool_call_chunks]
    assert len(streamed) == 1
    assert streamed[0].tool_calls == []
    assert [c["args"] for c in streamed[0].invalid_tool_calls] == [cut.invalid_tool_calls[0]["args"]]
