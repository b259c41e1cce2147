"""Agent-native memory: the memory tools, users taken from the run's config or context, listing.

Real embedded Chroma and the real embedding model; the agent's chat model is a scripted tool-calling fake
(plumbing: which tool call reaches which user's memories does not depend on the model's quality).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from langchain_session_rag import (
    SessionVectorMemory,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langchain_session_rag.errors import IdentityConflictError, InvalidArgumentError, InvalidRequestError

ALICE = [
    {"role": "user", "content": "We deploy the shop to Fly.io in the ams region.", "timestamp": "2026-02-06T10:00"},
    {"role": "assistant", "content": "Noted: the shop deploys to Fly.io, region ams."},
]
BOB = [
    {
        "role": "user",
        "content": "My bank PIN hint is the deploy region of my shop: Heroku eu.",
        "timestamp": "2026-03-01",
    },
    {"role": "assistant", "content": "Noted: your shop deploys to Heroku in eu."},
]


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    alice = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    alice.add_messages(ALICE, session_id="s1")
    alice.for_user("bob").add_messages(BOB, session_id="b1")
    return alice


def alice_config(**extra: str) -> dict[str, Any]:
    return {"configurable": {"user_id": "alice", **extra}}


# -- the retriever and the run's user ------------------------------------------------------------
def test_a_config_naming_another_user_is_refused_not_ignored(memory: SessionVectorMemory) -> None:
    with pytest.raises(IdentityConflictError, match="bob"):
        memory.invoke("where do we deploy?", config={"configurable": {"user_id": "bob"}})
    with pytest.raises(IdentityConflictError):
        memory.with_config(configurable={"user_id": "bob"}).invoke("where do we deploy?")
    docs = memory.invoke("where do we deploy?", config=alice_config())
    assert docs
    assert {d.metadata["user_id"] for d in docs} == {"alice"}


async def test_user_from_run_serves_the_run_user_and_refuses_a_run_without_one(memory: SessionVectorMemory) -> None:
    per_run = memory.model_copy(update={"user_from_run": True})
    bob_docs = per_run.invoke("where does the shop deploy?", config={"configurable": {"user_id": "bob"}})
    assert bob_docs
    assert {d.metadata["user_id"] for d in bob_docs} == {"bob"}
    alice_docs = await per_run.ainvoke("where does the shop deploy?", config=alice_config())
    assert {d.metadata["user_id"] for d in alice_docs} == {"alice"}
    with pytest.raises(InvalidArgumentError, match="needs a user"):
        per_run.invoke("where does the shop deploy?")


def test_lcel_chain_with_users_from_config(memory: SessionVectorMemory) -> None:
    per_run = memory.model_copy(update={"user_from_run": True})
    prompt = ChatPromptTemplate.from_messages([("system", "Memories:\n{context}"), ("human", "{question}")])
    chain = (
        {"context": per_run | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs)),
         "question": RunnablePassthrough()}
        | prompt
    )  # fmt: skip
    alice_prompt = chain.invoke("where does the shop deploy?", config=alice_config()).to_string()
    bob_prompt = chain.invoke("where does the shop deploy?", config={"configurable": {"user_id": "bob"}}).to_string()
    assert "Fly.io" in alice_prompt
    assert "Heroku" not in alice_prompt
    assert "Heroku" in bob_prompt
    assert "Fly.io" not in bob_prompt


def test_a_langgraph_run_for_bob_cannot_read_alice_through_her_bound_memory(memory: SessionVectorMemory) -> None:
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        question: str
        found: list[str]

    def node(state: State) -> dict[str, Any]:
        return {"found": [d.page_content for d in memory.invoke(state["question"])]}

    graph = StateGraph(State).add_node("read", node).add_edge(START, "read").compile()
    with pytest.raises(IdentityConflictError):
        graph.invoke({"question": "where do we deploy?", "found": []}, context={"user_id": "bob"})
    with pytest.raises(IdentityConflictError):
        graph.invoke({"question": "where do we deploy?", "found": []}, {"configurable": {"user_id": "bob"}})
    out = graph.invoke({"question": "where do we deploy?", "found": []}, context={"user_id": "alice"})
    assert any("Fly.io" in text for text in out["found"])


# -- the search tool -----------------------------------------------------------------------------
def test_search_tool_returns_markers_dates_sessions_scores_and_ids(memory: SessionVectorMemory) -> None:
    tool = create_search_memory_tool(memory.model_copy(update={"user_from_run": True}))
    assert set(tool.tool_call_schema.model_json_schema()["properties"]) == {"query", "limit"}
    call = {"name": tool.name, "args": {"query": "where do we deploy?"}, "id": "c1", "type": "tool_call"}
    message = tool.invoke(call, config=alice_config())
    assert isinstance(message, ToolMessage)
    first_line = message.text.splitlines()[0]
    assert first_line.startswith("1. [S: 2026-02-06] · session s1 · score ")
    docs = message.artifact
    assert f"id {docs[0].id}" in first_line
    assert "Fly.io" in message.text
    assert "Heroku" not in message.text


async def test_model_supplied_user_arguments_never_reach_another_user(memory: SessionVectorMemory) -> None:
    tool = create_search_memory_tool(memory.model_copy(update={"user_from_run": True}))
    hostile = {
        "query": "deploy region bank PIN",
        "user_id": "bob",
        "config": {"configurable": {"user_id": "bob"}},
        "namespace": ["memories", "bob"],
    }
    for output in (
        tool.invoke({"name": tool.name, "args": hostile, "id": "c1", "type": "tool_call"}, config=alice_config()),
        await tool.ainvoke(
            {"name": tool.name, "args": hostile, "id": "c2", "type": "tool_call"}, config=alice_config()
        ),
    ):
        assert "Heroku" not in output.text
        assert "PIN" not in output.text
        assert "Fly.io" in output.text


def test_search_tool_without_a_user_in_the_run_tells_the_model(memory: SessionVectorMemory) -> None:
    tool = create_search_memory_tool(memory.model_copy(update={"user_from_run": True}))
    out = tool.invoke({"name": tool.name, "args": {"query": "deploy"}, "id": "c1", "type": "tool_call"})
    assert "needs a user" in out.text
    assert out.status == "error"


def test_search_tool_limit_is_bounded(memory: SessionVectorMemory) -> None:
    tool = create_search_memory_tool(memory, max_results=1)
    out = tool.invoke({"name": tool.name, "args": {"query": "deploy", "limit": 20}, "id": "c", "type": "tool_call"})
    assert out.text.count("\n\n") == 0
    assert len(out.artifact) == 1
    too_many = tool.invoke(
        {"name": tool.name, "args": {"query": "deploy", "limit": 500}, "id": "d", "type": "tool_call"}
    )
    assert too_many.status == "error"


# -- the manage tool -----------------------------------------------------------------------------
async def test_manage_tool_saves_corrects_and_forgets_for_the_run_user_only(memory: SessionVectorMemory) -> None:
    per_run = memory.model_copy(update={"user_from_run": True})
    manage, search = create_manage_memory_tool(per_run), create_search_memory_tool(per_run)

    def run(tool: Any, args: dict[str, Any], user: str = "alice") -> str:
        call = {"name": tool.name, "args": args, "id": "c", "type": "tool_call"}
        return str(tool.invoke(call, config={"configurable": {"user_id": user, "session_id": "s9"}}).text)

    saved = run(manage, {"action": "create", "content": "Alice is allergic to peanuts."})
    note_id = saved.split()[-1].rstrip(".")
    [note] = memory.get_by_ids([note_id])
    assert note.metadata["source_type"] == "note"
    assert note.metadata["session_id"] == "s9"
    assert "allergic to peanuts" in run(search, {"query": "what is Alice allergic to?"})
    assert "peanuts" not in run(search, {"query": "what is the user allergic to?"}, user="bob")

    # Bob cannot change or forget Alice's note by its id, nor Alice Bob's chunks.
    bob_id = memory.for_user("bob").list_memories()[0].id
    assert "no memory with id" in run(manage, {"action": "delete", "id": note_id}, user="bob")
    assert "no memory with id" in run(manage, {"action": "update", "id": bob_id, "content": "x"})
    assert memory.get_by_ids([note_id])
    assert memory.for_user("bob").get_by_ids([bob_id])

    corrected = run(manage, {"action": "update", "id": note_id, "content": "Alice is allergic to cashews."})
    assert corrected == f"Updated memory {note_id}: it is now memory {note_id}."
    assert memory.get_by_ids([note_id])[0].page_content == "Alice is allergic to cashews."

    # A conversation chunk corrected: the user's words are kept, the correction saved beside them as the model's.
    chunk = memory.list_memories(source_type="session")[0]
    out = run(manage, {"action": "update", "id": chunk.id, "content": "The shop deploys to Fly.io region fra."})
    assert out.startswith(f"Kept memory {chunk.id} as the user's own words")
    new_id = out.split("saved as memory ")[1].split()[0]
    assert memory.get_by_ids([chunk.id])[0].page_content == chunk.page_content
    [correction] = memory.get_by_ids([new_id])
    assert correction.page_content.endswith("region fra.")
    assert correction.metadata["author"] == "model"

    call = {"name": manage.name, "args": {"action": "delete", "id": note_id}, "id": "c", "type": "tool_call"}
    deleted = await manage.ainvoke(call, config=alice_config())
    assert deleted.text == f"Forgot memory {note_id}."
    assert not memory.get_by_ids([note_id])


def test_manage_tool_can_be_limited_to_saving(memory: SessionVectorMemory) -> None:
    manage = create_manage_memory_tool(memory, actions=("create",))
    chunk = memory.list_memories()[0]
    call = {"name": manage.name, "args": {"action": "delete", "id": chunk.id}, "id": "c", "type": "tool_call"}
    assert "may only create" in manage.invoke(call).text
    assert memory.get_by_ids([chunk.id])


# -- a tool-calling agent ------------------------------------------------------------------------
class ScriptedToolModel(GenericFakeChatModel):
    """Replies from a script; ``bind_tools`` returns the model itself (the script already holds the tool calls)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


