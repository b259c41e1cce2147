"""Per-turn framework overhead of the session-RAG graph: everything but the model and embedding calls.

A zero-latency fake chat model and precomputed embeddings (every text embedded once up front, then served
from a dict) isolate the graph, the store, BM25, token counting and the prompt. Turns run back to back, so a
write still in the background when the next turn starts competes with it: ``mean`` and
``amortized_ms_per_turn`` (wall time of all turns plus the final ``flush()``, per turn) carry the full store
cost. Also: per-turn time across 1,000 turns of one thread with ``SqliteSaver``.
Writes results/graph_overhead.json. Run: bash scripts/benchmark.sh graph_overhead
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.graph import create_session_rag_graph

RESULTS = Path(__file__).parent / "results"
TURNS = 200
LONG_TURNS = 1_000


class Precomputed(Embeddings):
    """Serves vectors computed before the timed loop; fails loudly on an unknown text."""

    def __init__(self, texts: list[str]) -> None:
        inner = get_default_embeddings()
        self.model_id = inner.model_id
        unique = list(dict.fromkeys(texts))
        self.table = dict(zip(unique, inner.embed_documents(unique), strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def dialogue(turns: int) -> tuple[list[str], list[str]]:
    questions = [f"What did we decide about topic {i % 17} in meeting {i}?" for i in range(turns)]
    answers = [f"In meeting {i} we decided to revisit topic {i % 17} next week." for i in range(turns)]
    return questions, answers


def embeddings_for(turns: int) -> Precomputed:
    questions, answers = dialogue(turns)
    return Precomputed(questions + [f"User: {q}\nAssistant: {a}" for q, a in zip(questions, answers, strict=True)])


def stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in samples_s)
    return {
        "p50": round(statistics.median(ms), 2),
        "p95": round(ms[int(0.95 * (len(ms) - 1))], 2),
        "mean": round(statistics.fmean(ms), 2),
    }


def per_turn(
    embeddings: Precomputed, *, background: bool, use_async: bool = False, turns: int = TURNS
) -> dict[str, Any]:
    """Back-to-back turns in fresh threads (no checkpointer) of one user, with ``invoke`` or ``ainvoke``."""
    questions, answers = dialogue(turns)
    memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="x", embeddings=embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))
    graph = create_session_rag_graph(model, memory, background_writes=background).compile()
    context = {"user_id": "alice", "session_id": "s1"}

    async def turns_async() -> list[float]:
        out = []
        for q in questions:
            t0 = time.perf_counter()
            await graph.ainvoke({"messages": [HumanMessage(q)]}, context=context)
            out.append(time.perf_counter() - t0)
        return out

    started = time.perf_counter()
    if use_async:
        times = asyncio.run(turns_async())
    else:
        times = []
        for q in questions:
            t0 = time.perf_counter()
            graph.invoke({"messages": [HumanMessage(q)]}, context=context)
            times.append(time.perf_counter() - t0)
    memory.flush()
    wall = time.perf_counter() - started
    if memory.for_user("alice").count() != turns:
        msg = "an exchange did not reach the store"
        raise RuntimeError(msg)
    return {
        "background_writes": background,
        "async": use_async,
        "per_turn_ms": stats(times[10:]),
        "amortized_ms_per_turn": round(1000 * wall / turns, 2),
    }


def long_thread(embeddings: Precomputed, turns: int = LONG_TURNS) -> dict[str, Any]:
    """One thread of ``turns`` turns with SqliteSaver: does a turn get slower as the thread grows?"""
    questions, answers = dialogue(turns)
    folder = Path(tempfile.mkdtemp())
    memory = SessionVectorMemory.local(path=folder / "memory", user_id="x", embeddings=embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))
    times = []
    with SqliteSaver.from_conn_string(str(folder / "checkpoints.sqlite")) as saver:
        graph = create_session_rag_graph(model, memory).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "one-long-thread"}}
        for q in questions:
            t0 = time.perf_counter()
            graph.invoke({"messages": [HumanMessage(q)]}, config, context={"user_id": "alice", "session_id": "s1"})
            times.append(time.perf_counter() - t0)
    memory.flush()
    early, late = stats(times[5:25]), stats(times[-20:])
    return {
        "turns": turns,
        "turn_10_ms": early,
        "turn_1000_ms": late,
        "ratio_p50": round(late["p50"] / early["p50"], 2),
        "series_ms": [round(1000 * t, 2) for t in times],
        "checkpoint_db_mb": round((folder / "checkpoints.sqlite").stat().st_size / 2**20, 2),
    }


def run(*, long_turns: int = LONG_TURNS) -> dict[str, Any]:
    embeddings = embeddings_for(max(TURNS, long_turns))
    return {
        "benchmark": "graph_overhead",
        "date": time.strftime("%Y-%m-%d"),
        "turns": TURNS,
        "note": "fake zero-latency model, precomputed embeddings, embedded Chroma, turns back to back",
        "no_checkpointer": [
            per_turn(embeddings, background=True),
            per_turn(embeddings, background=True, use_async=True),
            per_turn(embeddings, background=False),
        ],
        "sqlite_long_thread": long_thread(embeddings, long_turns),
    }


def main() -> None:
    result = run(long_turns=int(sys.argv[1]) if len(sys.argv) > 1 else LONG_TURNS)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    long = {k: v for k, v in result["sqlite_long_thread"].items() if k != "series_ms"}
    shown = {**result, "sqlite_long_thread": long}
    print(json.dumps(shown, indent=2))


if __name__ == "__main__":
    main()
