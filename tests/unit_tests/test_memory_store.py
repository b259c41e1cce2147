"""``SessionMemoryStore``: LangGraph's ``BaseStore`` over the memory, on the real embedded store and model.

LangGraph's own store tests (``libs/checkpoint/tests/test_store.py``) are not shipped in its wheel; the cases of
theirs that apply to a store whose namespaces are users are ported here (round trips, overwrite, delete, query
ranking, filters, paging, namespace listing with prefix / suffix / depth, refused namespaces, async), plus the
isolation cases of this package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import InvalidNamespaceError, PutOp
from typing_extensions import TypedDict

from langchain_session_rag import SessionMemoryStore, SessionVectorMemory
from langchain_session_rag.errors import IdentityConflictError, InvalidArgumentError
from langchain_session_rag.graph import create_session_rag_graph

ALICE = ("memories", "alice")
BOB = ("memories", "bob")


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "m", user_id="nobody", embeddings=real_embeddings)


@pytest.fixture
def store(memory: SessionVectorMemory) -> SessionMemoryStore:
    return SessionMemoryStore(memory, shared=[("policies",)])


def test_put_get_overwrite_delete(store: SessionMemoryStore, memory: SessionVectorMemory) -> None:
    store.put(ALICE, "diet", {"content": "Alice is vegetarian.", "since": 2024})
    item = store.get(ALICE, "diet")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ALICE, "diet", {"content": "Alice is vegetarian.", "since": 2024})
    assert item.created_at.tzinfo is not None
    store.put(ALICE, "diet", {"content": "Alice is vegan.", "since": 2026})
    assert store.get(ALICE, "diet").value["content"] == "Alice is vegan."  # type: ignore[union-attr]
    assert memory.for_user("alice").count() == 1
    assert store.get(BOB, "diet") is None
    store.delete(ALICE, "diet")
    assert store.get(ALICE, "diet") is None
    assert memory.for_user("alice").count() == 0


def test_items_are_the_users_notes_and_the_graph_retrieves_them(
    store: SessionMemoryStore, memory: SessionVectorMemory
) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    store.put(ALICE, "pet", {"content": "Alice's cat is called Pixel."})
    [note] = memory.for_user("alice").list_memories()
    assert note.metadata["source_type"] == "note"
    assert note.metadata["marker"].startswith("[S: ")

    seen: list[str] = []

    class Recording(GenericFakeChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            seen.append("\n".join(m.text for m in messages))
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = Recording(messages=iter([AIMessage("Your cat is Pixel.")]))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile(store=store)
    graph.invoke(
        {"messages": [HumanMessage("What is my cat called?")]},
        {"configurable": {"user_id": "alice", "session_id": "s1"}},
    )
    assert "Pixel" in seen[0]
    # The exchange the graph stored is an item of Alice's namespace too.
    hits = store.search(ALICE, query="what is the cat called?")
    assert "pet" in [h.key for h in hits]
    assert [h.value.get("source_type") for h in hits if h.key != "pet"] == ["session"]
    assert all(h.namespace == ALICE for h in hits)
    assert all(isinstance(h.score, float) for h in hits)
    assert store.search(BOB, query="what is the cat called?") == []


def test_nodes_use_runtime_store_scoped_by_the_run(store: SessionMemoryStore) -> None:
    class State(TypedDict):
        fact: str
        found: list[str]

    def remember(state: State, runtime: Runtime[dict[str, str]]) -> dict[str, Any]:
        user = runtime.context["user_id"]
        assert runtime.store is not None
        runtime.store.put(("memories", user), "fact", {"content": state["fact"]})
        return {"found": [i.value["content"] for i in runtime.store.search(("memories", user), query=state["fact"])]}

    graph = StateGraph(State).add_node("remember", remember).add_edge(START, "remember").compile(store=store)
    out = graph.invoke({"fact": "Alice flies to Oslo on May 3.", "found": []}, context={"user_id": "alice"})
    assert out["found"] == ["Alice flies to Oslo on May 3."]
    assert store.search(BOB) == []

    def snoop(state: State, runtime: Runtime[dict[str, str]]) -> dict[str, Any]:
        assert runtime.store is not None
        return {"found": [i.value["content"] for i in runtime.store.search(ALICE)]}

    spy = StateGraph(State).add_node("snoop", snoop).add_edge(START, "snoop").compile(store=store)
    with pytest.raises(IdentityConflictError, match="bob"):
        spy.invoke({"fact": "", "found": []}, context={"user_id": "bob"})
    with pytest.raises(IdentityConflictError):
        spy.invoke({"fact": "", "found": []}, {"configurable": {"user_id": "bob"}})


def test_search_query_ranks_filters_and_pages(store: SessionMemoryStore) -> None:
    docs = {
        "doc1": {"text": "short text", "kind": "a", "rank": 1},
        "doc2": {"text": "Deploys go to Fly.io in the ams region.", "kind": "b", "rank": 2},
        "doc3": {"text": "The staging app runs on Fly.io too.", "kind": "b", "rank": 3},
        "doc4": {"description": "text in description field", "kind": "a", "rank": 4},
    }
    for key, value in docs.items():
        store.put(ALICE, key, value)
    ranked = store.search(ALICE, query="where do we deploy on Fly.io?", limit=2)
    assert [r.key for r in ranked] == ["doc2", "doc3"]
    assert ranked[0].score is not None
    assert ranked[0].score >= ranked[1].score  # type: ignore[operator]
    assert {r.key for r in store.search(ALICE, filter={"kind": "a"})} == {"doc1", "doc4"}
    assert {r.key for r in store.search(ALICE, filter={"rank": {"$gte": 3}})} == {"doc3", "doc4"}
    assert {r.key for r in store.search(ALICE, filter={"rank": {"$ne": 1}, "kind": "b"})} == {"doc2", "doc3"}
    assert [r.key for r in store.search(ALICE, query="Fly.io", filter={"kind": "a"})] != []
    everything = store.search(ALICE, limit=10)
    assert len(everything) == 4
    assert [r.key for r in store.search(ALICE, limit=2, offset=2)] == [r.key for r in everything[2:]]
    assert store.search(ALICE, offset=10) == []


def test_sub_namespaces_and_list_namespaces(store: SessionMemoryStore) -> None:
    for ns in [(*ALICE, "prefs"), (*ALICE, "prefs", "food"), (*ALICE, "trips"), (*BOB, "prefs")]:
        store.put(ns, "k", {"content": f"item of {'/'.join(ns)}"})
    assert store.get((*ALICE, "prefs"), "k").value["content"] == "item of memories/alice/prefs"  # type: ignore[union-attr]
    assert store.get(ALICE, "k") is None
    assert {i.namespace for i in store.search((*ALICE, "prefs"))} == {(*ALICE, "prefs"), (*ALICE, "prefs", "food")}
    assert store.list_namespaces(prefix=ALICE) == [(*ALICE, "prefs"), (*ALICE, "prefs", "food"), (*ALICE, "trips")]
    assert store.list_namespaces(prefix=ALICE, suffix=("food",)) == [(*ALICE, "prefs", "food")]
    assert store.list_namespaces(prefix=ALICE, max_depth=3) == [(*ALICE, "prefs"), (*ALICE, "trips")]
    assert store.list_namespaces(prefix=ALICE, limit=1, offset=1) == [(*ALICE, "prefs", "food")]
    with pytest.raises(InvalidArgumentError, match="no wildcard"):
        store.list_namespaces(prefix=("memories", "*"))


def test_list_namespaces_above_the_user_part_lists_users_outside_a_run_and_the_runs_user_inside(
    store: SessionMemoryStore, memory: SessionVectorMemory
) -> None:
    # The attack of issue 28: an admin view listing users got a 400 (list_namespaces(prefix=["memories"]) refused).
    store.put((*ALICE, "prefs"), "k", {"content": "Alice likes tea."})
    store.put(BOB, "k", {"content": "Bob likes coffee."})
    memory.for_user("carol").add_note("Carol has no store items, only a note.")
    store.put_shared(("policies",), "refunds", {"content": "Refunds within 30 days."})
    users = [ALICE, BOB, ("memories", "carol")]
    assert store.list_namespaces(prefix=("memories",), max_depth=2) == users
    assert store.list_namespaces(prefix=("memories",)) == [(*ALICE, "prefs"), BOB, ("memories", "carol")]
    assert store.list_namespaces(max_depth=2) == [*users, ("policies",)]
    assert store.list_namespaces(prefix=("memories",), suffix=("prefs",)) == [(*ALICE, "prefs")]
    assert store.list_namespaces(prefix=("memories",), max_depth=2, limit=1, offset=1) == [BOB]

    # Inside a run, only the run's user: one user's tool or node never learns who else is stored.
    def node(_state: dict[str, Any], runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.store is not None
        return {"seen": [list(ns) for ns in runtime.store.list_namespaces(prefix=("memories",))]}

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(_Seen)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    graph = builder.compile(store=store)
    out = graph.invoke({"seen": []}, {"configurable": {"user_id": "bob"}})
    assert out["seen"] == [list(BOB)]
    # A store that requires a run's user refuses the whole-store listing outside a run.
    strict = SessionMemoryStore(memory, require_run_user=True)
    with pytest.raises(InvalidArgumentError, match="require_run_user"):
        strict.list_namespaces(prefix=("memories",))


class _Seen(TypedDict):
    seen: list[list[str]]


def test_namespaces_without_a_user_are_refused_unless_shared(
    store: SessionMemoryStore, memory: SessionVectorMemory
) -> None:
    for namespace in [("memories",), ("notes", "alice"), ("alice",)]:
        with pytest.raises(InvalidArgumentError, match="names no user"):
            store.put(namespace, "k", {"content": "x"})
        with pytest.raises(InvalidArgumentError, match="names no user"):
            store.search(namespace, query="x")
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "alice"), "k", {"content": "x"})
    store.put_shared(("policies",), "refunds", {"content": "Refunds within 30 days."})
    assert store.get(("policies",), "refunds").value == {"content": "Refunds within 30 days."}  # type: ignore[union-attr]
    # Shared items are not any user's memories.
    assert memory.for_user("alice").list_memories() == []
    assert store.search(ALICE, query="refunds") == []
    with pytest.raises(InvalidArgumentError, match="overlaps"):
        SessionMemoryStore(memory, shared=[("memories",)])
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        SessionMemoryStore(memory, namespace=("memories",))


def test_a_custom_template(memory: SessionVectorMemory) -> None:
    store = SessionMemoryStore(memory, namespace=("app", "{user_id}", "facts"))
    store.put(("app", "carol", "facts"), "job", {"content": "Carol is a nurse."})
    assert memory.for_user("carol").list_memories()[0].page_content == "Carol is a nurse."
    with pytest.raises(InvalidArgumentError):
        store.put(("app", "carol"), "job", {"content": "x"})


async def test_ttl_and_bad_values_are_refused(store: SessionMemoryStore) -> None:
    # A ttl is a bad argument (a 400 through LangGraph's server), not a NotImplementedError (a 500 there).
    with pytest.raises(InvalidArgumentError, match="ttl is not supported"):
        store.put(ALICE, "k", {"content": "x"}, ttl=5)
    with pytest.raises(InvalidArgumentError, match="keeps items until they are deleted"):
        await store.aput(ALICE, "k", {"content": "x"}, ttl=1)
    store.put(ALICE, "kept", {"content": "x"}, ttl=None)  # no ttl, spelled as None: accepted
    store.delete(ALICE, "kept")
    with pytest.raises(InvalidArgumentError, match="dict"):
        store.batch([PutOp(ALICE, "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    assert store.search(ALICE) == []


async def test_async_round_trip(store: SessionMemoryStore) -> None:
    await store.aput(ALICE, "city", {"content": "Alice lives in Porto."})
    assert (await store.aget(ALICE, "city")).value["content"] == "Alice lives in Porto."  # type: ignore[union-attr]
    assert [i.key for i in await store.asearch(ALICE, query="where does Alice live?")] == ["city"]
    assert await store.alist_namespaces(prefix=ALICE) == [ALICE]
    await store.adelete(ALICE, "city")
    assert await store.aget(ALICE, "city") is None


# -- found by review ------------------------------------------------------------------------------
def test_a_replaced_note_keeps_no_stale_metadata_in_the_store(memory: SessionVectorMemory) -> None:
    """Chroma's upsert merges metadata; a replaced record must not keep keys its replacement dropped."""
    erin = memory.for_user("erin")
    note_id = erin.add_note("first version", key="x", metadata={"secret": "old"})
    erin.add_note("second version", key="x")
    [stored] = memory.backend.fetch("erin", [note_id])
    assert stored.text == "second version"
    assert "secret" not in stored.metadata
    assert "secret" not in erin.get_by_ids([note_id])[0].metadata