def test_create_agent_with_memory_tools_and_an_injection_attempt(memory: SessionVectorMemory) -> None:
    from langchain.agents import create_agent

    per_run = memory.model_copy(update={"user_from_run": True})
    model = ScriptedToolModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "search_memory", "id": "t1",
                                   "args": {"query": "shop deploy region", "user_id": "bob"}}]),
        AIMessage("", tool_calls=[{"name": "manage_memory", "id": "t2",
                                   "args": {"action": "create", "content": "Alice prefers blue-green deploys."}}]),
        AIMessage("You deploy to Fly.io (ams) [S: 2026-02-06]."),
    ]))  # fmt: skip
    agent = create_agent(model, tools=[create_search_memory_tool(per_run), create_manage_memory_tool(per_run)])
    out = agent.invoke({"messages": [HumanMessage("Where do we deploy?")]}, alice_config(session_id="s2"))
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Fly.io" in tool_messages[0].text
    assert "Heroku" not in tool_messages[0].text
    assert tool_messages[1].text.startswith("Saved memory ")
    notes = memory.list_memories(source_type="note")
    assert [n.page_content for n in notes] == ["Alice prefers blue-green deploys."]
    assert not memory.for_user("bob").list_memories(source_type="note")


def test_create_agent_takes_the_user_from_its_context(memory: SessionVectorMemory) -> None:
    from langchain.agents import create_agent

    @dataclass
    class Context:
        user_id: str

    per_run = memory.model_copy(update={"user_from_run": True})
    model = ScriptedToolModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "search_memory", "id": "t1", "args": {"query": "shop deploy region"}}]),
        AIMessage("Heroku, eu."),
    ]))  # fmt: skip
    agent = create_agent(model, tools=[create_search_memory_tool(per_run)], context_schema=Context)
    out = agent.invoke({"messages": [HumanMessage("Where does my shop deploy?")]}, context=Context(user_id="bob"))
    [tool_message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Heroku" in tool_message.text
    assert "Fly.io" not in tool_message.text


# -- listing -------------------------------------------------------------------------------------
async def test_listing_sessions_and_memories_newest_first_paged(memory: SessionVectorMemory) -> None:
    memory.add_messages(
        [
            {
                "role": "user",
                "content": "Book the team offsite in Lisbon for the second week of June, please.",
                "timestamp": "2026-04-01T09:00",
            },
            {"role": "assistant", "content": "I will look at Lisbon venues for twelve people in the second week."},
            {
                "role": "user",
                "content": "Budget is 5k euros for the venue, catering and the boat trip together.",
                "timestamp": "2026-04-01T09:05",
            },
            {"role": "assistant", "content": "Noted: 5k euros in total for the venue, the catering and the boat."},
        ],
        session_id="s2",
        chunking="exchange",
    )
    sessions = memory.list_sessions()
    assert [s.session_id for s in sessions] == ["s2", "s1"]
    assert (sessions[0].chunks, sessions[0].messages) == (2, 4)
    assert sessions[0].started is not None
    assert sessions[0].started.isoformat().startswith("2026-04-01T09:00")
    assert [s.session_id for s in await memory.alist_sessions(since="2026-03-01")] == ["s2"]

    everything = memory.list_memories(limit=10)
    assert [d.metadata["session_id"] for d in everything] == ["s2", "s2", "s1"]
    assert everything[0].page_content.startswith("User: Budget is 5k euros for")
    assert everything[0].metadata["marker"] == "[S: 2026-04-01]"
    pages = [memory.list_memories(limit=1, offset=n) for n in range(4)]
    assert [p[0].id for p in pages[:3]] == [d.id for d in everything]
    assert pages[3] == []
    assert [d.id for d in await memory.alist_memories(session_id="s1")] == [everything[2].id]
    assert memory.list_memories(until="2026-03-01") == [everything[2]]
    assert all(d.metadata["user_id"] == "alice" for d in everything)
    with pytest.raises(InvalidArgumentError):
        memory.list_memories(limit=0)
    with pytest.raises(InvalidArgumentError):
        memory.list_memories(source_type="secret")


def test_listing_on_a_langchain_vector_store(real_embeddings: Any) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    memory = SessionVectorMemory(vectorstore=InMemoryVectorStore(real_embeddings), user_id="alice")
    memory.add_messages(ALICE, session_id="s1")
    memory.for_user("bob").add_messages(BOB, session_id="b1")
    memory.add_note("Alice's cat is called Pixel.", timestamp="2026-05-01")
    assert [s.session_id for s in memory.list_sessions()] == ["s1"]
    assert [d.metadata["source_type"] for d in memory.list_memories()] == ["note", "session"]
    assert memory.invoke("what is the cat called?")[0].page_content == "Alice's cat is called Pixel."


# -- the graph: users from context or configurable -----------------------------------------------
async def test_the_graph_takes_ids_from_configurable_and_refuses_disagreeing_ones(memory: SessionVectorMemory) -> None:
    from langchain_session_rag.graph import create_session_rag_graph

    model = GenericFakeChatModel(messages=iter([AIMessage("Fly.io, ams."), AIMessage("Heroku."), AIMessage("x")]))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    out = graph.invoke(
        {"messages": [HumanMessage("Where do we deploy the shop?")]},
        {"configurable": {"user_id": "alice", "session_id": "s5"}},
    )
    assert out["messages"][-1].text == "Fly.io, ams."
    assert "Fly.io" in out["memories"][0].page_content
    assert [s.session_id for s in memory.list_sessions()][:1] == ["s5"]
    out = await graph.ainvoke(
        {"messages": [HumanMessage("Where does my shop deploy?")]},
        {"configurable": {"user_id": "bob", "session_id": "b5"}},
    )
    assert all(d.metadata["user_id"] == "bob" for d in out["memories"])
    before = (memory.count(), memory.for_user("bob").count())
    for config, context in [
        ({"configurable": {"user_id": "bob", "session_id": "s5"}}, {"user_id": "alice", "session_id": "s5"}),
        ({"configurable": {"user_id": "alice", "session_id": "s6"}}, {"user_id": "alice", "session_id": "s5"}),
    ]:
        with pytest.raises(IdentityConflictError):
            graph.invoke({"messages": [HumanMessage("Where do we deploy?")]}, config, context=context)
    with pytest.raises(InvalidRequestError, match="session_id"):
        graph.invoke({"messages": [HumanMessage("Where do we deploy?")]}, {"configurable": {"user_id": "alice"}})
    assert (memory.count(), memory.for_user("bob").count()) == before


def test_search_kwargs_are_standing_options_that_calls_override(memory: SessionVectorMemory) -> None:
    from langchain_session_rag.errors import UnknownOptionError

    memory.add_note("The shop's deploy checklist lives in docs/deploy.md.")
    notes_only = memory.model_copy(update={"search_kwargs": {"source_type": "note", "k": 3}})
    assert [d.metadata["source_type"] for d in notes_only.invoke("deploy")] == ["note"]
    assert {d.metadata["source_type"] for d in notes_only.invoke("deploy", source_type=None)} == {"note", "session"}
    with pytest.raises(UnknownOptionError):
        SessionVectorMemory(chroma_client=memory.chroma_client, embeddings=memory.embeddings, user_id="alice",
                            search_kwargs={"colour": "red"})  # fmt: skip


# -- found by review ------------------------------------------------------------------------------
def test_every_method_follows_the_run_not_only_invoke(memory: SessionVectorMemory) -> None:
    bob_run = {"configurable": {"user_id": "bob"}}
    alice_id = memory.list_memories()[0].id
    for call in (
        lambda _: memory.list_memories(),
        lambda _: memory.list_sessions(),
        lambda _: memory.get_by_ids([alice_id]),
        lambda _: memory.add_note("Bob writes into Alice's memory."),
        lambda _: memory.forget(ids=[alice_id]),
        lambda _: memory.count(),
    ):
        with pytest.raises(IdentityConflictError):
            RunnableLambda(call).invoke(1, bob_run)
    assert memory.get_by_ids([alice_id])
    assert memory.list_memories(source_type="note") == []

    per_run = memory.model_copy(update={"user_from_run": True})
    note = RunnableLambda(lambda _: per_run.add_note("Erin likes tea.")).invoke(
        1, {"configurable": {"user_id": "erin"}}
    )
    assert memory.for_user("erin").get_by_ids([note])[0].metadata["user_id"] == "erin"
    assert memory.for_user("default").count() == 0
    with pytest.raises(InvalidArgumentError, match="needs a user"):
        per_run.list_memories()


def test_for_user_binds_even_a_per_run_memory(memory: SessionVectorMemory) -> None:
    per_run = memory.model_copy(update={"user_from_run": True})
    alice = per_run.for_user("alice")
    assert [d.metadata["user_id"] for d in alice.invoke("deploy")] == ["alice"]
    with pytest.raises(IdentityConflictError):
        RunnableLambda(lambda _: alice.invoke("deploy")).invoke(1, {"configurable": {"user_id": "bob"}})


def test_local_model_binds_any_tool_of_several_and_refuses_an_unknown_name() -> None:
    from langchain_core.tools import tool

    from langchain_session_rag.errors import InvalidArgumentError
    from langchain_session_rag.models.local_llm import LocalChatModel

    @tool
    def one(x: str) -> str:
        """One."""
        return x

    @tool
    def two(x: str) -> str:
        """Two."""
        return x

    bound = LocalChatModel().bind_tools([one, two], tool_choice="any")
    assert bound.kwargs["tool_choice"] == "any"  # type: ignore[attr-defined]
    assert LocalChatModel().bind_tools([one], tool_choice="required").kwargs["tool_choice"] == "any"  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgumentError, match="'three'"):
        LocalChatModel().bind_tools([one, two], tool_choice="three")


