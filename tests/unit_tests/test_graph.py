"""The session-RAG graph with deterministic fake models (plumbing) and the real embedded memory."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.errors import InvalidRequestError
from langchain_session_rag.graph import Node, SessionRAGState, create_session_rag_graph
from langchain_session_rag.memory import RuntimeSettings
from tests.scripted_models import RecordingModel

SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"


@pytest.fixture
def memory(tmp_path: Path, real_embeddings) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "m", user_id="nobody", embeddings=real_embeddings)


def ctx(user: str = "alice", session: str = "s1") -> dict[str, str]:
    return {"user_id": user, "session_id": session}


def test_a_fact_from_session_one_reaches_the_prompt_of_session_two(memory: SessionVectorMemory) -> None:
    model = RecordingModel(["Noted, your cat is Pixel.", "Your cat is called Pixel.", "I do not know."])
    graph = create_session_rag_graph(model, memory).compile()
    graph.invoke({"messages": [HumanMessage("My cat is called Pixel and she is 3 years old.")]}, context=ctx())
    out = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, context=ctx(session="s2"))
    prompt_text = "\n".join(m.text for m in model.prompts[1])
    assert "My cat is called Pixel" in prompt_text
    assert f"{out['memories'][0].metadata['marker']}\n> User: My cat is called Pixel" in prompt_text
    assert out["memories"][0].metadata["marker"].startswith("[S: ")
    stranger = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, context=ctx("bob", "s9"))
    assert stranger["memories"] == []
    assert "Pixel" not in "\n".join(m.text for m in model.prompts[2])


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "No messages"),
        ([HumanMessage("hi"), AIMessage("hello")], "must be a user turn"),
        ([HumanMessage(" \u200b\u2060\u00ad ")], "is empty"),  # only characters that draw nothing
    ],
)
def test_invalid_turns_fail_before_any_model_call(memory: SessionVectorMemory, messages, fragment: str) -> None:
    model = RecordingModel([])
    graph = create_session_rag_graph(model, memory).compile()
    with pytest.raises(InvalidRequestError, match=fragment):
        graph.invoke({"messages": messages}, context=ctx())
    with pytest.raises(InvalidRequestError, match="user_id"):
        graph.invoke({"messages": [HumanMessage("hi")]}, context={"session_id": "s"})  # type: ignore[arg-type]
    assert model.prompts == []


def test_graph_shape_snapshot(memory: SessionVectorMemory) -> None:
    graph = create_session_rag_graph(RecordingModel([]), memory).compile()
    assert graph.get_graph().draw_mermaid() == SNAPSHOT.read_text(encoding="utf-8")


def test_cache_hit_ends_the_turn_without_a_model_call(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="nobody", embeddings=memory.embeddings)
    model = RecordingModel(["Use PersistentClient(path=...).", "An answer for Bob."])
    graph = create_session_rag_graph(model, memory, cache=cache).compile()
    first = graph.invoke({"messages": [HumanMessage("How do I persist a Chroma collection?")]}, context=ctx())
    assert first["cache"] == {"hit": False, "reason": "empty"}
    second = graph.invoke({"messages": [HumanMessage("How can I persist a Chroma collection?")]}, context=ctx())
    assert second["cache"]["hit"] is True
    assert second["messages"][-1].text == "Use PersistentClient(path=...)."
    assert len(model.prompts) == 1
    other = graph.invoke({"messages": [HumanMessage("How can I persist a Chroma collection?")]},
                         context=ctx("bob"))  # fmt: skip
    assert other["cache"]["hit"] is False, "no sharing across users"
    assert other["messages"][-1].text == "An answer for Bob."
    assert cache.stats.hits == 1, "the caller's cache object counts the graph's lookups"
    assert cache.stats.misses["empty"] == 2


def test_window_and_checkpoint_stay_bounded_over_60_turns(memory: SessionVectorMemory) -> None:
    """Fifteen times the window's four turns: the window and the checkpoint stop growing, the memory keeps all."""
    model = GenericFakeChatModel(messages=iter([AIMessage(f"answer {i}") for i in range(60)]))
    saver = InMemorySaver()
    graph = create_session_rag_graph(model, memory, window_turns=4).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    sizes = {}
    for turn in range(60):
        state = graph.invoke({"messages": [HumanMessage(f"question number {turn} about topic {turn % 7}")]},
                             config, context=ctx())  # fmt: skip
        if turn in (12, 59):
            checkpoint = saver.get_tuple(config)
            assert checkpoint is not None
            sizes[turn] = len(pickle.dumps(checkpoint.checkpoint["channel_values"]))
    assert len(state["messages"]) <= 2 * 4
    assert sizes[59] <= sizes[12] + 200  # measured: 6,219 B at turn 12, 6,227 at 59 (a leak of 5 B a turn shows)
    assert memory.for_user("alice").count() == 60, "every turn went to the vector memory"