def test_correcting_a_store_item_with_the_manage_tool_keeps_its_key(
    store: SessionMemoryStore, memory: SessionVectorMemory
) -> None:
    from langchain_session_rag import create_manage_memory_tool

    store.put(ALICE, "pet", {"content": "Alice's cat is called Tofu.", "kind": "pet"})
    [note] = memory.for_user("alice").list_memories()
    manage = create_manage_memory_tool(memory.model_copy(update={"user_from_run": True}))
    call = {"name": manage.name, "type": "tool_call", "id": "1",
            "args": {"action": "update", "id": note.id, "content": "Alice's cat is called Udon."}}  # fmt: skip
    assert manage.invoke(call, {"configurable": {"user_id": "alice"}}).text.endswith(f"memory {note.id}.")
    item = store.get(ALICE, "pet")
    assert item is not None
    assert item.value == {"content": "Alice's cat is called Udon.", "kind": "pet"}
    [stored] = memory.backend.fetch("alice", [note.id])  # what another process reads
    assert stored.text == "Alice's cat is called Udon."
    assert json.loads(stored.metadata["store_value"])["content"] == "Alice's cat is called Udon."


def test_query_search_of_a_sub_namespace_or_with_a_filter_misses_nothing(
    store: SessionMemoryStore, memory: SessionVectorMemory
) -> None:
    store.put((*ALICE, "prefs"), "food", {"content": "Alice is vegetarian.", "kind": "diet"})
    exchanges = []
    for n in range(60):
        exchanges += [
            {"role": "user", "content": f"Give me vegetarian recipe number {n} with tofu and rice, please."},
            {"role": "assistant", "content": f"Vegetarian recipe {n}: fry the tofu, cook the rice, add soy sauce."},
        ]
    memory.for_user("alice").add_messages(exchanges, session_id="recipes", chunking="exchange")
    assert [i.key for i in store.search((*ALICE, "prefs"), query="vegetarian recipes with tofu")] == ["food"]
    assert [i.key for i in store.search(ALICE, query="vegetarian recipe with tofu", filter={"kind": "diet"})] == [
        "food"
    ]


