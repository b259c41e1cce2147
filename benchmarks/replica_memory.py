"""Memory per chunk of the in-process replica (``UserReplica``), by component, and its query latency.

One user's replica is filled with ``--chunks`` chunks (default 20,000) the way its first sync loads it: every
record in one read, each record as the store returns it. Texts are 60-120 words of real chat turns (LoCoMo
turns, ``--data PATH`` else ``$LOCOMO_PATH`` else the bundled sample, recombined at random, with a number and a
name added per chunk as real chats have); the metadata is what ``session_record`` writes (sessions of 20-60
chunks, 2-4 message ids, speakers, chunk_index); every string is a fresh object per record, as Chroma returns
them (the script checks that on a 50-chunk embedded store: ``store_returns_fresh_strings``). The vectors are
random unit vectors (384 dimensions): the memory does not depend on their values.

Measured:
- ``tracemalloc``: bytes still allocated once the records handed in are freed, per chunk (the total);
- the split by component: a walk over the replica's attributes counting every object once (``sys.getsizeof``),
  the id strings first, then vectors, records/metadata, lexical postings, ids/index; ``walk_total`` should be
  close to the ``tracemalloc`` total (the rest is allocator overhead);
- RSS delta in a child process without ``tracemalloc`` (a cross-check: pages of a matrix grown but not yet
  written are not resident, freed batches may stay with the allocator);
- query latency at 20k and 100k chunks (``--latency-sizes``): ``dense`` top 50 (the default ``fetch_k``), the same
  restricted to one tenth of the chunks (``only=``), ``lexical_top`` 50; p50 and mean over 200 queries;
- float16 vectors, evaluated apart from the replica: top-10 agreement with float32 on real embeddings (the bundled
  model over chunk texts and LoCoMo questions) and the matmul time of float32, float16 and float16 upcast per
  block at each size.
Writes results/replica_memory.json (``--out``). Run: bash scripts/benchmark.sh replica_memory [--chunks 20000]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import locomo_data

from langchain_session_rag.memory.replica import ReplicaSource, UserReplica
from langchain_session_rag.stores.base import Record, RecordPage
from langchain_session_rag.stores.records import session_record

RESULTS = Path(__file__).parent / "results"
DIM = 384
FETCH = 50
QUERIES = 200
NAMES = ("Alice", "Bob", "Priya", "Tomasz", "Mei", "Jonas", "Fatima", "Diego", "Ingrid", "Kwame")
COMPONENTS = ("vectors", "records/metadata", "lexical postings", "ids/index", "other")
ATTRIBUTES = {
    # replica.py (before and after the compaction)
    "_matrix": "vectors",
    "_texts": "records/metadata",
    "_records": "records/metadata",
    "_row": "ids/index",
    "_ids": "ids/index",
    "_sessions": "ids/index",
    "_by_message": "ids/index",
    "_speakers": "ids/index",
    # lexical.py
    "metadata": "records/metadata",
    "texts": "records/metadata",
    "_terms": "lexical postings",
    "_lengths": "lexical postings",
    "_df": "lexical postings",
    "_postings": "lexical postings",
    "_docs": "lexical postings",
    "_slot": "lexical postings",
    "_tf": "lexical postings",
    "_free": "lexical postings",
}
"""Component of each attribute of ``UserReplica`` and of its ``lexical`` index (unknown ones count as other)."""


def turns(path: str | None) -> list[tuple[str, str]]:
    out = []
    for conv in locomo_data.load(path):
        for session in conv.sessions:
            out.extend((m.get("name") or m["role"], m["content"]) for m in session.messages)
    return out


def fresh(value: Any) -> Any:
    """A new string object equal to ``value`` (as a store's decoder returns), other values as they are."""
    return value.encode().decode() if isinstance(value, str) else value


def records(n: int, pool: list[tuple[str, str]], *, seed: int = 0, unit: bool = True) -> Iterator[Record]:
    """``n`` realistic chunks of one user, as a store returns them (fresh strings, vectors as lists of floats)."""
    rng, vectors = random.Random(seed), np.random.default_rng(seed)
    user, start = "user-7f3a9c2e", datetime(2024, 1, 1, tzinfo=timezone.utc)
    session, left, index = "", 0, 0
    for i in range(n):
        if not left:
            session, left, index = f"session-{rng.getrandbits(64):016x}", rng.randint(20, 60), 0
        words, lines, target = 0, [], rng.randint(60, 120)
        while words < target:
            speaker, text = pool[rng.randrange(len(pool))]
            lines.append(f"{speaker}: {text}")
            words += len(text.split())
        lines.append(f"{rng.choice(NAMES)} said it was {rng.randint(2, 9999)}.")
        when = start + timedelta(minutes=7 * i)
        vector = vectors.standard_normal(DIM)
        record = session_record(
            user_id=user,
            session_id=session,
            kind="exchange",
            text="\n".join(lines),
            message_ids=[f"msg-{rng.getrandbits(48):012x}" for _ in range(rng.randint(2, 4))],
            timestamp=when,
            token_count=int(words * 1.3),
            model_id="sentence-transformers/all-MiniLM-L6-v2",
            vector=(vector / np.linalg.norm(vector) if unit else vector).tolist(),
            speakers=sorted({line.split(":", 1)[0] for line in lines[:-1]}),
        )
        record.metadata["chunk_index"] = index
        yield Record(
            id=fresh(record.id),
            text=fresh(record.text),
            metadata={fresh(k): fresh(v) for k, v in record.metadata.items()},
            embedding=record.embedding,
        )
        left, index = left - 1, index + 1


def fill(replica: UserReplica, source: Iterator[Record]) -> None:
    """Fill an empty replica as its first sync does: every record in one read (``load``)."""
    records = list(source)
    replica.sync(
        ReplicaSource(
            log=lambda: None,
            touched=lambda _: None,
            ids=lambda: [r.id for r in records],
            listing=dict,
            pages=lambda _: [RecordPage(records)],
        )
    )


def deep_size(root: Any, seen: set[int]) -> int:
    """Bytes of ``root`` and everything it holds that ``seen`` does not hold yet (added to ``seen``)."""
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, np.ndarray):
            if obj.base is not None:
                stack.append(obj.base)
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, s) for s in obj.__slots__ if hasattr(obj, s))
    return total


