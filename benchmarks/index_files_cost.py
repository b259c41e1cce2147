"""What zeroing Chroma's uninitialised index slots costs an embedded store (``stores/index_files.py``).

Every call of a ``ChromaBackend`` on an embedded store runs inside its folder's ``IndexFileGuard``; the call's end
lists the folder's index headers and, when one changed, zeroes the new unused slots. Measured through the public
API on one embedded store (384-dimensional vectors, ``--users`` users spread over the 32 shards):

- **read**: ``backend.all_ids(user)`` (an ids-only Chroma read), median and p95, the guard on and off in
  alternate rounds, right after the store was filled (an index folder created less than 2 s before: the guard
  lists the folder at every call) and 2.5 s later;
- **write**: ``memory.add_messages`` of one exchange (embedding, Chroma upsert, replica), with and without;
- **first sweep**: what a process's first call pays, zeroing every index of the folder (``sweep(force=True)``).

Run:
    python benchmarks/index_files_cost.py [--users 64] [--out benchmarks/results/index_files_cost.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.index_files import index_guard

RESULTS = Path(__file__).parent / "results"


def _ms(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"median_ms": round(1000 * statistics.median(times), 3), "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 3)}  # fmt: skip


def _alternating(run: Callable[[int], object], backend: ChromaBackend, rounds: int) -> dict[str, dict[str, float]]:
    """Time ``run`` with the guard on and off in alternate rounds (so neither gets the warmer store)."""
    guard, times = backend.files_guard, {"with_guard": list[float](), "without_guard": list[float]()}
    for i in range(2 * rounds):
        label = "with_guard" if i % 2 == 0 else "without_guard"
        backend.files_guard = guard if label == "with_guard" else None
        started = time.perf_counter()
        run(i)
        times[label].append(time.perf_counter() - started)
    backend.files_guard = guard
    return {label: _ms(values) for label, values in times.items()}


def measure(users: int, rounds: int) -> dict[str, Any]:
    """Fill a store for ``users`` users, then time reads and writes with the guard on and off."""
    folder = tempfile.mkdtemp()
    memory = SessionVectorMemory.local(path=folder, user_id="u0", embeddings=DeterministicFakeEmbedding(size=384))
    for n in range(users):
        messages = [{"role": "user", "content": f"User {n} keeps note {i}."} for i in range(20)]
        memory.for_user(f"u{n}").add_messages(messages, session_id=f"s{n}")
    memory.flush()
    backend = memory.backend
    if not isinstance(backend, ChromaBackend):
        msg = "the default store should be a ChromaBackend"
        raise SystemExit(msg)
    indexes = len(list(Path(folder).glob("*/header.bin")))
    out: dict[str, Any] = {"users": users, "indexes": indexes, "rounds": rounds}

    def read(i: int) -> object:
        return backend.all_ids(f"u{i % users}")

    def write(i: int) -> object:
        exchange = [{"role": "user", "content": f"Turn {i}."}, {"role": "assistant", "content": "Noted."}]
        return memory.add_messages(exchange, session_id="bench")

    out["read_right_after_writes"] = _alternating(read, backend, rounds)  # the folder is listed at every call
    time.sleep(2.5)  # no index folder created for 2 s: the guard stats the headers without listing the folder
    out["read"] = _alternating(read, backend, rounds)
    out["write"] = _alternating(write, backend, rounds)
    started = time.perf_counter()
    index_guard(folder).sweep(force=True)
    out["first_sweep_ms"] = round(1000 * (time.perf_counter() - started), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS / "index_files_cost.json")
    args = parser.parse_args()
    result = measure(args.users, args.rounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