def test_shared_namespaces_are_searchable_from_any_users_run(store: SessionMemoryStore) -> None:
    from langchain_core.runnables import RunnableLambda

    store.put_shared(("policies",), "refunds", {"content": "Refunds within 30 days."})
    search = RunnableLambda(lambda _: [i.key for i in store.search(("policies",), query="refund policy")])
    assert search.invoke(1, {"configurable": {"user_id": "alice"}}) == ["refunds"]


def test_a_run_cannot_name_the_shared_pseudo_users(store: SessionMemoryStore, memory: SessionVectorMemory) -> None:
    from langchain_session_rag import create_search_memory_tool

    store.put_shared(("policies",), "refunds", {"content": "Refunds within 30 days."})
    tool = create_search_memory_tool(memory.model_copy(update={"user_from_run": True}))
    pseudo = "\x1fshared\x1f" + json.dumps(["policies"])
    out = tool.invoke(
        {"name": tool.name, "args": {"query": "refunds"}, "id": "1", "type": "tool_call"},
        {"configurable": {"user_id": pseudo}},
    )
    assert out.status == "error"
    assert "Refunds" not in out.text
    with pytest.raises(InvalidArgumentError):
        memory.invoke("refunds", {"configurable": {"user_id": pseudo}})


def test_unserialisable_values_and_unknown_filter_operators_are_refused(store: SessionMemoryStore) -> None:
    from datetime import datetime, timezone

    with pytest.raises(InvalidArgumentError, match="JSON"):
        store.put(ALICE, "when", {"content": "x", "at": datetime(2026, 1, 1, tzinfo=timezone.utc)})
    assert store.get(ALICE, "when") is None
    store.put(ALICE, "age", {"content": "Alice is 30.", "age": 30})
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.search(ALICE, filter={"age": {"$in": [30]}})


