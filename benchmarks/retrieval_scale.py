"""User-scoped retrieval latency at 1k, 10k and 100k stored chunks over 100 users, side by side.

Systems, same embeddings (all-MiniLM-L6-v2), same chunks, same queries, k=4:
- ours: ``SessionVectorMemory.local`` (sharded embedded Chroma + in-process replica, hybrid ranking by default;
  the dense-only setting ``lexical_weight=0`` is measured too);
- ``langchain-chroma``: one ``Chroma`` collection, ``similarity_search_by_vector(..., filter={"user_id": u})``;
- LangGraph ``InMemoryStore(index=...)``: one namespace per user, ``store.search(ns, query=q, limit=4)``.

Data: LoCoMo dev turns paired into exchanges (``../shared/data/locomo``); each user gets its own random sample
of them, as its own messages (ids differ per user). Every distinct text is embedded once with the real model
(cached), so "without query embedding" serves query vectors from that cache and "with query embedding" calls the
model for every query. Each system is warmed with one query per user first (ours loads the user's replica on
it: reported as ``first_query_per_user``). Writes results/retrieval_scale.json.
Run: bash scripts/benchmark.sh retrieval_scale [--max 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import locomo_data
from bench_embeddings import CachedEmbeddings
from langchain_chroma import Chroma
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_session_rag import ExchangeChunker, SessionVectorMemory, get_default_embeddings
from langchain_session_rag.stores.adapter import open_chroma_client

RESULTS = Path(__file__).parent / "results"
USERS = 100
QUERIES = 200
K = 4


def exchanges(conversations: list[locomo_data.Conversation]) -> list[tuple[str, str]]:
    pairs = []
    for conv in conversations:
        for session in conv.sessions:
            msgs = session.messages
            pairs.extend((msgs[i]["content"], msgs[i + 1]["content"]) for i in range(0, len(msgs) - 1, 2))
    return pairs


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in samples_s)
    return {"p50": round(statistics.median(ms), 3), "p95": round(ms[int(0.95 * (len(ms) - 1))], 3)}


def timed(queries: list[tuple[str, str]], search: Callable[[str, str], Any]) -> list[float]:
    out = []
    for user, text in queries:
        t0 = time.perf_counter()
        search(user, text)
        out.append(time.perf_counter() - t0)
    return out


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


COLD = """
import json, sys, time
from langchain_core.embeddings import Embeddings
from langchain_session_rag import SessionVectorMemory

class Table(Embeddings):
    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    def __init__(self, table): self.table = table
    def embed_documents(self, texts): return [self.table[t] for t in texts]
    def embed_query(self, text): return self.table[text]

args = json.loads(sys.stdin.read())
memory = SessionVectorMemory.local(path=args["path"], user_id="u000", embeddings=Table(args["table"]))
out = []
for user in args["users"]:
    t0 = time.perf_counter()
    memory.for_user(user).invoke(args["query"], k=4)
    out.append(time.perf_counter() - t0)
