"""Command line: ``session-rag demo`` ingests a bundled multi-session sample and answers recall questions."""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from datetime import timedelta
from importlib import resources
from typing import Any

from langchain_session_rag._time import parse_timestamp

__all__ = ["load_sample", "main", "run_demo"]


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
    from langchain_session_rag.models.local_llm import default_chat_model  # noqa: PLC0415
    from langchain_session_rag.prompt.budget import TokenBudget  # noqa: PLC0415

    started = time.perf_counter()
    try:
        model = default_chat_model()
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
    print(f"\nOne turn of the LangGraph graph with {type(model).__name__} ({time.perf_counter() - started:.1f} s):")
    print(f"  question: {question}")
    print(f"  retrieved: {', '.join(d.metadata['marker'] for d in out['memories'])}")
    print(f"  prompt: {report['total']} of {report['limit']} tokens; model calls this turn: {out['llm_calls']}")
    answer = textwrap.shorten(out["messages"][-1].text, width=160, placeholder=" …")
    print(f"  answer (a 135M model: weak, but real): {answer}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``session-rag`` command."""
    parser = argparse.ArgumentParser(prog="session-rag", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="ingest a bundled multi-session sample and answer recall questions")
    demo.add_argument("--path", default=".demo_memory", help="store folder (default: .demo_memory)")
    demo.add_argument("--k", type=int, default=3, help="memories per question (default: 3)")
    demo.add_argument("--half-life-days", type=float, default=30.0, help="recency half-life (default: 30)")
    demo.add_argument("--threshold", type=float, default=0.3, help="minimum cosine similarity (default: 0.3)")
    demo.add_argument("--no-llm", action="store_true", help="skip the graph turn with a real chat model")
    args = parser.parse_args(argv)
    if args.command == "demo":
        run_demo(
            args.path,
            k=args.k,
            half_life_days=args.half_life_days,
            score_threshold=args.threshold,
            with_llm=not args.no_llm,
        )


if __name__ == "__main__":
    main()