def test_require_run_user_refuses_calls_outside_a_users_run(memory: SessionVectorMemory) -> None:
    from langchain_core.runnables import RunnableLambda

    strict = SessionMemoryStore(memory, require_run_user=True, shared=[("policies",)])
    with pytest.raises(InvalidArgumentError, match="require_run_user"):
        strict.put(ALICE, "k", {"content": "x"})
    put = RunnableLambda(lambda _: strict.put(ALICE, "k", {"content": "Alice's note."}))
    put.invoke(1, {"configurable": {"user_id": "alice"}})
    with pytest.raises(IdentityConflictError):
        put.invoke(1, {"configurable": {"user_id": "bob"}})
    strict.put_shared(("policies",), "p", {"content": "Shared."})  # the app writes shared namespaces
    assert memory.for_user("alice").list_memories()[0].page_content == "Alice's note."


def test_store_queries_ignore_the_memorys_standing_filters(memory: SessionVectorMemory) -> None:
    sessions_only = memory.model_copy(update={"source_type": "session", "search_kwargs": {"k": 1}})
    store = SessionMemoryStore(sessions_only)
    store.put(ALICE, "pet", {"content": "Alice's lizard is called Rex."})
    assert [i.key for i in store.search(ALICE, query="lizard Rex")] == ["pet"]


