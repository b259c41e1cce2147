"""User-scoped retrieval latency at 1k, 10k and 100k stored chunks over 100 users, side by side.

Systems, same embeddings (all-MiniLM-L6-v2), same chunks, same queries, k=4:
- ours: ``SessionVectorMemory.local`` (sharded embedded Chroma + in-process replica, hybrid ranking by default;
  the dense-only setting ``lexical_weight=0`` is measured too);
- ours without the replica: the package has no public switch to turn the replica off, so this calls the same
  store's index the way the memory does when it has no replica (``memory.backend.query``: the user's shard
  collection, HNSW with a ``user_id`` filter, ``fetch_k`` candidates, dense only);
- ``langchain-chroma``, one shared collection: ``similarity_search_by_vector(..., filter={"user_id": u})``;
- ``langchain-chroma``, one collection per user: ``similarity_search_by_vector(...)`` on the user's own;
- LangChain core ``InMemoryVectorStore``: one store, ``filter=`` a function of the document's user;
- LangGraph ``InMemoryStore(index=...)``: one namespace per user, ``store.search(ns, query=q, limit=4)``.

Then a run with more users than the replica cache holds (``--over-users``, default 1,200 users of 100 chunks;
the cache keeps the 1,000 most recently used users, ``ReplicaCache`` in ``replica.py``, no public setting):
queries in user order (each one evicts a user and reloads its own from the store: every query cold) and in
random order (about one in six cold), against the shared-collection ``where`` filter over the same chunks.

Data: LoCoMo turns paired into exchanges (``--data PATH``, else ``$LOCOMO_PATH``, else the bundled sample); each
user gets its own random sample of them, as its own messages (ids differ per user). Every distinct text is embedded
once with the real model (cached), so "without query embedding" serves query vectors from that cache and "with
query embedding" calls the model for every query. Each system is warmed with one query per user first (ours has
the user's replica from its writes: reported as ``first_query_per_user``; a new process's first query per user,
which loads the replica, is measured in a subprocess). Writes results/retrieval_scale.json (not committed).
Run: bash scripts/benchmark.sh retrieval_scale [--max 100000] [--over-users 1200] [--data PATH]
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
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.stores.adapter import open_chroma_client

RESULTS = Path(__file__).parent / "results"
USERS = 100
QUERIES = 200
K = 4
REPLICA_USERS = 1_000
"""Users whose replicas the memory keeps (``ReplicaCache(max_users=1_000)``, also capped at 200,000 chunks)."""
OVER_PER_USER = 100


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
print(json.dumps({"seconds": out, "peak_rss_mb": peak / 1024, "chunks": memory.backend.count()}))
"""


def cold_start(memory: SessionVectorMemory, path: Path, users: list[str], query: str) -> dict[str, float]:
    """First query of each user in a new process over the existing store (loads each user's replica).

    An embedded store has one writer process (a folder lock held until this process exits), so the new process
    opens a copy of the folder, made after every write has landed (``flush``); it checks the copy's chunk count.
    Also the peak RSS of that process: our memory alone, every user's replica loaded.
    """
    memory.flush()
    copy = path.with_name(path.name + "-copy")
    shutil.copytree(path, copy)
    vector = get_default_embeddings().embed_query(query)
    payload = json.dumps({"path": str(copy), "users": users, "query": query, "table": {query: vector}})
    done = subprocess.run(
        [sys.executable, "-c", COLD], input=payload, capture_output=True, text=True, check=False, timeout=600
    )
    if done.returncode != 0:
        msg = f"cold-start process failed:\n{done.stderr[-3000:]}"
        raise RuntimeError(msg)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    expected = memory.backend.count()  # type: ignore[attr-defined]
    if got["chunks"] != expected:
        msg = f"the copy holds {got['chunks']} chunks, the store {expected}"
        raise RuntimeError(msg)
    shutil.rmtree(copy, ignore_errors=True)
    return {**percentiles(got["seconds"]), "peak_rss_mb": round(got["peak_rss_mb"], 1)}


def messages_of(user: str, pairs: list[tuple[str, str]], start: int) -> list[dict[str, str]]:
    out = []
    for n, (q, a) in enumerate(pairs, start=start):
        out += [{"role": "user", "content": q, "id": f"{user}-{n}-q"},
                {"role": "assistant", "content": a, "id": f"{user}-{n}-a"}]  # fmt: skip
    return out


