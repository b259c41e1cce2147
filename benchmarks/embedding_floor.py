"""The embedding floor of a turn: one query embedding plus the new exchange's, each timed alone, per model route.

Routes of the bundled all-MiniLM-L6-v2 (int8 weights), each measured in a fresh process, rounds interleaved:
- ``widened``: the int8 weights widened to float32 in every pass, products in float32 (the default up to 0.6);
- ``unpacked``: ``LocalEmbeddings(unpack_weights=True)``: widened once at load, products in float32;
- ``int8``: the default now: int8 products (onnxruntime ``MatMulNBits``, int8 activations in blocks of 32), the
  embedding tables gathered as int8 and widened after the gather.
For each route and thread count: a short query (17 word pieces) and an exchange of about 100 word pieces are
embedded ``--runs`` times each after a warm-up; wall p50/p95 and CPU time per text (``time.process_time``), the
split between the tokenizer, ``session.run`` and the rest (feed, pooling), load time and RSS after load. The
floor is query p50 + exchange p50. Vectors: every route's against ``widened`` on LoCoMo turns (cosine min/mean).
Medians over ``--rounds``; the load average is recorded, as times on a busy machine are not comparable.

Run: bash scripts/benchmark.sh embedding_floor [--rounds 3] [--threads 1,2] [--data PATH] [--texts 400]
Results: benchmarks/results/embedding_floor.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "embedding_floor.json"
ROUTES = ("widened", "unpacked", "int8")
QUERY = "What did I say about my sister's trip to Lisbon last spring?"
EXCHANGE = (
    "User: My sister Anna is flying to Lisbon in April for a conference on marine biology, and she asked me to "
    "look after her cat Miso while she is away, so I will need to buy food and sand before the weekend. "
    "Assistant: That sounds like a lovely trip. Lisbon in April is usually mild and sunny. Would you like me to "
    "remind you to buy cat food on Friday, and to note her flight dates so you know when Miso goes home?"
)


def _encoder(route: str, threads: int) -> Any:
    from langchain_session_rag.models import onnx_encoder  # noqa: PLC0415

    if route == "widened":  # the 0.6 load: the file as it is, constant folding off
        onnx_encoder._int8_source = lambda model, verify: (str(model), ["ConstantFolding"])  # noqa: ARG005, SLF001
    return onnx_encoder.load_encoder(threads=threads, unpack_weights=route == "unpacked")


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": statistics.median(ordered) * 1e3, "p95": ordered[int(0.95 * (len(ordered) - 1))] * 1e3}


def child(route: str, threads: int, runs: int, texts_file: str, vectors_file: str) -> dict[str, Any]:
    """One process: load one route and time it."""
    start = time.perf_counter()
    encoder = _encoder(route, threads)
    encoder.encode(["warm up"], 32)
    loaded = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result: dict[str, Any] = {"load_s": loaded, "rss_after_load_mb": rss_mb}
    for name, text in (("query", QUERY), ("exchange", EXCHANGE)):
        for _ in range(20):
            encoder.encode([text], 32)
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(runs):
            w0, c0 = time.perf_counter(), time.process_time()
            encoder.encode([text], 32)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        tokenize: list[float] = []
        run: list[float] = []
        session = encoder._session()  # noqa: SLF001
        for _ in range(min(runs, 50)):
            t0 = time.perf_counter()
            ids = encoder.tokenizer.encode_batch([text])[0].ids
            t1 = time.perf_counter()
            feed = {
                "input_ids": np.array([ids], dtype=np.int64),
                "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64),
            }
            t2 = time.perf_counter()
            session.run(None, {k: feed[k] for k in encoder.inputs})
            t3 = time.perf_counter()
            tokenize.append(t1 - t0)
            run.append(t3 - t2)
        stats = _percentiles(wall)
        result[name] = {
            **stats,
            "cpu_ms": statistics.median(cpu) * 1e3,
            "tokens": encoder.count_tokens([text])[0],
            "tokenizer_ms": statistics.median(tokenize) * 1e3,
            "session_run_ms": statistics.median(run) * 1e3,
        }
        result[name]["rest_ms"] = stats["p50"] - result[name]["tokenizer_ms"] - result[name]["session_run_ms"]
    result["floor_ms"] = result["query"]["p50"] + result["exchange"]["p50"]
    result["floor_cpu_ms"] = result["query"]["cpu_ms"] + result["exchange"]["cpu_ms"]
    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    np.save(vectors_file, encoder.encode(texts, 32))
    return result


def _texts(data: str | None, count: int) -> list[str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from locomo_data import load  # noqa: PLC0415

    turns = [str(m["content"]) for c in load(data) for s in c.sessions for m in s.messages]
    step = max(1, len(turns) // count)
    return [*turns[::step][:count], QUERY, EXCHANGE, "", "ok", "word " * 400]


def _median_of(rows: list[dict[str, Any]], *path: str) -> float:
    values = []
    for row in rows:
        value: Any = row
        for key in path:
            value = value[key]
        values.append(float(value))
    return round(statistics.median(values), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--threads", default="1,2", help="onnxruntime threads per pass, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--texts", type=int, default=400, help="LoCoMo turns to compare the vectors on")
    parser.add_argument("--data", default=None, help="LoCoMo JSON file (default: $LOCOMO_PATH, else the sample)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        route, threads, runs, texts_file, vectors_file = args.child
        print(json.dumps(child(route, int(threads), int(runs), texts_file, vectors_file)))
        return
    routes = args.routes.split(",")
    thread_counts = [int(t) for t in args.threads.split(",")]
    report: dict[str, Any] = {
        "load_average_before": os.getloadavg(),
        "cpus": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "rounds": args.rounds,
        "runs": args.runs,
        "results": {},
    }
    rows: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        texts_file = Path(folder) / "texts.json"
        texts = _texts(args.data, args.texts)
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        vectors: dict[str, np.ndarray] = {}
        for round_ in range(args.rounds):
            for threads in thread_counts:
                for route in routes if round_ % 2 == 0 else routes[::-1]:
                    out = Path(folder) / f"{route}.npy"
                    command = [
                        sys.executable,
                        __file__,
                        "--child",
                        route,
                        str(threads),
                        str(args.runs),
                        str(texts_file),
                    ]
                    done = subprocess.run([*command, str(out)], check=True, capture_output=True, text=True)
                    row = json.loads(done.stdout.strip().splitlines()[-1])
                    rows.setdefault(f"{route}/threads={threads}", []).append(row)
                    vectors[route] = np.load(out)
                    print(f"round {round_} {route} threads={threads}: floor {row['floor_ms']:.1f} ms", flush=True)
    for key, found in rows.items():
        summary: dict[str, Any] = {
            "floor_ms": _median_of(found, "floor_ms"),
            "floor_cpu_ms": _median_of(found, "floor_cpu_ms"),
            "load_s": _median_of(found, "load_s"),
            "rss_after_load_mb": _median_of(found, "rss_after_load_mb"),
        }
        for name in ("query", "exchange"):
            summary[name] = {
                field: _median_of(found, name, field)
                for field in ("p50", "p95", "cpu_ms", "tokenizer_ms", "session_run_ms", "rest_ms", "tokens")
            }
        report["results"][key] = summary
    if "widened" in vectors:
        report["vectors_vs_widened"] = {}
        for route, found in vectors.items():
            cosines = (found * vectors["widened"]).sum(axis=1)
            report["vectors_vs_widened"][route] = {
                "texts": len(texts),
                "min": round(float(cosines.min()), 5),
                "mean": round(float(cosines.mean()), 6),
                "lowest_text": texts[int(cosines.argmin())][:80],
            }
    report["load_average_after"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        f"{'route':24s} {'floor':>7s} {'cpu':>7s} {'q p50':>7s} {'q p95':>7s} {'ex p50':>7s} {'ex p95':>7s} {'rss MB':>7s}"
    )
    for key, row in report["results"].items():
        q, ex = row["query"], row["exchange"]
        print(
            f"{key:24s} {row['floor_ms']:7.2f} {row['floor_cpu_ms']:7.2f} {q['p50']:7.2f} {q['p95']:7.2f} "
            f"{ex['p50']:7.2f} {ex['p95']:7.2f} {row['rss_after_load_mb']:7.0f}"
        )
    print(json.dumps(report.get("vectors_vs_widened", {}), indent=1))
    print(
        f"load average {report['load_average_before'][0]:.2f} -> {report['load_average_after'][0]:.2f}; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