def test_sqlite_checkpointer(tmp_path: Path, memory: SessionVectorMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("one"), AIMessage("two")]))
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        graph = create_session_rag_graph(model, memory).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("first")]}, config, context=ctx())
        out = graph.invoke({"messages": [HumanMessage("second")]}, config, context=ctx())
    assert [m.text for m in out["messages"]] == ["first", "one", "second", "two"]


async def test_async_and_token_streaming(memory: SessionVectorMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("streamed answer here")]))
    graph = create_session_rag_graph(model, memory).compile()
    chunks = []
    async for message, meta in graph.astream(
        {"messages": [HumanMessage("Tell me something")]}, context=ctx(), stream_mode="messages"
    ):
        if meta["langgraph_node"] == Node.CALL_MODEL:
            chunks.append(message.text)
    assert len(chunks) > 1
    assert "".join(chunks) == "streamed answer here"
    assert [d.metadata["message_ids"][0] for d in memory.for_user("alice").invoke("Tell me something", k=1)]


async def test_async_invoke_stores_the_exchange(memory: SessionVectorMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("The answer is 42.")]))
    graph = create_session_rag_graph(model, memory).compile()
    state: SessionRAGState = await graph.ainvoke({"messages": [HumanMessage("What is the answer?")]}, context=ctx())
    assert state["llm_calls"] == 1
    docs = await memory.for_user("alice").ainvoke("the answer", k=1)
    assert docs[0].page_content == "User: What is the answer?\nAssistant: The answer is 42."


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model that accepts ``bind_tools`` (it replays scripted tool calls and answers)."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - reset per instance below

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_memory_around_a_tool_calling_agent(memory: SessionVectorMemory) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from langchain_session_rag.graph import create_memory_agent_graph

    calls: list[str] = []

    @tool
    def book_table(restaurant: str) -> str:
        """Book a table at a restaurant."""
        calls.append(restaurant)
        return f"Booked {restaurant}."

    model = ToolCallingFake(messages=iter([
        AIMessage("", tool_calls=[{"name": "book_table", "args": {"restaurant": "Chez Anna"}, "id": "c1"}]),
        AIMessage("Your table at Chez Anna is booked."),
        AIMessage("You booked Chez Anna."),
    ]))  # fmt: skip
    model.seen = []
    graph = create_memory_agent_graph(create_agent(model, [book_table]), memory).compile()
    first = graph.invoke({"messages": [HumanMessage("Book me a table at Chez Anna.")]}, context=ctx())
    assert calls == ["Chez Anna"]
    assert [m.type for m in first["messages"]] == ["human", "ai", "tool", "ai"]
    assert first["messages"][-1].text == "Your table at Chez Anna is booked."
    graph.invoke({"messages": [HumanMessage("Which restaurant did I book?")]}, context=ctx(session="s2"))
    prompt = "\n".join(m.text for m in model.seen[-1])
    assert "> User: Book me a table at Chez Anna." in prompt
    assert "> Assistant: Your table at Chez Anna is booked." in prompt


def test_end_of_session_consolidation_helper(memory: SessionVectorMemory) -> None:
    from langchain_session_rag.graph import end_session

    answers = ["Install it with pip.", "Check sys.executable.", "Build an image and run it."]
    graph = create_session_rag_graph(GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers])), memory)
    app = graph.compile()
    for question in ["How do I fix ModuleNotFoundError for requests in Python?",
                     "Python still raises ModuleNotFoundError for requests after pip install.",
                     "How do I deploy the web app to production on a server?"]:  # fmt: skip
        app.invoke({"messages": [HumanMessage(question)]}, context=ctx())
    assert memory.for_user("alice").count() == 3
    assert end_session(memory, user_id="alice", session_id="s1").exchanges == 3
    after = memory.for_user("alice")
    docs = after.invoke("python", k=10)
    assert all(d.metadata["chunking"] == "topic" for d in docs)
    covered = [m for d in docs for m in d.metadata["message_ids"]]
    assert len(covered) == len(set(covered)) == 6, "every message of the 3 turns covered exactly once"
    assert end_session(memory, user_id="alice", session_id="s1").exchanges == 0, "idempotent"