def test_correcting_an_item_indexed_by_a_custom_field_updates_that_field(memory: SessionVectorMemory) -> None:
    from langchain_session_rag import create_manage_memory_tool

    store = SessionMemoryStore(memory)
    store.put(ALICE, "age", {"fact": "Alice is 30.", "source": "chat"}, index=["fact"])
    [note] = memory.for_user("alice").list_memories()
    manage = create_manage_memory_tool(memory.model_copy(update={"user_from_run": True}))
    call = {"name": manage.name, "type": "tool_call", "id": "1",
            "args": {"action": "update", "id": note.id, "content": "Alice is 31."}}  # fmt: skip
    manage.invoke(call, {"configurable": {"user_id": "alice"}})
    assert store.get(ALICE, "age").value == {"fact": "Alice is 31.", "source": "chat"}  # type: ignore[union-attr]


def test_unknown_operators_are_refused_before_any_item_is_read(store: SessionMemoryStore) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.search(ALICE, filter={"kind": {"$in": ["a"]}})  # no item at all
    store.put(ALICE, "k", {"content": "x", "kind": "a"})
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.search(ALICE, filter={"kind": "zzz", "n": {"$in": [1]}})


def test_a_too_long_shared_namespace_is_refused_at_construction(memory: SessionVectorMemory) -> None:
    with pytest.raises(InvalidArgumentError, match="too long"):
        SessionMemoryStore(memory, shared=[("p" * 300,)])