def split(replica: UserReplica) -> dict[str, int]:
    """Bytes held by the replica by component (each object counted once, ids first)."""
    seen: set[int] = set()
    out = dict.fromkeys(COMPONENTS, 0)
    out["ids/index"] += sum(deep_size(doc_id, seen) for doc_id in replica.ids())
    parts = [(name, value) for name, value in vars(replica).items() if name != "lexical"]
    parts += list(vars(replica.lexical).items())
    for component in COMPONENTS:
        for name, value in parts:
            if ATTRIBUTES.get(name, "other") == component:
                out[component] += deep_size(value, seen)
    return out


def measure(n: int, pool: list[tuple[str, str]]) -> dict[str, Any]:
    source = records(n, pool)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    replica = UserReplica()
    fill(replica, source)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    parts = split(replica)
    per = {k: round(v / n) for k, v in parts.items()}
    return {
        "chunks": n,
        "tracemalloc_bytes_per_chunk": round(held / n),
        "walk_bytes_per_chunk": per,
        "walk_total": sum(per.values()),
    }


def rss_kb() -> int:
    fields = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", fields).group(1))  # type: ignore[union-attr]


def child_rss(n: int, data: str | None) -> None:
    pool = turns(data)
    source = records(n, pool)
    gc.collect()
    start = rss_kb()
    replica = UserReplica()
    fill(replica, source)
    gc.collect()
    print(json.dumps({"rss_bytes_per_chunk": round((rss_kb() - start) * 1024 / n), "held": len(replica)}))


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = [1000 * s for s in samples]
    return {"p50_ms": round(statistics.median(ms), 3), "mean_ms": round(statistics.fmean(ms), 3)}


