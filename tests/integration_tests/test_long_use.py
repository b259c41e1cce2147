"""Long use through the graph on real parts: a fact asked 20 times survives the model's own answers, corrections win.

The bundled embedding model embeds every turn and an embedded Chroma holds it (one store for the module, each test
with users of its own). The model answering the twenty asks is adversarial and scripted: it invents passwords,
misquotes the fact and says it does not know, in turn (a stronger test of the ranking than a small real model,
whose answers are mostly non-answers); whatever it says is stored as the graph stores it. One short run with the
real local model (SmolLM2 through llama.cpp) checks the same on a real model's words.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.models.local_llm import LocalChatModel

FACT = "My wifi password is Tangerine-42."
ASK = "What is my wifi password?"
ADVERSARY = [  # wrong answers a model gives: inventions, a near-miss of the fact, a non-answer, the question back
    "Your wifi password is Falcon-19.",
    "Your wifi password is Tangerine-24.",
    "I'm sorry, I don't know your wifi password.",
    "What is your wifi password?",
    "The password for your wifi is Password123.",
]


def turn(graph: Any, text: str, session: str, user: str) -> dict[str, Any]:
    return graph.invoke({"messages": [HumanMessage(text)]}, context={"user_id": user, "session_id": session})


def texts(out: dict[str, Any]) -> list[str]:
    return [d.page_content for d in out["memories"]]


def _asked_repeatedly(model: Any, memory: SessionVectorMemory, user: str, asks: int, *,
                      last: Any = None) -> dict[str, Any]:  # fmt: skip
    """The fact told once, then asked ``asks`` times in new sessions; the last ask's output.

    ``last``: a model answering the last ask instead (what is checked, the memories recalled for it, comes before
    its answer), with the same budget.
    """
    graph = create_session_rag_graph(model, memory, background_writes=False)
    app = graph.compile()
    turn(app, FACT, "s00", user)
    for n in range(1, asks + 1):
        turn(app, ASK, f"s{n:02d}", user)
    if last is not None:
        app = create_session_rag_graph(last, memory, background_writes=False, budget=graph.budget).compile()
    return turn(app, ASK, f"s{asks + 1:02d}", user)


def _assert_the_fact_stays_on_top(out: dict[str, Any]) -> None:
    recalled = texts(out)
    assert any(FACT in t for t in recalled[:3]), recalled
    first_fact = next(i for i, t in enumerate(recalled) if FACT in t)
    kinds = [d.metadata["worth"] for d in out["memories"]]
    assert "claim" not in kinds[:first_fact]  # nothing the model said outranks what the user said
    report = out["budget_report"]["recalled"]
    assert [r["marker"] for r in report] == [d.metadata["marker"] for d in out["memories"]]
    assert "stated by the user" in report[first_fact]["why"]


def test_a_fact_asked_twenty_times_stays_on_top_whatever_an_adversarial_model_answered(
    memory: SessionVectorMemory,
) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")] + [AIMessage(a) for a in
                                                                         itertools.islice(itertools.cycle(ADVERSARY), 21)]))  # fmt: skip
    out = _asked_repeatedly(model, memory, "adversary-alice", 20)
    _assert_the_fact_stays_on_top(out)
    kinds = [d.metadata["worth"] for d in out["memories"]]
    assert kinds.count("question") <= 1  # the unanswered asks are one memory
    assert not any("Falcon-19" in t or "Tangerine-24" in t for t in texts(out)[:1]), "no invention ranks first"


def test_a_fact_asked_again_stays_on_top_whatever_the_real_model_answered(memory: SessionVectorMemory) -> None:
    # the real model answers the fact and the first ask (both stored); the last ask's answer is not what is checked
    last = GenericFakeChatModel(messages=iter([AIMessage("Noted.")]))
    out = _asked_repeatedly(LocalChatModel(max_tokens=16), memory, "real-alice", 1, last=last)
    _assert_the_fact_stays_on_top(out)


def test_without_the_policy_the_same_history_buries_the_fact(memory: SessionVectorMemory) -> None:
    """The failure the policy fixes, on the same parts: twenty non-answers fill the four slots."""
    user = "nopolicy-alice"
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")] + [AIMessage("Sorry, I'm not sure.")] * 22))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    turn(graph, FACT, "s00", user)
    for n in range(1, 21):
        turn(graph, ASK, f"s{n:02d}", user)
    before = memory.for_user(user).invoke(ASK, recall_policy=None, k=3, source_type="session")
    assert not any(FACT in d.page_content for d in before)
    after = memory.for_user(user).invoke(ASK, k=3, source_type="session")
    assert FACT in after[0].page_content


def test_a_correction_ranks_first_and_the_old_fact_is_marked_superseded_in_the_prompt(
    memory: SessionVectorMemory,
) -> None:
    user = "correction-alice"
    replies = iter([AIMessage(a) for a in ("Noted.", "Your wifi password is Falcon-19.", "Updated.", "Plum-7.")])
    model = GenericFakeChatModel(messages=replies)
    graph = create_session_rag_graph(model, memory, background_writes=False, keep_prompt=True).compile()
    turn(graph, FACT, "s1", user)
    turn(graph, ASK, "s2", user)  # the model invents a password
    turn(graph, "The wifi password changed to Plum-7.", "s3", user)
    out = turn(graph, ASK, "s4", user)
    recalled = texts(out)
    assert "Plum-7" in recalled[0]
    old = next(d for d in out["memories"] if FACT in d.page_content)
    assert "superseded on" in old.metadata["marker"]
    invented = next(d for d in out["memories"] if "Falcon-19" in d.page_content)
    assert invented.metadata["marker"].endswith(", said by the assistant]")
    assert recalled.index(invented.page_content) > recalled.index(old.page_content)
    prompt = str(out["prompt"])
    assert old.metadata["marker"] in prompt
    assert invented.metadata["marker"] in prompt


def test_the_graph_has_a_similarity_floor_by_default(memory: SessionVectorMemory) -> None:
    user = "floor-alice"
    model = GenericFakeChatModel(messages=iter([AIMessage("Sounds good.")] * 4))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    turn(graph, "I'm thinking about switching my editor to Neovim.", "s1", user)
    turn(graph, "We might visit Porto in spring.", "s2", user)
    out = turn(graph, "What is my cat called?", "s3", user)
    assert out["memories"] == []
    unfloored = create_session_rag_graph(model, memory, score_threshold=-1, background_writes=False).compile()
    assert turn(unfloored, "What is my cat called?", "s4", user)["memories"]


def test_sixty_repeats_do_not_push_the_fact_out_of_the_candidates(tmp_path: Path, real_embeddings) -> None:
    """More repeats than the search fetches (``fetch_k``): the statements are searched on their own as well."""
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice", embeddings=real_embeddings, fetch_k=20)
    messages = [{"role": "user", "content": FACT, "id": "u0", "timestamp": "2026-01-01T09:00:00"},
                {"role": "assistant", "content": "Noted.", "id": "a0"}]  # fmt: skip
    memory.add_messages(messages, session_id="s0", chunking="exchange")
    for n in range(1, 61):
        asked = [{"role": "user", "content": ASK, "id": f"u{n}", "timestamp": f"2026-02-01T09:{n % 60:02d}:00"},
                 {"role": "assistant", "content": "I don't have that information.", "id": f"a{n}"}]  # fmt: skip
        memory.add_messages(asked, session_id=f"s{n}", chunking="exchange")
    docs = memory.invoke(ASK, k=3)
    assert FACT in docs[0].page_content
    assert docs[1].metadata["asked_count"] >= 20  # the folded copies among the candidates
