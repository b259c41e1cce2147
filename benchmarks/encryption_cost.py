"""What privacy costs, measured side by side in one run: encryption at rest and secret redaction (not a timed test).

Usage::

    python benchmarks/encryption_cost.py [--data PATH] [--repeats 5] [--queries 200]

Stores LoCoMo's conversations (``--data``, ``$LOCOMO_PATH``, else the bundled sample) one session at a time, as a
chat does, into four embedded stores: plain, encrypted, plain with ``redact_secrets``, encrypted with both. The
modes are interleaved session by session, so the machine's drift falls on all of them alike. Measured:

- ingest per session, with the real embedding model (what a user waits for) and with the vectors computed once
  beforehand (the store's own work, where encryption's share shows);
- query latency in the warm replica, on the store's own index (``max_user_chunks=0``: the server's path, which
  decrypts each result), and the cold start (the first query of a fresh replica, which reads and decrypts every
  record of the user);
- redaction's cost per message (every stored message and every question), and the store's size on disk.

Writes ``benchmarks/results/encryption_cost.json`` and prints a Markdown table of medians and ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_embeddings import CachedEmbeddings
from langchain_core.embeddings import Embeddings
from locomo_data import add_data_argument, data_path, describe, load

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.scoped import reset_replicas
from langchain_session_rag.privacy import generate_master_key
from langchain_session_rag.privacy.redaction import redact_secrets

MODES = {
    "plain": {},
    "encrypted": {"encryption": True},
    "redacted": {"redact_secrets": True},
    "encrypted+redacted": {"encryption": True, "redact_secrets": True},
}
RESULTS = Path(__file__).resolve().parent / "results" / "encryption_cost.json"


def folder_size(*folders: Path) -> int:
    """Bytes of every file under the folders (that exist)."""
    return sum(f.stat().st_size for folder in folders if folder.exists() for f in folder.rglob("*") if f.is_file())


def shuffled(memories: dict[str, SessionVectorMemory], seed: int) -> list[str]:
    """The modes in a random order of their own for each step (no mode always first, or always after another)."""
    order = list(memories)
    random.Random(seed).shuffle(order)
    return order


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def open_memories(
    root: Path, embeddings: Embeddings, key: str, runtime: RuntimeSettings | None = None
) -> dict[str, SessionVectorMemory]:
    """One memory per mode, each in its own folder under ``root``."""
    out = {}
    for mode, options in MODES.items():
        out[mode] = SessionVectorMemory.local(
            path=root / mode,
            user_id="bench",
            embeddings=embeddings,
            encryption_key=key if options.get("encryption") else None,
            redact_secrets=bool(options.get("redact_secrets")),
            chunking="exchange",
            runtime=runtime or RuntimeSettings(),
        )
    return out


def ingest_pass(
    memories: dict[str, SessionVectorMemory], sessions: list[tuple[str, list[dict[str, Any]]]]
) -> dict[str, list[float]]:
    """Store every session in every memory, modes interleaved; seconds per session by mode."""
    times: dict[str, list[float]] = {mode: [] for mode in memories}
    for n, (session_id, messages) in enumerate(sessions):
        for mode in shuffled(memories, n):
            memory = memories[mode]
            call = functools.partial(memory.add_messages, messages, session_id=session_id)
            times[mode].append(timed(call))
    return times


def query_pass(memories: dict[str, SessionVectorMemory], questions: list[str]) -> dict[str, list[float]]:
    """Ask every question of every memory (after one unmeasured question each), modes interleaved."""
    for memory in memories.values():
        memory.invoke(questions[-1])
    times: dict[str, list[float]] = {mode: [] for mode in memories}
    for n, question in enumerate(questions):
        for mode in shuffled(memories, n):
            times[mode].append(timed(functools.partial(memories[mode].invoke, question)))
    return times


def cold_pass(memories: dict[str, SessionVectorMemory], question: str, repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {mode: [] for mode in memories}
    for n in range(repeats):
        for mode in shuffled(memories, n):
            memory = memories[mode]
            reset_replicas(memory.backend)
            times[mode].append(timed(lambda m=memory: m.invoke(question)))
    return times


def summary(times: dict[str, list[float]], unit: float = 1000.0) -> dict[str, dict[str, float]]:
    base = statistics.median(times["plain"])
    return {
        mode: {
            "median_ms": statistics.median(values) * unit,
            "ratio": statistics.median(values) / base,
            "n": len(values),
        }
        for mode, values in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--repeats", type=int, default=5, help="Cold starts measured per mode.")
    parser.add_argument("--queries", type=int, default=200, help="Questions asked per mode (LoCoMo's own).")
    parser.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations stored (from the first).")
    args = parser.parse_args()
    path = data_path(args.data)
    conversations = load(path)[: args.conversations]
    sessions = [(f"{c.sample_id}-{s.session_id}", s.messages) for c in conversations for s in c.sessions]
    questions = [q.question for c in conversations for q in c.questions][: args.queries]
    messages = [m["content"] for _, ms in sessions for m in ms]
    key = generate_master_key()
    real = get_default_embeddings()
    results: dict[str, Any] = {
        "data": describe(path, conversations),
        "sessions": len(sessions),
        "messages": len(messages),
        "questions": len(questions),
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        real_memories = open_memories(root / "real", real, key)
        results["ingest_real_model"] = summary(ingest_pass(real_memories, sessions))
        pre = CachedEmbeddings(real)
        pre.embed_documents(messages)  # most chunk texts differ from messages: the first pass fills the rest
        warm = open_memories(root / "warmup", pre, key)
        ingest_pass(warm, sessions)
        store_only = open_memories(root / "store", pre, key)
        results["ingest_store_only"] = summary(ingest_pass(store_only, sessions))
        results["query_replica"] = summary(query_pass(store_only, questions))
        index = open_memories(root / "store", pre, key, RuntimeSettings(max_user_chunks=1))
        results["query_store_index"] = summary(query_pass(index, questions))
        results["cold_start"] = summary(cold_pass(store_only, questions[0], args.repeats))
        results["store_bytes"] = {
            mode: folder_size(root / "store" / mode, Path(f"{root / 'store' / mode}.keys")) for mode in MODES
        }
        results["chunks"] = {mode: memory.count() for mode, memory in store_only.items()}
    redaction = sorted(timed(functools.partial(redact_secrets, text)) for text in messages + questions)
    results["redaction_us_per_message"] = {
        "median": statistics.median(redaction) * 1e6,
        "p95": redaction[int(0.95 * (len(redaction) - 1))] * 1e6,
        "mean": statistics.fmean(redaction) * 1e6,
        "n": len(redaction),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"{results['data']}: {len(sessions)} sessions, {len(messages)} messages, {len(questions)} questions\n")
    print("| measure | " + " | ".join(MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    for name in ("ingest_real_model", "ingest_store_only", "query_replica", "query_store_index", "cold_start"):
        row = results[name]
        cells = [f"{row[m]['median_ms']:.1f} ms ({row[m]['ratio']:.2f}×)" for m in MODES]
        print(f"| {name} | " + " | ".join(cells) + " |")
    sizes = results["store_bytes"]
    print(
        "| store size | "
        + " | ".join(f"{sizes[m] / 1e6:.2f} MB ({sizes[m] / sizes['plain']:.2f}×)" for m in MODES)
        + " |"
    )
    r = results["redaction_us_per_message"]
    print(
        f"\nredact_secrets: median {r['median']:.0f} µs, p95 {r['p95']:.0f} µs, mean {r['mean']:.0f} µs per message (n={r['n']})"
    )


if __name__ == "__main__":
    main()
