"""A heavy user's first query in a fresh process: load time and peak memory of the replica (not a timed test).

Usage::

    python benchmarks/heavy_user.py --chunks 100000 [--folder /tmp/heavy] [--threshold 200000]

Fills an embedded store (once) with one user's ``--chunks`` chunks of 40-80 words and 384-dimension vectors,
then, in a fresh process, opens the memory and answers one query; prints the load time, the peak resident
memory above the process's baseline (after imports and opening the store) and the raw size of the vectors and
texts. ``--threshold`` is the replica cache's ``max_user_chunks`` for the fresh process (below ``--chunks``: the
store's own index serves the user instead, which is measured the same way).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.stores.records import session_record

DIM = 384
USER = "heavy"
WORDS = [f"w{n}" for n in range(5_000)]


def memory(folder: Path, runtime: RuntimeSettings | None = None) -> SessionVectorMemory:
    """The benchmark's memory (fake embeddings of the real model's size: plumbing only)."""
    return SessionVectorMemory.local(
        path=folder,
        user_id=USER,
        embeddings=DeterministicFakeEmbedding(size=DIM),
        collection_name="heavy",
        runtime=runtime or RuntimeSettings(),
    )


def fill(folder: Path, chunks: int) -> int:
    """Store ``chunks`` exchange chunks of one user; return the bytes of their texts."""
    m, rng, gen = memory(folder), random.Random(0), np.random.default_rng(0)
    m.backend.check_model(m.model_id, DIM)
    text_bytes, batch = 0, 5_000
    for start in range(0, chunks, batch):
        records = []
        for n in range(start, min(chunks, start + batch)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 80)))
            text_bytes += len(text.encode())
            record = session_record(
                user_id=USER,
                session_id=f"s{n // 20}",
                kind="exchange",
                text=text,
                message_ids=[f"u{n}", f"a{n}"],
                timestamp=datetime(2026, 1, 1, tzinfo=timezone.utc),
                token_count=60,
                model_id=m.model_id,
                vector=gen.normal(size=DIM).astype(np.float32).tolist(),
            )
            record.metadata["chunk_index"] = n % 20
            records.append(record)
        m.backend.add(USER, records)
    return text_bytes


def first_query(folder: Path, threshold: int) -> dict[str, float]:
    """In this (fresh) process: open the memory, answer one query; the time and peak memory it took."""
    m = memory(folder, RuntimeSettings(max_user_chunks=threshold))
    m.backend.check_model(m.model_id, DIM)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    docs = m.invoke("w17 w4242 w99", k=5)
    first = time.perf_counter() - started
    started = time.perf_counter()
    m.invoke("w18 w4243 w98", k=5)
    second = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "first_query_s": round(first, 2),
        "second_query_ms": round(second * 1000, 1),
        "baseline_mb": round(base),
        "peak_above_baseline_mb": round(peak - base),
        "replica_chunks": len(m.service.state.replicas.get(USER)),
        "results": len(docs),
    }


def main() -> None:
    """Fill the store once, then measure the first query in a fresh process."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/heavy_user"))  # noqa: S108 - a benchmark's scratch
    parser.add_argument("--threshold", type=int, default=200_000)
    parser.add_argument("--child", choices=["fill", "query"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.folder / str(args.chunks)
    marker = folder / "text_bytes"
    if args.child == "query":
        print(json.dumps(first_query(folder, args.threshold)))
        return
    if args.child == "fill":
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(fill(folder, args.chunks)))
        return
    cmd = [sys.executable, __file__, "--chunks", str(args.chunks), "--folder", str(args.folder), "--child"]
    if not marker.exists():  # each step in a process of its own: an embedded store is locked to one process
        started = time.perf_counter()
        subprocess.run([*cmd, "fill"], check=True)
        print(f"filled {args.chunks} chunks in {time.perf_counter() - started:.0f} s")
    raw = (args.chunks * DIM * 4 + int(marker.read_text())) / 2**20
    out = subprocess.run(
        [*cmd, "query", "--threshold", str(args.threshold)], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["raw_vectors_and_texts_mb"] = round(raw)
    result["peak_over_raw"] = round(result["peak_above_baseline_mb"] / raw, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
