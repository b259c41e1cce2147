"""Run every benchmark side by side in one go; write the JSON, a markdown report and PNG plots.

Each benchmark runs in its own process (its peak RSS is read from the OS); then ``results/REPORT.md`` and
``results/*.png`` are written from the JSON files, with the date, the machine and the package versions.
Run: bash scripts/benchmark.sh run_all          (about 10 minutes on 2 cores)
     .venv/bin/python benchmarks/run_all.py --report-only    (rebuild the report from existing JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESULTS = HERE / "results"
ROOT = HERE.parent
LOCOMO_STRATEGIES = ["turn", "exchange", "topic-centroid-0.7-max128"]
STEPS: list[tuple[str, list[str]]] = [
    ("ingest_cost", [str(HERE / "ingest_cost.py")]),
    ("retrieval_scale", [str(HERE / "retrieval_scale.py")]),
    ("graph_overhead", [str(HERE / "graph_overhead.py")]),
    ("cache_latency", [str(HERE / "cache_latency.py")]),
    (
        "locomo_report",
        [str(HERE / "locomo.py"), "--only", *LOCOMO_STRATEGIES, "--out", str(RESULTS / "locomo_report.json")],
    ),
]
PACKAGES = (
    "langchain-session-rag", "langchain-core", "langgraph", "langchain-chroma", "chromadb", "tiktoken",
    "sentence-transformers", "torch", "llama_cpp_python", "numpy",
)  # fmt: skip


def run(name: str, argv: list[str]) -> dict[str, Any]:
    """Run one step; return its wall time and peak RSS."""
    started = time.perf_counter()
    print(f"== {name}", flush=True)
    proc = subprocess.Popen([sys.executable, *argv], cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        msg = f"benchmark {name} failed with exit code {proc.returncode}"
        raise RuntimeError(msg)
    return {"seconds": round(time.perf_counter() - started, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def demo_footprint() -> dict[str, Any]:
    """Peak RSS and time of the README's demo (embedded defaults, one turn with the local LLM)."""
    path = Path(tempfile.mkdtemp(prefix="demo-footprint-")) / "store"
    return run("demo", ["-m", "langchain_session_rag.cli", "demo", "--path", str(path)])


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    return {name: _version(name) for name in PACKAGES}


def machine() -> dict[str, Any]:
    cpu = "unknown"
    info = Path("/proc/cpuinfo")
    if info.exists():
        cpu = next((ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines() if "model name" in ln), cpu)
    mem = Path("/proc/meminfo")
    total = (
        next((int(ln.split()[1]) for ln in mem.read_text().splitlines() if ln.startswith("MemTotal")), 0)
        if mem.exists()
        else 0
    )
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(total / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / f"{name}.json").read_text())


# -- report ----------------------------------------------------------------------------------------
def _check(ok: bool) -> str:
    return "met" if ok else "**missed**"


