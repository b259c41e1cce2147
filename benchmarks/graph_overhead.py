"""Per-turn framework overhead of the session-RAG graph: everything but the model and embedding calls.

A zero-latency fake chat model and precomputed embeddings (every text embedded once up front, then served
from a dict) isolate the graph, Chroma, BM25, token counting and storage. Writes results/graph_overhead.json.
Run: bash scripts/benchmark.sh graph_overhead
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.graph import create_session_rag_graph

RESULTS = Path(__file__).parent / "results"
TURNS = 200


class Precomputed(Embeddings):
    """Serves vectors computed before the timed loop; fails loudly on an unknown text."""

    def __init__(self, texts: list[str]) -> None:
        inner = get_default_embeddings()
        self.model_id = inner.model_id
        self.table = dict(zip(texts, inner.embed_documents(texts), strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def main() -> None:
    questions = [f"What did we decide about topic {i % 17} in meeting {i}?" for i in range(TURNS)]
    answers = [f"In meeting {i} we decided to revisit topic {i % 17} next week." for i in range(TURNS)]
    texts = questions + [f"User: {q}\nAssistant: {a}" for q, a in zip(questions, answers, strict=True)]
    embeddings = Precomputed(texts)
    memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="x", embeddings=embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))
    graph = create_session_rag_graph(model, memory).compile()
    times = []
    for q in questions:
        t0 = time.perf_counter()
        graph.invoke({"messages": [HumanMessage(q)]}, context={"user_id": "alice", "session_id": "s1"})
        times.append(time.perf_counter() - t0)
    steady = sorted(times[10:])
    result = {
        "benchmark": "graph_overhead",
        "date": time.strftime("%Y-%m-%d"),
        "turns": TURNS,
        "note": "fake zero-latency model, precomputed embeddings, no checkpointer, embedded Chroma",
        "per_turn_ms": {
            "p50": round(1000 * statistics.median(steady), 2),
            "p95": round(1000 * steady[int(0.95 * (len(steady) - 1))], 2),
            "mean": round(1000 * statistics.fmean(steady), 2),
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
