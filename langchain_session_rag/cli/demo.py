"""The demo: a bundled multi-session sample ingested into an embedded store, then recall questions answered."""

from __future__ import annotations

import json
import textwrap
import time
from datetime import timedelta
from importlib import resources
from typing import Any

import click

from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.cli.app import cli


def load_sample() -> dict[str, Any]:
    """Return the bundled sample: six sessions over two months, with a decision that changes."""
    text = resources.files("langchain_session_rag").joinpath("data/sample_sessions.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _show(docs: list[Any], width: int) -> None:
    if not docs:
        print("    (nothing retrieved)")
    for doc in docs:
        meta = doc.metadata
        scores = f"score={meta['score']:.3f}  similarity={meta['similarity']:.3f}  lexical={meta.get('lexical', 0):.2f}"
        print(f"    {meta['marker']}  {scores}  session={meta['session_id']}")
        for line in doc.page_content.splitlines()[:2]:
            print(textwrap.indent(textwrap.shorten(line, width=width, placeholder=" …"), "      "))


def run_demo(
    path: str,
    *,
    k: int = 3,
    half_life_days: float = 30.0,
    score_threshold: float = 0.3,
    width: int = 110,
    with_llm: bool = True,
) -> None:
    """Ingest the sample conversations into an embedded store at ``path`` and query them."""
    from langchain_session_rag.memory.retriever import SessionVectorMemory  # noqa: PLC0415

    sample = load_sample()
    started = time.perf_counter()
    memory = SessionVectorMemory.local(
        path=path, user_id=sample["user_id"], k=k, half_life_days=half_life_days, score_threshold=score_threshold
    )
    chunks = 0
    for session in sample["sessions"]:
        ts = parse_timestamp(session["date"])
        messages = [
            {**m, "timestamp": (ts + timedelta(minutes=2 * i)).isoformat()} for i, m in enumerate(session["messages"])
        ]
        chunks += len(memory.add_messages(messages, session_id=session["session_id"]))
    elapsed = time.perf_counter() - started
    as_of = parse_timestamp(sample["sessions"][-1]["date"]) + timedelta(days=1)
    print(
        f"Stored {len(sample['sessions'])} sessions as {chunks} chunks ({memory.chunking} chunking) for user "
        f"{sample['user_id']!r} in {path} ({elapsed:.1f} s, embedding model {memory.model_id})."
    )
    w, rw = memory.lexical_weight, memory.recency_weight
    print(
        f"Retrieval: top {k} with similarity >= {score_threshold:g}, hybrid BM25 weight {w:g}, recency half-life "
        f"{half_life_days:g} days (weight {rw:g}), as of {as_of.date()}:\n"
        f"  score = ({1 - w:g} x similarity + {w:g} x lexical) x ({1 - rw:g} + {rw:g} x 0.5 ** (age_days / "
        f"{half_life_days:g}))\n"
    )
    for question in sample["questions"]:
        print(f"Q: {question}")
        _show(memory.invoke(question, now=as_of), width)
        print()
    relational = "What does the analytics service use now, and what did it use before?"
    print(f"Relations (no model call): {relational}")
    for line in memory.relation_lines(relational) or ["(none found)"]:
        print(f"  {line}")
    print()
    stranger = memory.for_user("bob")
    print(
        f"Scoping: user 'bob' asks the first question and gets {len(stranger.invoke(sample['questions'][0]))} results."
    )
    if with_llm:
        _graph_turn(memory, sample["questions"][0])


def _graph_turn(memory: Any, question: str) -> None:
    """One turn of the LangGraph graph with a real model: Ollama when it answers, else SmolLM2 in process."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415

    from langchain_session_rag.errors import MissingDependencyError  # noqa: PLC0415
    from langchain_session_rag.graph import create_session_rag_graph  # noqa: PLC0415
    from langchain_session_rag.models.local_llm import pick_chat_model  # noqa: PLC0415
    from langchain_session_rag.prompt.budget import TokenBudget  # noqa: PLC0415

    started = time.perf_counter()
    try:
        choice = pick_chat_model()
        model = choice.model
        graph = create_session_rag_graph(model, memory, budget=TokenBudget(context_window=2048, reserve_for_answer=256))
        out = graph.compile().invoke(
            {"messages": [HumanMessage(question)]}, context={"user_id": memory.user_id, "session_id": "demo-graph"}
        )
    except MissingDependencyError as exc:
        print(f"\n(Skipping the graph turn: {exc})")
        return
    finally:
        memory.forget(session_id="demo-graph")  # leave the demo store as the sample made it
    report = out["budget_report"]
    took = time.perf_counter() - started
    why = f"; {choice.fallback_reason}" if choice.fallback_reason else ""
    print(f"\nOne turn of the LangGraph graph with {choice.description}{why} ({took:.1f} s):")
    print(f"  question: {question}")
    print(f"  retrieved: {', '.join(d.metadata['marker'] for d in out['memories'])}")
    print(f"  prompt: {report['total']} of {report['limit']} tokens; model calls this turn: {out['llm_calls']}")
    answer = textwrap.shorten(out["messages"][-1].text, width=160, placeholder=" …")
    label = "answer (a 135M model: weak, but real)" if choice.backend == "local" else "answer"
    print(f"  {label}: {answer}")


@cli.command()
@click.option("--path", default=".demo_memory", show_default=True, help="Store folder of the demo.")
@click.option("-k", "--k", "k", type=click.IntRange(1, 50), default=3, show_default=True, help="Memories per question.")
@click.option("--half-life-days", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Recency half-life in days.")  # fmt: skip
@click.option("--threshold", type=click.FloatRange(-1.0, 1.0), default=0.3, show_default=True,
              help="Minimum cosine similarity.")  # fmt: skip
@click.option("--no-llm", is_flag=True, help="Skip the graph turn with a real chat model.")
def demo(path: str, k: int, half_life_days: float, threshold: float, no_llm: bool) -> None:
    """Ingest a bundled multi-session sample into an embedded store and answer recall questions."""
    run_demo(path, k=k, half_life_days=half_life_days, score_threshold=threshold, with_llm=not no_llm)
