"""Attacks on the graph: a shared cache and private memories, streamed prompts, a process-wide LLM cache, and
what the checkpoints carry."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, messages_from_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SemanticCache, SemanticLLMCache, SessionVectorMemory
from langchain_session_rag.graph import Node, create_session_rag_graph
from langchain_session_rag.prompt import SummaryBuffer
from tests.unit_tests.test_cache_attacks import CountingModel


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "m", user_id="anyone", embeddings=real_embeddings)


def ctx(user: str, session: str = "s1") -> dict[str, str]:
    return {"user_id": user, "session_id": session}


def store_secret(memory: SessionVectorMemory) -> None:
    memory.for_user("alice").add_messages(
        [
            {"role": "user", "content": "Remember this: my safe code is 7788.", "timestamp": "2026-02-01T10:00:00"},
            {"role": "assistant", "content": "Noted: your safe code is 7788."},
        ],
        session_id="old",
    )


def test_a_shared_cache_never_stores_an_answer_built_on_private_memories(
    tmp_path: Path, memory: SessionVectorMemory
) -> None:
    store_secret(memory)
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", shared=True, embeddings=memory.embeddings)
    model = CountingModel(responses=["Your safe code is 7788.", "I do not know your safe code."])
    graph = create_session_rag_graph(model, memory, cache=cache).compile()
    alice = graph.invoke({"messages": [HumanMessage("What is my safe code?")]}, context=ctx("alice"))
    assert alice["memories"], "Alice's memory was in her prompt"
    assert cache.stats.skipped_updates["private"] == 1
    bob = graph.invoke({"messages": [HumanMessage("What is my safe code?")]}, context=ctx("bob"))
    assert bob["cache"]["hit"] is False
    assert "7788" not in bob["messages"][-1].text
    assert model.calls == 2, "Bob's turn went to the model"
    # A turn whose prompt held nothing of the user is shared.
    carol = graph.invoke({"messages": [HumanMessage("How many legs does a spider have?")]}, context=ctx("carol"))
    dave = graph.invoke({"messages": [HumanMessage("How many legs does a spider have?")]}, context=ctx("dave"))
    assert (carol["cache"]["hit"], dave["cache"]["hit"]) == (False, True)
    assert dave["messages"][-1].text == carol["messages"][-1].text


def test_a_process_wide_llm_cache_is_scoped_to_the_turns_user(tmp_path: Path, memory: SessionVectorMemory) -> None:
    store = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    set_llm_cache(SemanticLLMCache(store))
    try:
        model = CountingModel(responses=["answer"])
        graph = create_session_rag_graph(model, memory).compile()
        first = graph.invoke({"messages": [HumanMessage("What is my account number?")]}, context=ctx("alice"))
        other = graph.invoke({"messages": [HumanMessage("What is my account number?")]}, context=ctx("bob", "s2"))
    finally:
        set_llm_cache(None)
    assert (first["messages"][-1].text, other["messages"][-1].text) == ("answer #1", "answer #2")


async def test_stream_mode_messages_carries_the_answer_only(memory: SessionVectorMemory) -> None:
    store_secret(memory)
    model = GenericFakeChatModel(messages=iter([AIMessage(f"streamed answer {i}") for i in range(3)]))
    summariser = GenericFakeChatModel(messages=iter([AIMessage("SUMMARY-TOKENS of the earlier turns")] * 3))
    graph = create_session_rag_graph(model, memory, window_turns=1, summary=SummaryBuffer(summariser, max_turns=1))
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    long = "Tell me about my safe code and everything else you remember about it. " * 20
    streamed: list[tuple[str, str]] = []
    for question in (long, long + "Again.", "What is my safe code?"):
        async for message, meta in app.astream(
            {"messages": [HumanMessage(question)]}, config, context=ctx("alice"), stream_mode="messages"
        ):
            streamed.append((meta["langgraph_node"], message.text))
    final = await app.aget_state(config)
    assert final.values.get("summary"), "the summary model ran"
    assert {node for node, _ in streamed} == {Node.CALL_MODEL}
    text = "".join(t for _, t in streamed)
    assert "7788" not in text, "no retrieved memory is streamed"
    assert "SUMMARY-TOKENS" not in text, "the summary model's tokens are not streamed"
    assert "long-term memory" not in text, "the instructions are not streamed"
    assert text == "streamed answer 0streamed answer 1streamed answer 2"


def test_a_cache_hit_is_streamed(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage("Eight legs.")]))
    graph = create_session_rag_graph(model, memory, cache=cache).compile()
    graph.invoke({"messages": [HumanMessage("How many legs does a spider have?")]}, context=ctx("carol"))
    chunks = list(
        graph.stream(
            {"messages": [HumanMessage("How many legs does a spider have?")]},
            context=ctx("carol", "s2"),
            stream_mode="messages",
        )
    )
    assert [(meta["langgraph_node"], m.text) for m, meta in chunks] == [(Node.CACHE_LOOKUP, "Eight legs.")]


def test_the_prompt_leaves_the_state_at_the_end_of_the_turn(memory: SessionVectorMemory) -> None:
    store_secret(memory)
    model = GenericFakeChatModel(messages=iter([AIMessage("a"), AIMessage("b")]))
    graph = create_session_rag_graph(model, memory).compile(checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [HumanMessage("What is my safe code?")]}, {"configurable": {"thread_id": "t"}},
                       context=ctx("alice"))  # fmt: skip
    assert out["prompt"] is None
    assert out["budget_report"]["total"] > 0
    debug = create_session_rag_graph(model, memory, keep_prompt=True).compile()
    kept = debug.invoke({"messages": [HumanMessage("What is my safe code?")]}, context=ctx("alice"))
    assert "7788" in messages_from_dict(kept["prompt"])[-1].text


def test_checkpoints_grow_by_less_than_25_kb_a_turn_with_exit_durability(
    tmp_path: Path, memory: SessionVectorMemory
) -> None:
    store_secret(memory)
    model = GenericFakeChatModel(messages=iter([AIMessage("That is a good question. " * 12)] * 60))
    db = tmp_path / "cp.sqlite"
    config: Any = {"configurable": {"thread_id": "t"}}
    sizes = []
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = create_session_rag_graph(model, memory).compile(checkpointer=saver)
        for turn in range(60):
            graph.invoke({"messages": [HumanMessage(f"What did I say about my safe code? ({turn})")]}, config,
                         context=ctx("alice"), durability="exit")  # fmt: skip
            if turn in (9, 59):
                with sqlite3.connect(db) as conn:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                sizes.append(sum(p.stat().st_size for p in tmp_path.glob("cp.sqlite*")))
    per_turn = (sizes[1] - sizes[0]) / 50
    assert per_turn <= 25_000, per_turn


def test_another_model_configuration_is_another_cache_key(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    question = {"messages": [HumanMessage("How many legs does a spider have?")]}
    cold = CountingModel(responses=["eight"], verbose=False)
    warm = CountingModel(responses=["eight"], verbose=True)  # another public setting
    graph_a = create_session_rag_graph(cold, memory, cache=cache).compile()
    graph_b = create_session_rag_graph(warm, memory, cache=cache).compile()
    graph_a.invoke(question, context=ctx("carol"))
    same = graph_a.invoke(question, context=ctx("carol", "s2"))
    other = graph_b.invoke(question, context=ctx("carol", "s3"))
    assert (same["cache"]["hit"], other["cache"]["hit"]) == (True, False)


def test_a_process_wide_shared_llm_cache_never_carries_private_answers(
    tmp_path: Path, memory: SessionVectorMemory
) -> None:
    for user, fact in (("alice", "My doctor told me I am overweight."), ("bob", "My doctor told me I am underweight.")):
        memory.for_user(user).add_messages([{"role": "user", "content": fact, "timestamp": "2026-01-05T09:00:00"},
                                            {"role": "assistant", "content": "Noted."}], session_id="old")  # fmt: skip
    shared = SemanticCache.local(path=tmp_path / "c", user_id="anyone", shared=True, embeddings=memory.embeddings)
    set_llm_cache(SemanticLLMCache(shared))
    try:
        model = CountingModel(responses=["answer"])
        graph = create_session_rag_graph(model, memory).compile()
        question = {"messages": [HumanMessage("What did my doctor say about my weight?")]}
        alice = graph.invoke(question, context=ctx("alice"))
        bob = graph.invoke(question, context=ctx("bob"))
    finally:
        set_llm_cache(None)
    assert alice["memories"]
    assert bob["memories"]
    assert (alice["messages"][-1].text, bob["messages"][-1].text) == ("answer #1", "answer #2")
    assert shared.clear() == 0, "nothing built on a user's memories was stored in the shared scope"


def test_a_new_memory_makes_a_cached_answer_stale(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    model = CountingModel(responses=["I don't know your favourite colour yet.", "Noted: teal.", "It is teal."])
    graph = create_session_rag_graph(model, memory, cache=cache).compile()
    question = {"messages": [HumanMessage("What is my favourite colour?")]}
    graph.invoke(question, context=ctx("alice", "s1"))
    repeat = graph.invoke(question, context=ctx("alice", "s2"))
    assert repeat["cache"]["hit"] is True, "nothing new: the repeat is a hit"
    graph.invoke({"messages": [HumanMessage("My favourite colour is teal, please remember it.")]},
                 context=ctx("alice", "s3"))  # fmt: skip
    memory.flush()
    after = graph.invoke(question, context=ctx("alice", "s4"))
    assert after["cache"] == {"hit": False, "reason": "stale_version"}
    assert after["messages"][-1].text.startswith("answer") or "teal" in after["messages"][-1].text


def test_an_image_question_is_not_cached_by_the_graph(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    graph = create_session_rag_graph(CountingModel(responses=["answer"]), memory, cache=cache).compile()
    for url in ("https://x/mole1.jpg", "https://x/mole2.jpg"):
        content: list[Any] = [{"type": "text", "text": "Is this mole dangerous?"},
                              {"type": "image_url", "image_url": {"url": url}}]  # fmt: skip
        out = graph.invoke({"messages": [HumanMessage(content=content)]}, context=ctx("alice", url))
        assert out["cache"]["hit"] is False
    assert cache.for_user("alice").clear() == 0


@pytest.mark.parametrize("bad", [7, "", "  ", None])
def test_a_bad_session_id_fails_before_the_model(memory: SessionVectorMemory, bad: Any) -> None:
    from langchain_session_rag.errors import InvalidRequestError

    model = CountingModel(responses=["answer"])
    graph = create_session_rag_graph(model, memory).compile()
    with pytest.raises(InvalidRequestError, match="session_id"):  # none named or an unfit one: the graph's input error
        graph.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "alice", "session_id": bad})
    assert model.calls == 0


def test_a_short_cached_answer_inside_a_new_fact_still_goes_stale(tmp_path: Path, memory: SessionVectorMemory) -> None:
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    model = CountingModel(responses=["No"])
    graph = create_session_rag_graph(model, memory, cache=cache, background_writes=False).compile()
    question = {"messages": [HumanMessage("Am I allergic to penicillin?")]}
    graph.invoke(question, context=ctx("alice", "s1"))
    assert graph.invoke(question, context=ctx("alice", "s2"))["cache"]["hit"] is True
    graph.invoke({"messages": [HumanMessage("I was just diagnosed: I am allergic to penicillin.")]},
                 context=ctx("alice", "s3"))  # fmt: skip
    assert graph.invoke(question, context=ctx("alice", "s4"))["cache"]["reason"] == "stale_version"


def test_an_imported_old_memory_makes_a_cached_answer_stale(tmp_path: Path, memory: SessionVectorMemory) -> None:
    import json

    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    graph = create_session_rag_graph(CountingModel(responses=["teal"]), memory, cache=cache).compile()
    question = {"messages": [HumanMessage("What is my favourite colour?")]}
    graph.invoke(question, context=ctx("alice", "s1"))
    other = memory.for_user("carol")
    other.add_messages([{"role": "user", "content": "My favourite colour is now red.",
                         "timestamp": "2026-03-01T00:00:00"}], session_id="old")  # fmt: skip
    export = tmp_path / "old.jsonl"
    other.export_jsonl(export)
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    export.write_text("\n".join(json.dumps({**line, "id": "imported-1"}) for line in lines) + "\n", encoding="utf-8")
    memory.for_user("alice").import_jsonl(export, reassign=True)  # carol's export, made alice's on purpose
    assert graph.invoke(question, context=ctx("alice", "s2"))["cache"]["reason"] == "stale_version"


def test_changed_documents_are_another_key(tmp_path: Path, memory: SessionVectorMemory) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Policy(BaseRetriever):
        text: str = "The refund window is 30 days."

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(self.text, metadata={"source": "policy.md"})]

    policy = Policy()
    cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=memory.embeddings)
    graph = create_session_rag_graph(CountingModel(responses=["answer"]), memory, documents=policy, cache=cache)
    app = graph.compile()
    question = {"messages": [HumanMessage("How long is the refund window?")]}
    app.invoke(question, context=ctx("alice", "s1"))
    assert app.invoke(question, context=ctx("alice", "s2"))["cache"]["hit"] is True
    policy.text = "The refund window is 14 days."
    after = app.invoke(question, context=ctx("alice", "s3"))
    assert after["cache"]["hit"] is False
    assert after["documents"][0].page_content == "The refund window is 14 days."


def test_a_shared_answer_is_not_served_to_a_user_whose_memories_bear_on_it(
    tmp_path: Path, memory: SessionVectorMemory
) -> None:
    memory.for_user("alice").add_messages([{"role": "user", "content": "My favourite colour is teal."},
                                           {"role": "assistant", "content": "Noted: teal."}], session_id="old")  # fmt: skip
    shared = SemanticCache.local(path=tmp_path / "c", user_id="anyone", shared=True, embeddings=memory.embeddings)
    model = CountingModel(responses=["I don't know your favourite colour."])
    graph = create_session_rag_graph(model, memory, cache=shared).compile()
    question = {"messages": [HumanMessage("What is my favourite colour?")]}
    graph.invoke(question, context=ctx("newcomer"))
    assert graph.invoke(question, context=ctx("another"))["cache"]["hit"] is True
    alice = graph.invoke(question, context=ctx("alice"))
    assert alice["cache"]["reason"] == "personal_context"


def test_wrapped_models_have_their_own_keys() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_session_rag.graph.cache_keys import model_key

    mini, large = FakeListChatModel(responses=["mini"]), FakeListChatModel(responses=["large"])
    assert model_key(mini.with_fallbacks([large])) != model_key(large.with_fallbacks([mini]))
    assert model_key(mini.with_retry()) != model_key(large.with_retry())
    assert model_key(mini.bind(stop=["x"])) != model_key(mini)