def timed(calls: list[Callable[[], Any]]) -> dict[str, float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def latency(n: int, pool: list[tuple[str, str]]) -> dict[str, Any]:
    replica = UserReplica()
    fill(replica, records(n, pool, seed=1))
    rng = np.random.default_rng(2)
    vectors = [v.tolist() for v in rng.standard_normal((QUERIES, DIM))]
    texts = [pool[i][1] for i in rng.integers(0, len(pool), QUERIES)]
    ids = sorted(replica.ids())
    tenth = set(random.Random(3).sample(ids, n // 10))
    for v in vectors[:5]:  # warm up
        replica.dense(v, FETCH)
    return {
        "chunks": n,
        "dense": timed([lambda v=v: replica.dense(v, FETCH) for v in vectors]),
        "dense_only_tenth": timed([lambda v=v: replica.dense(v, FETCH, only=tenth) for v in vectors]),
        "lexical_top": timed([lambda t=t: replica.lexical_top(t, FETCH) for t in texts]),
    }


def float16(pool: list[tuple[str, str]], sizes: list[int], data: str | None) -> dict[str, Any]:
    """Top-10 agreement of float16 with float32 on real embeddings; matmul times of the variants."""
    from langchain_session_rag import get_default_embeddings  # noqa: PLC0415 - loads the model

    model = get_default_embeddings()
    texts = [r.text for r in records(3_000, pool, seed=4)]
    questions = [q.question for conv in locomo_data.load(data) for q in conv.questions] + [t for _, t in pool]
    docs = np.asarray(model.embed_documents(texts), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = np.asarray(model.embed_documents(questions), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact, half = queries @ docs.T, queries @ docs.astype(np.float16).astype(np.float32).T
    same_set = same_order = 0
    for e, h in zip(exact, half, strict=True):
        a, b = np.argsort(-e, kind="stable")[:10], np.argsort(-h, kind="stable")[:10]
        same_set += set(a.tolist()) == set(b.tolist())
        same_order += a.tolist() == b.tolist()
    out: dict[str, Any] = {
        "queries": len(questions),
        "chunks": len(texts),
        "top10_same_set": round(same_set / len(questions), 3),
        "top10_same_order": round(same_order / len(questions), 3),
        "max_abs_score_error": float(np.abs(exact - half).max()),
    }
    rng = np.random.default_rng(5)
    for n in sizes:
        m32 = rng.standard_normal((n, DIM)).astype(np.float32)
        m16, q = m32.astype(np.float16), rng.standard_normal(DIM).astype(np.float32)

        def blocks(m: np.ndarray = m16, q: np.ndarray = q) -> np.ndarray:
            return np.concatenate([m[s : s + 4096].astype(np.float32) @ q for s in range(0, len(m), 4096)])

        out[f"matmul_{n}"] = {
            "float32": timed([lambda m=m32, q=q: m @ q] * 50),
            "float16": timed([lambda m=m16, q=q: m @ q.astype(np.float16)] * 20),
            "float16_upcast_blocks": timed([blocks] * 50),
        }
    return out


def store_returns_fresh_strings() -> bool:
    """Whether embedded Chroma returns a new object per record for metadata keys and session ids."""
    from langchain_session_rag.stores.adapter import open_chroma_client  # noqa: PLC0415
    from langchain_session_rag.stores.chroma import ChromaBackend  # noqa: PLC0415

    backend = ChromaBackend(open_chroma_client(tempfile.mkdtemp(prefix="replica-memory-")), name="probe")
    pool = [("A", "a few words of text")]
    backend.add("user-7f3a9c2e", [Record(r.id, r.text, r.metadata, r.embedding) for r in records(50, pool)])
    got = backend.get("user-7f3a9c2e", {}, with_embeddings=False)
    keys = {id(k) for r in got for k in r.metadata if k == "session_id"}
    return len(keys) == len(got)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--latency-sizes", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--no-float16", action="store_true", help="skip the float16 evaluation (loads the model)")
    parser.add_argument("--child-rss", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(RESULTS / "replica_memory.json"))
    locomo_data.add_data_argument(parser)
    args = parser.parse_args()
    if args.child_rss:
        child_rss(args.chunks, args.data)
        return
    pool = turns(args.data)
    payload: dict[str, Any] = {
        "data": locomo_data.describe(locomo_data.data_path(args.data), locomo_data.load(args.data))
    }
    payload["store_returns_fresh_strings"] = store_returns_fresh_strings()
    payload["memory"] = measure(args.chunks, pool)
    argv = [sys.executable, __file__, "--child-rss", "--chunks", str(args.chunks)]
    rss = subprocess.run(
        argv + (["--data", args.data] if args.data else []), capture_output=True, check=True, text=True
    )
    payload["memory"].update(json.loads(rss.stdout))
    payload["latency"] = [latency(n, pool) for n in args.latency_sizes]
    if not args.no_float16:
        payload["float16"] = float16(pool, args.latency_sizes, args.data)
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
