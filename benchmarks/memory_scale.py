"""Ingest throughput and user-scoped retrieval latency of SessionVectorMemory at N stored chunks.

Data: the LoCoMo dev conversations, replayed under many users (speaker names varied per user),
ingested through the public API with the real embedded model into an embedded Chroma.
Run: .venv/bin/python benchmarks/memory_scale.py [--chunks 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import locomo_data

from langchain_session_rag import SessionVectorMemory, get_default_embeddings

NAMES = [
    "Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Kira", "Leo", "Maya", "Nils",
    "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wes", "Xena", "Yusuf", "Zoe",
]  # fmt: skip
RESULTS = Path(__file__).parent / "results"


def user_sessions(conversations: list[locomo_data.Conversation], user: int) -> list[tuple[str, list[dict[str, Any]]]]:
    conv = conversations[user % len(conversations)]
    new_a, new_b = NAMES[(2 * user) % len(NAMES)], NAMES[(2 * user + 1) % len(NAMES)]
    old_a, old_b = conv.speakers

    def rename(text: str) -> str:
        return text.replace(old_a, new_a).replace(old_b, new_b)

    return [
        (s.session_id, [{**m, "name": rename(m["name"]), "content": rename(m["content"])} for m in s.messages])
        for s in conv.sessions
    ]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 3),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 3),
        "mean_ms": round(1000 * statistics.fmean(ordered), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--chunking", choices=["exchange", "topic"], default="topic")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", default=str(RESULTS / "memory_scale.json"))
    args = parser.parse_args()
    conversations = locomo_data.load()
    questions = [q.question for c in conversations for q in c.questions]
    embeddings = get_default_embeddings()
    embeddings.embed_query("warm up")  # load the model outside the timings

    workdir = Path(tempfile.mkdtemp(prefix="session-rag-bench-"))
    memory = SessionVectorMemory.local(
        path=workdir / "sharded", user_id="u0000", embeddings=embeddings, chunking=args.chunking
    )
    stored, messages, users = 0, 0, 0
    started = time.perf_counter()
    while stored < args.chunks:
        view = memory.for_user(f"u{users:04d}")
        for session_id, msgs in user_sessions(conversations, users):
            stored += len(view.add_messages(msgs, session_id=session_id))
            messages += len(msgs)
        users += 1
    ingest_s = time.perf_counter() - started

    # The same records in one collection (shards=1), vectors copied, for the `where`-filter baseline.
    single = SessionVectorMemory.local(
        path=workdir / "single", user_id="u0000", embeddings=embeddings, shards=1, chunking=args.chunking
    )
    for u in range(users):
        uid = f"u{u:04d}"
        single.backend.add(uid, memory.backend.get(uid, {}, with_embeddings=True))

    rng = random.Random(7)
    plan = [(f"u{rng.randrange(users):04d}", rng.choice(questions)) for _ in range(args.queries)]
    vectors = embeddings.embed_documents([q for _, q in plan])
    layouts: dict[str, Any] = {}
    for name, mem in (("sharded_32", memory), ("single_collection_where", single)):
        timings: dict[str, list[float]] = {"invoke_hybrid": [], "invoke_dense": [], "store_query_only": []}
        for (uid, question), vector in zip(plan, vectors, strict=True):
            view = mem.for_user(uid)
            for label, weight in (("invoke_hybrid", 0.3), ("invoke_dense", 0.0)):
                t0 = time.perf_counter()
                docs = view.invoke(question, k=5, lexical_weight=weight)
                timings[label].append(time.perf_counter() - t0)
                if any(d.metadata["user_id"] != uid for d in docs):
                    msg = f"scope violated for {uid}"
                    raise RuntimeError(msg)
            t0 = time.perf_counter()
            view.backend.query(uid, question, vector, 5, {})
            timings["store_query_only"].append(time.perf_counter() - t0)
        layouts[name] = {label: percentiles(values) for label, values in timings.items()}

    result = {
        "benchmark": "memory_scale",
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": {p: version(p) for p in ("chromadb", "langchain-core", "sentence-transformers", "torch")},
        "embedding_model": memory.model_id,
        "chunking": args.chunking,
        "stored_chunks": stored,
        "users": users,
        "messages": messages,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_chunks_per_s": round(stored / ingest_s, 1),
        "ingest_messages_per_s": round(messages / ingest_s, 1),
        "queries": args.queries,
        "k": 5,
        "retrieval": layouts,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