def targets(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    scale = res["retrieval_scale"]["stages"][-1]
    ingest = res["ingest_cost"]
    graph = res["graph_overhead"]
    background = next(r for r in graph["no_checkpointer"] if r["background_writes"] and not r.get("async"))
    long = graph["sqlite_long_thread"]
    return [
        (
            f"scoped retrieval at {scale['chunks']:,} chunks ≥ 10× faster than the `where` filter (p50)",
            f"{scale['speedup_vs_where_filter_p50']}×",
            _check(scale["speedup_vs_where_filter_p50"] >= 10),
        ),
        (
            "≥ 1.8× fewer embedding calls than the naive pipeline",
            f"{ingest['fewer_embedding_calls']}× fewer calls, {ingest['fewer_texts_embedded']}× fewer texts",
            _check(ingest["fewer_embedding_calls"] >= 1.8),
        ),
        (
            "graph overhead < 5 ms p50 (no checkpointer)",
            f"{background['per_turn_ms']['p50']} ms",
            _check(background["per_turn_ms"]["p50"] < 5),
        ),
        (
            "per-turn time at turn 1,000 within 1.5× of turn 10 (SqliteSaver, p50)",
            f"{long['ratio_p50']}×",
            _check(long["ratio_p50"] <= 1.5),
        ),
    ]


def report(res: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        "# Benchmarks: langchain-session-rag side by side",
        "",
        (
            f"Run on {meta['date']} by `bash scripts/benchmark.sh run_all` ({meta['total_seconds'] / 60:.1f} min). "
            f"Machine: {meta['machine']['cpus']} CPUs ({meta['machine']['cpu']}), {meta['machine']['memory_gib']} GiB, "
            f"Python {meta['machine']['python']}, {meta['machine']['platform']}."
        ),
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
        "## Targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]
    lines += [f"| {t} | {m} | {ok} |" for t, m, ok in targets(res)]

    ingest = res["ingest_cost"]
    lines += ["", f"## Ingest ({ingest['data']})", "",
              "| pipeline | exchanges/s | stored chunks | embedding calls | texts embedded | calls per chunk | texts per chunk |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    lines += [
        f"| {r['pipeline']} | {r['exchanges_per_s']} | {r['stored_chunks']} | {r['embedding_calls']} | "
        f"{r['texts_embedded']} | {r['calls_per_stored_chunk']} | {r['texts_per_stored_chunk']} |"
        for r in ingest["pipelines"]
    ]

    scale = res["retrieval_scale"]
    systems = [
        k
        for k in scale["stages"][0]
        if isinstance(scale["stages"][0][k], dict) and "without_query_embedding" in scale["stages"][0][k]
    ]
    lines += ["", f"## Scoped retrieval ({scale['users']} users, k={scale['k']}, {scale['queries']} queries per stage)", "",
              'p50 / p95 in ms; "+ embedding" embeds each query with the real model.', "",
              "| chunks | system | without query embedding | + embedding (p50) | first query of each user (p50) |",
              "|---|---|---|---|---|"]  # fmt: skip
    for stage in scale["stages"]:
        for name in systems:
            row = stage[name]
            lines.append(
                f"| {stage['chunks']:,} | {name} | {row['without_query_embedding']['p50']} / "
                f"{row['without_query_embedding']['p95']} | {row['with_query_embedding']['p50']} | "
                f"{row['first_query_per_user']['p50']} |"
            )
    cold = scale["stages"][-1]["ours (hybrid, default)"].get("cold_process_first_query_per_user")
    if cold:
        lines += ["", (f"A new process over the {scale['stages'][-1]['chunks']:,}-chunk store: first query of each user "
                  f"(loads that user's replica) p50 {cold['p50']} ms, p95 {cold['p95']} ms; that process peaks at "
                  f"{cold['peak_rss_mb']} MB with all 100 users loaded.")]  # fmt: skip

    graph = res["graph_overhead"]
    lines += ["", "## Graph overhead per turn", "", f"{graph['note']}; {graph['turns']} turns.", "",
              "| writes | p50 ms | p95 ms | mean ms | wall per turn incl. final flush |", "|---|---|---|---|---|"]  # fmt: skip
    for row in graph["no_checkpointer"]:
        label = "background (default)" if row["background_writes"] else "awaited"
        label += ", `ainvoke`" if row.get("async") else ", `invoke`"
        t = row["per_turn_ms"]
        lines.append(f"| {label} | {t['p50']} | {t['p95']} | {t['mean']} | {row['amortized_ms_per_turn']} |")
    long = graph["sqlite_long_thread"]
    lines += ["", (f"One thread of {long['turns']:,} turns with `SqliteSaver`: p50 {long['turn_10_ms']['p50']} ms around "
              f"turn 10, {long['turn_1000_ms']['p50']} ms around turn {long['turns']:,} ({long['ratio_p50']}×); "
              f"checkpoint database {long['checkpoint_db_mb']} MB.")]  # fmt: skip

    cache = res["cache_latency"]
    lines += ["", "## Cache", "",
              (f"Through the graph with {cache['model']} and the real embeddings, {cache['questions']} questions: full turn "
              f"p50 {cache['full_turn_ms']['p50']} ms (p95 {cache['full_turn_ms']['p95']}), cache-hit turn p50 "
              f"{cache['cache_hit_turn_ms']['p50']} ms (p95 {cache['cache_hit_turn_ms']['p95']}): {cache['speedup_p50']}× "
              f"({cache['hits_in_session_2']}/{cache['questions']} repeated questions hit).")]  # fmt: skip

    foot = meta["footprint"]
    lines += ["", "## Footprint", "",
              "| run | peak RSS | wall time |", "|---|---|---|",
              f"| the demo (`bash scripts/demo.sh`: embedded store, MiniLM, one turn of SmolLM2) | {foot['demo']['peak_rss_mb']} MB | {foot['demo']['seconds']} s |",
              f"| the retrieval benchmark to {scale['stages'][-1]['chunks']:,} chunks (three systems, one process) | {meta['steps']['retrieval_scale']['peak_rss_mb']} MB | {meta['steps']['retrieval_scale']['seconds']} s |",
              "",
              "On disk per 1,000 chunks: " + ", ".join(f"{k} {v} MB" for k, v in scale["disk_mb_per_1k_chunks"].items())
              + " (ours stores 15 metadata keys per chunk in 32 shard collections)."]  # fmt: skip

    loc = res["locomo_report"]
    lines += ["", "## Retrieval quality: LoCoMo evidence recall (%)", "",
              f"{loc['data']}; {loc['embedding_model']}. \"tok\": retrieved prompt tokens (marker + text, cl100k).", "",
              "| unit | ranking | r@5 | r@25 | r@512 tok | r@600 tok | r@1024 tok |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in loc["results"]:
        k, t = r["recall_at_k"], r["recall_at_tokens"]
        ranking = "hybrid" if r["strategy"]["lexical_weight"] > 0 else "dense"
        lines.append(f"| {r['strategy']['name']} | {ranking} | {k['5']['overall']} | {k['25']['overall']} | "
                     f"{t['512']['overall']} | {t['600']['overall']} | {t['1024']['overall']} |")  # fmt: skip
    lines.append(f"| DRAGON, dialog turns (paper) | dense | {loc['paper_table_3']['turn k=5']['overall']} | "
                 f"{loc['paper_table_3']['turn k=25']['overall']} | | | |")  # fmt: skip
    lines += ["", "Plots: `retrieval_latency.png`, `ingest_cost.png`, `long_thread.png`, `locomo_recall.png`.", ""]
    return "\n".join(lines)


def plots(res: dict[str, Any]) -> None:
    import matplotlib as mpl  # noqa: PLC0415 - only for the report

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    scale = res["retrieval_scale"]["stages"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in [k for k in scale[0] if isinstance(scale[0][k], dict) and "without_query_embedding" in scale[0][k]]:
        ax.plot(
            [s["chunks"] for s in scale],
            [s[name]["without_query_embedding"]["p50"] for s in scale],
            marker="o",
            label=name,
        )
    ax.set(xscale="log", yscale="log", xlabel="stored chunks (100 users)", ylabel="p50 ms, one user's top 4",
           title="Scoped retrieval latency (query vector given)")  # fmt: skip
    ax.grid(visible=True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "retrieval_latency.png", dpi=110)

    ingest = res["ingest_cost"]["pipelines"]
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [r["pipeline"] for r in ingest]
    ax.bar([n + "\ncalls" for n in names], [r["embedding_calls"] for r in ingest], color="tab:blue")
    ax.bar([n + "\ntexts" for n in names], [r["texts_embedded"] for r in ingest], color="tab:orange")
    ax.set(ylabel="count", title="Embedding work to ingest the LoCoMo dev sessions")
    fig.tight_layout()
    fig.savefig(RESULTS / "ingest_cost.png", dpi=110)

    series = res["graph_overhead"]["sqlite_long_thread"]["series_ms"]
    window = 25
    rolling = [
        sorted(series[max(0, i - window) : i + 1])[len(series[max(0, i - window) : i + 1]) // 2]
        for i in range(len(series))
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, len(series) + 1), series, alpha=0.25, label="per turn")
    ax.plot(range(1, len(series) + 1), rolling, label=f"rolling median ({window})")
    ax.set(xlabel="turn of one thread", ylabel="ms", title="Per-turn time with SqliteSaver (fake model)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "long_thread.png", dpi=110)

    loc = res["locomo_report"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in loc["results"]:
        budgets = sorted(r["recall_at_tokens"], key=int)
        label = f"{r['strategy']['name']} ({'hybrid' if r['strategy']['lexical_weight'] > 0 else 'dense'})"
        ax.plot(
            [int(b) for b in budgets], [r["recall_at_tokens"][b]["overall"] for b in budgets], marker="o", label=label
        )
    ax.axhline(loc["paper_table_3"]["turn k=25"]["overall"], color="grey", linestyle="--", label="DRAGON turns, k=25")
    ax.set(xlabel="retrieved prompt tokens", ylabel="evidence recall %", title="LoCoMo recall vs token budget")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "locomo_recall.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from existing results")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    meta_path = RESULTS / "run_all.json"
    if args.report_only:
        meta = json.loads(meta_path.read_text())
    else:
        started = time.perf_counter()
        steps = {name: run(name, argv) for name, argv in STEPS}
        meta = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine(),
            "versions": versions(),
            "steps": steps,
            "footprint": {"demo": demo_footprint()},
        }
        meta["total_seconds"] = round(time.perf_counter() - started, 1)
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    res = {name: load(name) for name, _ in STEPS}
    (RESULTS / "REPORT.md").write_text(report(res, meta))
    plots(res)
    print((RESULTS / "REPORT.md").read_text())


if __name__ == "__main__":
    main()