def over_capacity(
    root: Path, pool: list[tuple[str, str]], questions: list[str], embeddings: CachedEmbeddings, users_n: int
) -> dict[str, Any]:
    """More users than the replica cache keeps: evictions and reloads from the store at query time."""
    if users_n <= REPLICA_USERS:
        msg = f"--over-users must exceed the replica cache's {REPLICA_USERS} users, got {users_n}"
        raise ValueError(msg)
    rng = random.Random(7)
    memory = SessionVectorMemory.local(
        path=root / "over", user_id="o0000", embeddings=embeddings, chunker=ExchangeChunker(min_tokens=0)
    )
    flat = Chroma(
        collection_name="over-flat",
        client=open_chroma_client(path=root / "over-flat"),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    users = [f"o{n:04d}" for n in range(users_n)]
    started = time.perf_counter()
    for u in users:  # written in this order: the cache ends up holding the last REPLICA_USERS of them
        new = [pool[i] for i in rng.sample(range(len(pool)), min(OVER_PER_USER, len(pool)))]
        ids = memory.for_user(u).add_messages(messages_of(u, new, 0), session_id="s", chunking="exchange")
        texts = [f"User: {q}\nAssistant: {a}" for q, a in new]
        flat.add_texts(texts, metadatas=[{"user_id": u}] * len(texts), ids=[f"flat-{i}" for i in ids])
    ingest_s = time.perf_counter() - started
    chunks = memory.backend.count()  # type: ignore[attr-defined]
    in_order = [(u, rng.choice(questions)) for u in users[:QUERIES]]  # each evicted by the writes after it
    shuffled = [(rng.choice(users), rng.choice(questions)) for _ in range(QUERIES)]
    embeddings.embed_documents([q for _, q in in_order + shuffled])
    embeddings.live_queries = False
    out: dict[str, Any] = {
        "users": users_n,
        "per_user": min(OVER_PER_USER, len(pool)),
        "chunks": chunks,
        "replica_users": REPLICA_USERS,
        "ingest_seconds": round(ingest_s, 1),
        "ours (hybrid, default), user order: every query reloads": percentiles(
            timed(in_order, lambda u, q: memory.for_user(u).invoke(q, k=K))
        ),
        "ours (hybrid, default), same queries again: replicas held": percentiles(
            timed(in_order, lambda u, q: memory.for_user(u).invoke(q, k=K))
        ),
        "ours (hybrid, default), random users": percentiles(
            timed(shuffled, lambda u, q: memory.for_user(u).invoke(q, k=K))
        ),
        "langchain-chroma where-filter, random users": percentiles(
            timed(
                shuffled,
                lambda u, q: flat.similarity_search_by_vector(embeddings.embed_query(q), k=K, filter={"user_id": u}),
            )
        ),
    }
    for name, row in out.items():
        if isinstance(row, dict):
            print(
                f"{chunks:>7} chunks over {users_n} users  {name:<58} p50 {row['p50']:8.3f} ms  p95 {row['p95']:8.3f} ms",
                flush=True,
            )
    return out


def main() -> None:  # noqa: PLR0915 - one linear measurement script
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max", type=int, default=100_000, help="largest total chunk count (stages: 1k, 10k, ...)")
    parser.add_argument(
        "--over-users", type=int, default=REPLICA_USERS + REPLICA_USERS // 5,
        help="users of the over-capacity run (0 skips it)",
    )  # fmt: skip
    parser.add_argument("--out", default=str(RESULTS / "retrieval_scale.json"))
    locomo_data.add_data_argument(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    rng = random.Random(42)
    path = locomo_data.data_path(args.data)
    conversations = locomo_data.load(path)
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
    users = [f"u{n:03d}" for n in range(USERS)]
    per_user_client = open_chroma_client(path=root / "per-user")
    own = {
        u: Chroma(
            collection_name=f"user-{u}",
            client=per_user_client,
            embedding_function=embeddings,
            collection_metadata={"hnsw:space": "cosine"},
        )
        for u in users
    }
    core = InMemoryVectorStore(embedding=embeddings)
    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]})
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
            ids = ours.for_user(u).add_messages(
                messages_of(u, new, held[u]), session_id=f"s{total}", chunking="exchange"
            )
            texts = [f"User: {q}\nAssistant: {a}" for q, a in new]
            flat.add_texts(texts, metadatas=[{"user_id": u}] * len(texts), ids=[f"flat-{i}" for i in ids])
            own[u].add_texts(texts, ids=ids)
            core.add_texts(texts, metadatas=[{"user_id": u}] * len(texts), ids=ids)
            store.batch([PutOp(("memories", u), doc_id, {"text": t}) for doc_id, t in zip(ids, texts, strict=True)])
            held[u] = per_user
        ingest_s = time.perf_counter() - t_ingest
        stored = ours.backend.count()  # type: ignore[attr-defined]
        queries = [(rng.choice(users), rng.choice(questions)) for _ in range(QUERIES)]
        embeddings.embed_documents([q for _, q in queries])  # cache the query vectors

        def of_user(u: str) -> Callable[[Document], bool]:
            return lambda doc: doc.metadata["user_id"] == u

        systems: dict[str, Callable[[str, str], Any]] = {
            "ours (hybrid, default)": lambda u, q: ours.for_user(u).invoke(q, k=K),
            "ours (dense only)": lambda u, q: ours.for_user(u).invoke(q, k=K, lexical_weight=0),
            "ours without replica (store index, dense)": lambda u, q: ours.backend.query(
                u, q, embeddings.embed_query(q), ours.fetch_k, {}
            ),
            "langchain-chroma where-filter": lambda u, q: flat.similarity_search_by_vector(
                embeddings.embed_query(q), k=K, filter={"user_id": u}
            ),
            "langchain-chroma collection per user": lambda u, q: own[u].similarity_search_by_vector(
                embeddings.embed_query(q), k=K
            ),
            "langchain-core InMemoryVectorStore filter": lambda u, q: core.similarity_search_by_vector(
                embeddings.embed_query(q), k=K, filter=of_user(u)
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
            print(f"{stored:>7} chunks  {name:<42} first p50 {row[name]['first_query_per_user']['p50']:7.2f} ms  "
                  f"warm p50 {row[name]['without_query_embedding']['p50']:7.3f} ms  "
                  f"p95 {row[name]['without_query_embedding']['p95']:7.3f} ms  "
                  f"with embedding p50 {row[name]['with_query_embedding']['p50']:7.2f} ms", flush=True)  # fmt: skip
        mine = row["ours (hybrid, default)"]["without_query_embedding"]["p50"]
        row["p50_over_ours_hybrid"] = {
            name: round(row[name]["without_query_embedding"]["p50"] / mine, 1) for name in systems
        }
        row["speedup_vs_where_filter_p50"] = row["p50_over_ours_hybrid"]["langchain-chroma where-filter"]
        row["disk_mb"] = {
            "ours": round(dir_mb(root / "ours"), 1),
            "langchain-chroma": round(dir_mb(root / "flat"), 1),
            "langchain-chroma per user": round(dir_mb(root / "per-user"), 1),
        }
        results.append(row)
    last = results[-1]
    last["ours (hybrid, default)"]["cold_process_first_query_per_user"] = cold_start(
        ours, root / "ours", users, questions[0]
    )
    peak_before_over = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    over = over_capacity(root, pool, questions, embeddings, args.over_users) if args.over_users else None
    payload = {
        "benchmark": "retrieval_scale",
        "date": time.strftime("%Y-%m-%d"),
        "data": locomo_data.describe(path, conversations),
        "bundled_sample": locomo_data.is_sample(path),
        "users": USERS,
        "queries": QUERIES,
        "k": K,
        "embedding_model": embeddings.model_id,
        "distinct_texts_embedded": len(embeddings.cache),
        "stages": results,
        "over_capacity": over,
        "disk_mb_per_1k_chunks": {name: round(mb / (last["chunks"] / 1000), 2) for name, mb in last["disk_mb"].items()},
        "peak_rss_mb_before_over_capacity": peak_before_over,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({k: v for k, v in payload.items() if k != "stages"}, indent=2))


if __name__ == "__main__":
    main()