def test_retrieval_applies_the_relevance_threshold(memory: SessionVectorMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("ok"), AIMessage("ok"), AIMessage("ok")]))
    app = create_session_rag_graph(model, memory, score_threshold=0.99).compile()
    app.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, context=ctx())
    strict = app.invoke({"messages": [HumanMessage("Tell me about sourdough bread.")]}, context=ctx(session="s2"))
    assert strict["memories"] == []
    loose = create_session_rag_graph(model, memory, score_threshold=0.0).compile()
    assert loose.invoke({"messages": [HumanMessage("Tell me about my cat.")]}, context=ctx(session="s3"))["memories"]


def test_cached_answers_follow_the_memories_behind_them(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="nobody", embeddings=memory.embeddings)
    model = RecordingModel(["Noted.", "Your cat is Pixel.", "I do not know your cat's name."])
    graph = create_session_rag_graph(model, memory, cache=cache).compile()
    graph.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, context=ctx(session="s1"))
    first = graph.invoke({"messages": [HumanMessage("What is the name of my cat?")]}, context=ctx(session="s2"))
    assert first["memories"], "the answer was built on a stored memory"
    again = graph.invoke({"messages": [HumanMessage("What is the name of my cat?")]}, context=ctx(session="s3"))
    assert again["cache"]["hit"] is True
    memory.for_user("alice").forget(session_id="s1")  # the knowledge behind the cached answer changes
    after = graph.invoke({"messages": [HumanMessage("What is the name of my cat?")]}, context=ctx(session="s4"))
    assert after["cache"] == {"hit": False, "reason": "empty"}, "the entry drawn on s1 is deleted, not only blocked"
    assert after["messages"][-1].text == "I do not know your cat's name."


@pytest.mark.parametrize("background", [True, False])
def test_the_store_write_is_awaited_only_when_asked(tmp_path: Path, real_embeddings, background: bool) -> None:
    lingering = RuntimeSettings(write_linger=30)  # a background write waits for company far longer than this test
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="nobody", embeddings=real_embeddings, runtime=lingering
    )
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted."), AIMessage("Pixel.")]))
    graph = create_session_rag_graph(model, memory, background_writes=background).compile()
    graph.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, context=ctx())
    in_store = memory.backend.all_ids("alice")  # what another process would see now
    assert len(in_store) == (0 if background else 1)
    out = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, context=ctx(session="s2"))
    assert "Pixel" in out["memories"][0].page_content, "this process retrieves it either way"
    memory.flush()
    assert len(memory.backend.all_ids("alice")) == 2


def test_the_relations_of_the_questions_entities_reach_the_prompt(memory: SessionVectorMemory) -> None:
    alice = memory.for_user("alice")
    alice.add_messages([{"role": "user", "content": "We moved the analytics service from Postgres to ClickHouse.",
                         "timestamp": "2026-03-09T10:00:00"}], session_id="old")  # fmt: skip
    model = RecordingModel(["ClickHouse, before that PostgreSQL.", "I do not know."])
    graph = create_session_rag_graph(model, memory).compile()
    question = HumanMessage("What does the analytics service use now, and what did it use before?")
    out = graph.invoke({"messages": [question]}, context=ctx())
    line = "analytics service — uses → ClickHouse [S: 2026-03-09] (before: PostgreSQL until 2026-03-09)"
    assert out["relations"] == [line]
    assert f"[R: relations from memory, with the markers of their sessions]\n> {line}" in model.prompts[0][-1].text
    assert out["budget_report"]["sections"]["relations"]["kept"] == 1
    graph.invoke({"messages": [question]}, context=ctx("bob", "s9"))
    assert "ClickHouse" not in model.prompts[1][-1].text