peak = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM"))  # this process only
print(json.dumps({"seconds": out, "peak_rss_mb": peak / 1024}))
"""


def cold_start(path: Path, users: list[str], query: str) -> dict[str, float]:
    """First query of each user in a new process over the existing store (loads each user's replica).

    Also the peak RSS of that process: our memory alone, every user's replica loaded.
    """
    vector = get_default_embeddings().embed_query(query)
    payload = json.dumps({"path": str(path), "users": users, "query": query, "table": {query: vector}})
    done = subprocess.run(
        [sys.executable, "-c", COLD], input=payload, capture_output=True, text=True, check=True, timeout=600
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {**percentiles(got["seconds"]), "peak_rss_mb": round(got["peak_rss_mb"], 1)}


def main() -> None:  # noqa: PLR0915 - one linear measurement script
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max", type=int, default=100_000, help="largest total chunk count (stages: 1k, 10k, ...)")
    parser.add_argument("--out", default=str(RESULTS / "retrieval_scale.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    rng = random.Random(42)
    conversations = locomo_data.load()
    pool = exchanges(conversations)
    questions = [q.question for c in conversations for q in c.questions]
    embeddings = CachedEmbeddings(get_default_embeddings())
    root = Path(tempfile.mkdtemp(prefix="retrieval-scale-"))
    ours = SessionVectorMemory.local(
        path=root / "ours", user_id="u000", embeddings=embeddings, chunker=ExchangeChunker(min_tokens=0)
    )
    flat = Chroma(
        collection_name="flat",
        client=open_chroma_client(path=root / "flat"),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]})
    users = [f"u{n:03d}" for n in range(USERS)]
    orders = {u: rng.sample(range(len(pool)), len(pool)) for u in users}
    held = dict.fromkeys(users, 0)
    stages = [n for n in (1_000, 10_000, 100_000) if n <= args.max]
    results: list[dict[str, Any]] = []
    for total in stages:
        per_user = total // USERS
        t_ingest = time.perf_counter()
        for u in users:
            new = [pool[orders[u][i % len(pool)]] for i in range(held[u], per_user)]
            if not new:
                continue
            base = held[u]
            messages = []
            for n, (q, a) in enumerate(new, start=base):
                messages += [{"role": "user", "content": q, "id": f"{u}-{n}-q"},
                             {"role": "assistant", "content": a, "id": f"{u}-{n}-a"}]  # fmt: skip
            ids = ours.for_user(u).add_messages(messages, session_id=f"s{total}", chunking="exchange")
            texts = [f"User: {q}\nAssistant: {a}" for q, a in new]
            flat.add_texts(texts, metadatas=[{"user_id": u}] * len(texts), ids=[f"flat-{i}" for i in ids])
            store.batch([PutOp(("memories", u), doc_id, {"text": t}) for doc_id, t in zip(ids, texts, strict=True)])
            held[u] = per_user
        ingest_s = time.perf_counter() - t_ingest
        stored = ours.backend.count()  # type: ignore[attr-defined]
        queries = [(rng.choice(users), rng.choice(questions)) for _ in range(QUERIES)]
        embeddings.embed_documents([q for _, q in queries])  # cache the query vectors
        systems: dict[str, Callable[[str, str], Any]] = {
            "ours (hybrid, default)": lambda u, q: ours.for_user(u).invoke(q, k=K),
            "ours (dense only)": lambda u, q: ours.for_user(u).invoke(q, k=K, lexical_weight=0),
            "langchain-chroma where-filter": lambda u, q: flat.similarity_search_by_vector(
                embeddings.embed_query(q), k=K, filter={"user_id": u}
            ),
            "langgraph InMemoryStore": lambda u, q: store.search(("memories", u), query=q, limit=K),
        }
        row: dict[str, Any] = {"chunks": stored, "per_user": per_user, "ingest_seconds": round(ingest_s, 1)}
        for name, search in systems.items():
            warm = timed([(u, questions[0]) for u in users], search)
            embeddings.live_queries = False
            cached = timed(queries, search)
            embeddings.live_queries = True
            live = timed(queries[: QUERIES // 2], search)
            embeddings.live_queries = False
            row[name] = {
                "first_query_per_user": percentiles(warm),
                "without_query_embedding": percentiles(cached),
                "with_query_embedding": percentiles(live),
            }
            print(f"{stored:>7} chunks  {name:<30} first p50 {row[name]['first_query_per_user']['p50']:7.2f} ms  "
                  f"warm p50 {row[name]['without_query_embedding']['p50']:7.3f} ms  "
                  f"p95 {row[name]['without_query_embedding']['p95']:7.3f} ms  "
                  f"with embedding p50 {row[name]['with_query_embedding']['p50']:7.2f} ms", flush=True)  # fmt: skip
        base = row["langchain-chroma where-filter"]["without_query_embedding"]["p50"]
        row["speedup_vs_where_filter_p50"] = round(
            base / row["ours (hybrid, default)"]["without_query_embedding"]["p50"], 1
        )
        row["disk_mb"] = {"ours": round(dir_mb(root / "ours"), 1), "langchain-chroma": round(dir_mb(root / "flat"), 1)}
        results.append(row)
    last = results[-1]
    last["ours (hybrid, default)"]["cold_process_first_query_per_user"] = cold_start(root / "ours", users, questions[0])
    payload = {
        "benchmark": "retrieval_scale",
        "date": time.strftime("%Y-%m-%d"),
        "users": USERS,
        "queries": QUERIES,
        "k": K,
        "embedding_model": embeddings.model_id,
        "distinct_texts_embedded": len(embeddings.cache),
        "stages": results,
        "disk_mb_per_1k_chunks": {name: round(mb / (last["chunks"] / 1000), 2) for name, mb in last["disk_mb"].items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({k: v for k, v in payload.items() if k != "stages"}, indent=2))


if __name__ == "__main__":
    main()
