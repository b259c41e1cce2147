"""A cache hit against a full turn, through the graph, with the real embedded model and a real local LLM.

One user asks 12 questions in session 1 (every turn a miss: retrieval, prompt, model, store, cache update),
then the same questions in session 2 (every turn a hit: the turn ends at ``cache_lookup``; the question is
embedded, as on any later visit). The model is
``default_chat_model()``: Ollama when one answers, else SmolLM2-135M through llama.cpp (``max_tokens=64``).
Writes results/cache_latency.json. Run: bash scripts/benchmark.sh cache_latency
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from langchain_session_rag import SemanticCache, SessionVectorMemory, get_default_embeddings
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.models.local_llm import LocalChatModel, default_chat_model

RESULTS = Path(__file__).parent / "results"
QUESTIONS = [
    "How do I rotate the API keys of the billing service?",
    "Which port does the staging database listen on?",
    "What is the retention policy for application logs?",
    "How do I add a new member to the on-call rotation?",
    "Where are the Terraform modules for the network stored?",
    "How do I rebuild the search index after a schema change?",
    "What license does the frontend design system use?",
    "How do I request access to the analytics warehouse?",
    "Which team owns the payments webhook handler?",
    "How are feature flags cleaned up after a launch?",
    "What is the procedure for a database failover drill?",
    "How do I profile memory usage of the ingestion worker?",
]


def ms(samples: list[float]) -> dict[str, float]:
    values = sorted(1000 * s for s in samples)
    return {"p50": round(statistics.median(values), 1), "p95": round(values[int(0.95 * (len(values) - 1))], 1)}


def main() -> None:
    embeddings = get_default_embeddings()
    embeddings.embed_query("warm up")
    model = default_chat_model()
    if isinstance(model, LocalChatModel):
        model = model.model_copy(update={"max_tokens": 64})
    root = Path(tempfile.mkdtemp(prefix="cache-latency-"))
    memory = SessionVectorMemory.local(path=root / "memory", user_id="x", embeddings=embeddings)
    turns: dict[str, list[float]] = {"miss": [], "hit": []}
    reasons: list[Any] = []
    for session, kind in (("s1", "miss"), ("s2", "hit")):
        # A new cache object per session: it has not seen the questions' vectors, so a hit embeds the question
        # as a later visit would (a verbatim repeat within the same object skips that embedding).
        cache = SemanticCache.local(path=root / "cache", user_id="x", embeddings=embeddings)
        graph = create_session_rag_graph(model, memory, cache=cache).compile()
        for question in QUESTIONS:
            t0 = time.perf_counter()
            context = {"user_id": "ana", "session_id": session}
            out = graph.invoke({"messages": [HumanMessage(question)]}, context=context)
            turns[kind].append(time.perf_counter() - t0)
            reasons.append(out["cache"]["reason"])
    hits = sum(1 for r in reasons[len(QUESTIONS) :] if r == "hit")
    payload = {
        "benchmark": "cache_latency",
        "date": time.strftime("%Y-%m-%d"),
        "model": type(model).__name__,
        "questions": len(QUESTIONS),
        "hits_in_session_2": hits,
        "full_turn_ms": ms(turns["miss"]),
        "cache_hit_turn_ms": ms(turns["hit"]),
        "speedup_p50": round(statistics.median(turns["miss"]) / statistics.median(turns["hit"]), 1),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cache_latency.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
