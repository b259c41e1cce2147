"""The other tiers: importance and topics on every chunk (filters, prior), the long-context shortcut, daily logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import InvalidArgumentError, InvalidMetadataError
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.memory.annotate import heuristic_importance, topics_of

SESSION = [
    {"role": "user", "content": "We decided to move the billing API from REST to GraphQL next quarter, for real.",
     "timestamp": "2026-03-02T10:00"},
    {"role": "assistant", "content": "Noted: the billing API moves to GraphQL next quarter; I will plan the schema."},
    {"role": "user", "content": "The weather in Porto was lovely this weekend, we walked along the river for hours.",
     "timestamp": "2026-03-03T10:00"},
    {"role": "assistant", "content": "Porto in spring sounds lovely; the riverside walk is a classic."},
    {"role": "user", "content": "Remember that I prefer metric units in every answer, kilometres and degrees Celsius.",
     "timestamp": "2026-03-04T10:00"},
    {"role": "assistant", "content": "Understood: metric units from now on, kilometres and degrees Celsius."},
]  # fmt: skip


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="ana", embeddings=real_embeddings)
    memory.add_messages(SESSION, session_id="s1", chunking="exchange")
    return memory


def test_the_heuristics() -> None:
    assert heuristic_importance("The weather was lovely.") == 0.2
    assert heuristic_importance("We decided to go with Postgres.") == 0.5
    assert heuristic_importance("Remember that I prefer tea; todo: buy some.") == 1.0
    assert heuristic_importance("Fixed the crash: the traceback pointed at a stale cache.") == 0.45
    assert heuristic_importance("This is not a bug, and there is no decision yet.") == 0.2
    assert topics_of("User: the billing API moves to GraphQL; billing is late. Assistant: GraphQL billing.") == [
        "bill",
        "graphql",
        "api",
    ]


def test_every_chunk_carries_importance_and_topics_and_they_filter(memory: SessionVectorMemory) -> None:
    chunks = memory.list_memories()
    assert {round(d.metadata["importance"], 2) for d in chunks} == {0.2, 0.5, 0.8}
    assert all(d.metadata["topics"] for d in chunks)
    decisions = memory.invoke("what did we plan?", min_importance=0.5, k=10)
    assert [d.metadata["importance"] >= 0.5 for d in decisions] == [True, True]
    assert all("Porto" not in d.page_content for d in decisions)
    porto = memory.invoke("what happened?", topics=["Porto"], k=10)
    assert [d.page_content.count("Porto") > 0 for d in porto] == [True]
    assert memory.invoke("what happened?", topics=["quantum"], k=10) == []
    with pytest.raises(InvalidArgumentError):
        memory.invoke("x", min_importance=2)
    with pytest.raises(InvalidArgumentError):
        memory.invoke("x", topics="porto")
    with pytest.raises(InvalidMetadataError):
        memory.add_messages([{"role": "user", "content": "x"}], session_id="s2", metadata={"importance": 1.0})


def test_the_importance_prior_reorders_close_calls_only(memory: SessionVectorMemory) -> None:
    plain = memory.invoke("anything about units or the weather?", k=3)
    prior = memory.invoke("anything about units or the weather?", k=3, importance_weight=0.5)
    assert {d.id for d in plain} == {d.id for d in prior}
    for doc in prior:
        assert doc.metadata["score"] <= doc.metadata["similarity"] + 1e-9 or doc.metadata["lexical"] > 0


def test_a_model_can_score_importance(tmp_path: Path, real_embeddings: Any) -> None:
    scored: list[str] = []

    def scorer(text: str) -> float:
        scored.append(text)
        return 0.9 if "GraphQL" in text else 0.1

    memory = SessionVectorMemory.local(
        path=tmp_path / "s", user_id="ana", embeddings=real_embeddings, importance_scorer=scorer
    )
    memory.add_messages(SESSION, session_id="s1", chunking="exchange")
    assert len(scored) == 3
    assert sorted(d.metadata["importance"] for d in memory.list_memories()) == [0.1, 0.1, 0.9]
    bad = SessionVectorMemory.local(
        path=tmp_path / "b", user_id="ana", embeddings=real_embeddings, importance_scorer=lambda _: 7.0
    )
    with pytest.raises(InvalidMetadataError):
        bad.add_messages(SESSION[:2], session_id="s1")
    assert bad.count() == 0


def test_the_long_context_shortcut_sends_everything_in_time_order_when_it_fits(memory: SessionVectorMemory) -> None:
    everything = memory.invoke("units?", all_if_fits=2000)
    assert [d.metadata["retrieval_mode"] for d in everything] == ["all"] * 3
    assert [d.metadata["timestamp"][:10] for d in everything] == ["2026-03-02", "2026-03-03", "2026-03-04"]
    assert "score" not in everything[0].metadata
    assert everything[0].metadata["marker"] == "[S: 2026-03-02]"
    assert len(memory.invoke("units?", all_if_fits=50, k=1)) == 1  # does not fit: top-k
    assert len(memory.invoke("units?", all_if_fits=2000, topics=["porto"])) == 1

    model = GenericFakeChatModel(messages=iter([AIMessage("Metric."), AIMessage("Metric.")]))
    for long_context, mode in ((True, "all"), (False, "top_k")):
        graph = create_session_rag_graph(model, memory, long_context=long_context, memory_k=1).compile()
        out = graph.invoke(
            {"messages": [HumanMessage("Which units do I like?")]},
            {"configurable": {"user_id": "ana", "session_id": f"s-{mode}"}},
        )
        assert out["budget_report"]["memory_mode"] == mode
        assert len(out["memories"]) == (3 if mode == "all" else 1)


def test_daily_logs_are_lossless_and_rebuild_the_store(tmp_path: Path, real_embeddings: Any) -> None:
    from langchain_session_rag.memory.daily_log import read_daily_logs, rebuild_from_daily_logs

    logs = tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=tmp_path / "a", user_id="ana", embeddings=real_embeddings, daily_log_dir=logs
    )
    tricky = "Use ```python\nprint('x')\n``` then\n\n<!-- session-rag {} -->\n### not a heading"
    memory.add_messages(SESSION, session_id="s1", chunking="exchange")
    memory.add_messages(SESSION, session_id="s1", chunking="exchange")  # nothing new: nothing logged again
    memory.for_user("bob@example.com").add_messages(
        [{"role": "user", "content": tricky, "timestamp": "2026-03-05T09:00"},
         {"role": "assistant", "content": "Got it.", "name": "helper"}], session_id="b1", chunking="exchange",
    )  # fmt: skip
    assert sorted(p.name for p in (logs / "ana").iterdir()) == ["2026-03-02.md", "2026-03-03.md", "2026-03-04.md"]
    assert (logs / "bob%40example%2Ecom" / "2026-03-05.md").read_text().startswith("# 2026-03-05\n")
    logged = list(read_daily_logs(logs))
    assert len(logged) == 8
    assert [m.text for m in logged if m.user_id == "bob@example.com"] == [tricky, "Got it."]

    fresh = SessionVectorMemory.local(path=tmp_path / "b", user_id="ana", embeddings=real_embeddings)
    assert rebuild_from_daily_logs(logs, fresh, chunking="exchange") == {"ana": 6, "bob@example.com": 2}
    for user in ("ana", "bob@example.com"):
        before = {(d.id, d.page_content) for d in memory.for_user(user).list_memories(limit=100)}
        after = {(d.id, d.page_content) for d in fresh.for_user(user).list_memories(limit=100)}
        assert before == after


def test_short_words_stems_and_chunks_stored_before_scores_filter_as_documented(memory: SessionVectorMemory) -> None:
    assert len(memory.invoke("what about the API?", topics=["API"], k=10)) == 1
    assert len(memory.invoke("what about billing?", topics=["billings"], k=10)) == 1
    memory.add_messages(
        [{"role": "user", "content": "Our deployment pipeline deploys twice a day from the main branch."},
         {"role": "assistant", "content": "Twice-daily deploys from main: noted."}], session_id="s2",
    )  # fmt: skip
    assert len(memory.invoke("pipeline?", topics=["deployment"], k=10)) == 1
    # A chunk written before scores existed (no importance key) counts as the base importance, 0.2.
    old = memory.list_memories(limit=100)[-1]
    [stored] = memory.backend.fetch("ana", [old.id], with_embeddings=True)
    stored.metadata.pop("importance")
    memory.backend.delete("ana", [old.id])
    memory.backend.add("ana", [stored])
    memory.forget(ids=[])  # evict the replica: read the store again
    unscored = memory.for_user("ana")
    assert old.id in {d.id for d in unscored.invoke("anything", min_importance=0.1, k=10)}
    assert old.id not in {d.id for d in unscored.invoke("anything", min_importance=0.3, k=10)}


def test_daily_logs_survive_resends_edits_crlf_and_odd_user_ids(tmp_path: Path, real_embeddings: Any) -> None:
    from langchain_session_rag.memory.daily_log import read_daily_logs, rebuild_from_daily_logs

    logs = tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=tmp_path / "a", user_id="..", embeddings=real_embeddings, daily_log_dir=logs
    )
    question = {"role": "user", "id": "q1", "content": "crlf\r\nline and a long enough question to stand alone here",
                "timestamp": "2026-03-05T09:00"}  # fmt: skip
    memory.add_messages([question], session_id="s1", chunking="exchange")
    reply = {"role": "assistant", "id": "a1", "content": "A reply long enough to make this a real exchange chunk."}
    memory.add_messages([question, reply], session_id="s1", chunking="exchange")  # the trailing question resent
    edited = {**reply, "content": "An edited reply, long enough to make this a real exchange chunk too."}
    memory.add_messages([question, edited], session_id="s1", chunking="exchange")
    assert not (tmp_path / "2026-03-05.md").exists()
    assert [p.name for p in logs.iterdir()] == ["%2E%2E"]
    logged = list(read_daily_logs(logs))
    assert [(m.id, m.text[:12]) for m in logged] == [
        ("q1", "crlf\r\nline a"),
        ("a1", "An edited re"),  # an edit replaces the logged text: the old reply leaves the log too
    ]
    fresh = SessionVectorMemory.local(path=tmp_path / "b", user_id="..", embeddings=real_embeddings)
    assert rebuild_from_daily_logs(logs, fresh, chunking="exchange") == {"..": 2}
    assert {(d.id, d.page_content) for d in fresh.list_memories()} == {
        (d.id, d.page_content) for d in memory.list_memories()
    }


def test_the_shortcut_falls_back_to_top_k_when_the_budget_cannot_keep_it_all(memory: SessionVectorMemory) -> None:
    from langchain_session_rag import TokenBudget

    long_history = []
    for n in range(12):
        long_history += [HumanMessage(f"Question {n}: " + "words " * 200), AIMessage(f"Answer {n}: " + "words " * 200)]
    budget = TokenBudget(context_window=4096, reserve_for_answer=512, allocations=None)
    model = GenericFakeChatModel(messages=iter([AIMessage("Metric.")]))
    graph = create_session_rag_graph(model, memory, long_context=True, memory_k=1, budget=budget, window_turns=20)
    out = graph.compile().invoke(
        {"messages": [*long_history, HumanMessage("Which units do I like?")]},
        {"configurable": {"user_id": "ana", "session_id": "s9"}},
    )
    assert out["budget_report"]["memory_mode"] == "top_k"  # the whole memory was fetched, did not fit: top-k instead
    assert len(out["memories"]) == 1


def test_daily_logs_of_a_growing_topic_conversation_and_of_shortened_edits(
    tmp_path: Path, real_embeddings: Any
) -> None:
    from langchain_session_rag.memory.daily_log import read_daily_logs, rebuild_from_daily_logs

    logs = tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=tmp_path / "a", user_id="ana", embeddings=real_embeddings, daily_log_dir=logs
    )
    conversation: list[dict[str, Any]] = []
    for n in range(4):
        conversation += [
            {"role": "user", "id": f"h{n}", "content": f"Question number {n} about the billing API and its rollout."},
            {"role": "assistant", "id": f"a{n}", "content": f"Answer number {n}: the rollout is planned for week {n}."},
        ]
        memory.add_messages(conversation, session_id="s1", chunking="topic")
    assert sorted(m.id for m in read_daily_logs(logs)) == sorted(m["id"] for m in conversation)

    short = [
        {"role": "user", "id": "q1", "content": "first q EDITED"},
        {"role": "assistant", "id": "r1", "content": "ok"},
    ]
    memory.add_messages(short, session_id="s2", chunking="exchange")
    memory.add_messages([{**short[0], "content": "first"}, short[1]], session_id="s2", chunking="exchange")
    assert [m.text for m in read_daily_logs(logs) if m.id == "q1"] == ["first"]  # the edit replaced the old text
    fresh = SessionVectorMemory.local(path=tmp_path / "b", user_id="ana", embeddings=real_embeddings)
    rebuild_from_daily_logs(logs, fresh, chunking="exchange")
    assert fresh.list_memories(session_id="s2")[0].page_content.startswith("User: first\n")


def test_turns_in_the_window_take_no_top_k_slot(memory: SessionVectorMemory) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    model = GenericFakeChatModel(messages=iter([AIMessage("You like metric units, kilometres and Celsius.")] * 3))
    app = create_session_rag_graph(model, memory, memory_k=1, background_writes=False).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"user_id": "ana", "session_id": "s5", "thread_id": "t"}}
    for _ in range(2):
        out = app.invoke({"messages": [HumanMessage("Which units do I like, metric or imperial?")]}, config)
    # The first turn's exchange (in the window, and the closest match) does not take the only slot.
    assert [d.metadata["session_id"] for d in out["memories"]] == ["s1"]
    assert "metric units in every answer" in out["memories"][0].page_content


def test_an_edited_message_is_rewritten_in_topic_mode_too(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "t", user_id="ana", embeddings=real_embeddings)
    conversation: list[dict[str, Any]] = []
    for n in range(4):
        conversation += [
            {"role": "user", "id": f"h{n}", "content": f"Question {n}: the billing API returns error 500 on refunds."},
            {"role": "assistant", "id": f"a{n}", "content": f"Answer {n}: check the refund handler's timeout."},
        ]
    memory.add_messages(conversation, session_id="s", chunking="topic")
    chunks = memory.count()
    conversation[0] = {**conversation[0], "content": "Question 0: the billing API returns error 503 on refunds."}
    memory.add_messages(conversation, session_id="s", chunking="topic")
    texts = " ".join(d.page_content for d in memory.list_memories())
    assert "error 503" in texts
    assert "Question 0: the billing API returns error 500" not in texts
    assert memory.count() == chunks


def test_a_shortened_edit_is_rewritten_in_topic_mode(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "t", user_id="ana", embeddings=real_embeddings)
    conversation: list[dict[str, Any]] = []
    for n in range(4):
        conversation += [
            {"role": "user", "id": f"h{n}", "content": f"Question {n}: the billing API returns error 500 on refunds."},
            {"role": "assistant", "id": f"a{n}", "content": f"Answer {n}: check the refund handler's timeout."},
        ]
    conversation[-1] = {**conversation[-1], "content": "Answer 3: check the refund handler's timeout. Also the queue."}
    memory.add_messages(conversation, session_id="s", chunking="topic")
    conversation[-1] = {**conversation[-1], "content": "Answer 3: check the refund handler's timeout."}
    memory.add_messages(conversation, session_id="s", chunking="topic")
    assert not any("Also the queue." in d.page_content for d in memory.list_memories())
