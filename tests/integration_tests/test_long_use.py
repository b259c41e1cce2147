"""Long use through the graph on real parts: a fact asked 20 times survives the model's own answers, corrections win.

The real local model (SmolLM2 through llama.cpp) answers every ask; whatever it says (a non-answer, an invented
password) is stored as the graph stores it, the bundled embedding model embeds it, an embedded Chroma holds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.models.local_llm import LocalChatModel

FACT = "My wifi password is Tangerine-42."
ASK = "What is my wifi password?"


def turn(graph: Any, text: str, session: str, user: str = "alice") -> dict[str, Any]:
    return graph.invoke({"messages": [HumanMessage(text)]}, context={"user_id": user, "session_id": session})


def texts(out: dict[str, Any]) -> list[str]:
    return [d.page_content for d in out["memories"]]


def test_a_fact_asked_twenty_times_stays_on_top_whatever_the_real_model_answered(
    tmp_path: Path, real_embeddings
) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    graph = create_session_rag_graph(LocalChatModel(max_tokens=24), memory, background_writes=False).compile()
    turn(graph, FACT, "s00")
    for n in range(1, 21):
        turn(graph, ASK, f"s{n:02d}")
    out = turn(graph, ASK, "s21")
    recalled = texts(out)
    assert any(FACT in t for t in recalled[:3]), recalled
    first_fact = next(i for i, t in enumerate(recalled) if FACT in t)
    kinds = [d.metadata["worth"] for d in out["memories"]]
    assert "claim" not in kinds[:first_fact]  # nothing the model said outranks what the user said
    assert kinds.count("question") <= 1  # twenty unanswered asks are one memory
    report = out["budget_report"]["recalled"]
    assert [r["marker"] for r in report] == [d.metadata["marker"] for d in out["memories"]]
    assert "stated by the user" in report[first_fact]["why"]


def test_without_the_policy_the_same_history_buries_the_fact(tmp_path: Path, real_embeddings) -> None:
    """The failure the policy fixes, on the same parts: twenty non-answers fill the four slots."""
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")] + [AIMessage("Sorry, I'm not sure.")] * 22))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    turn(graph, FACT, "s00")
    for n in range(1, 21):
        turn(graph, ASK, f"s{n:02d}")
    before = memory.for_user("alice").invoke(ASK, recall_policy=None, k=3, source_type="session")
    assert not any(FACT in d.page_content for d in before)
    after = memory.for_user("alice").invoke(ASK, k=3, source_type="session")
    assert FACT in after[0].page_content


def test_a_correction_ranks_first_and_the_old_fact_is_marked_superseded_in_the_prompt(
    tmp_path: Path, real_embeddings
) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    replies = iter([AIMessage(a) for a in ("Noted.", "Your wifi password is Falcon-19.", "Updated.", "Plum-7.")])
    model = GenericFakeChatModel(messages=replies)
    graph = create_session_rag_graph(model, memory, background_writes=False, keep_prompt=True).compile()
    turn(graph, FACT, "s1")
    turn(graph, ASK, "s2")  # the model invents a password
    turn(graph, "The wifi password changed to Plum-7.", "s3")
    out = turn(graph, ASK, "s4")
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


def test_the_graph_has_a_similarity_floor_by_default(tmp_path: Path, real_embeddings) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage("Sounds good.")] * 4))
    graph = create_session_rag_graph(model, memory, background_writes=False).compile()
    turn(graph, "I'm thinking about switching my editor to Neovim.", "s1")
    turn(graph, "We might visit Porto in spring.", "s2")
    out = turn(graph, "What is my cat called?", "s3")
    assert out["memories"] == []
    unfloored = create_session_rag_graph(model, memory, score_threshold=-1, background_writes=False).compile()
    assert turn(unfloored, "What is my cat called?", "s4")["memories"]


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