def test_an_explicit_config_decides_inside_another_users_run(memory: SessionVectorMemory) -> None:
    per_run = memory.model_copy(update={"user_from_run": True})
    bob = {"configurable": {"user_id": "bob"}}
    inner = RunnableLambda(lambda _: [d.metadata["user_id"] for d in per_run.invoke("shop deploy", bob)])
    assert set(inner.invoke(None, alice_config())) == {"bob"}


async def test_a_shared_scope_serves_as_the_graphs_documents(memory: SessionVectorMemory) -> None:
    from langchain_core.documents import Document

    from langchain_session_rag.graph import create_session_rag_graph

    kb = memory.for_shared("handbook")
    kb.add_documents([Document("Deploys freeze on Fridays after 3 pm.", metadata={"name": "deploy-policy.md"})])
    assert memory.for_user("alice").list_memories(source_type="document") == []
    model = GenericFakeChatModel(messages=iter([AIMessage("Not on Friday afternoons."), AIMessage("Right.")]))
    graph = create_session_rag_graph(model, memory, documents=kb).compile()
    for run in (graph.invoke, graph.ainvoke):
        result = run(
            {"messages": [HumanMessage("Can I deploy on Friday at 4 pm?")]},
            {"configurable": {"user_id": "alice", "session_id": "s7"}},
        )
        out = await result if not isinstance(result, dict) else result
        assert out["documents"][0].metadata["marker"] == "[D: deploy-policy.md]"
    with pytest.raises(InvalidArgumentError):
        memory.invoke("deploy", {"configurable": {"user_id": "\x1fshared\x1fhandbook"}})
