"""Run every benchmark side by side in one go; write the JSON, a markdown report and PNG plots.

Each benchmark runs in its own process (its peak RSS is read from the OS); then ``results/REPORT.md`` and
``results/*.png`` are written from the JSON files, with the date, the machine and the package versions.
``benchmarks/results/`` is generated output: it is not committed (the README holds the tables).
The LoCoMo-based parts read ``--data PATH``, else ``$LOCOMO_PATH``, else the bundled sample (labelled as such).
Run: LOCOMO_PATH=/path/to/locomo_dev.json bash scripts/benchmark.sh run_all
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

import locomo
import locomo_data

HERE = Path(__file__).parent
RESULTS = HERE / "results"
ROOT = HERE.parent
STEPS = ("ingest_cost", "retrieval_scale", "graph_overhead", "cache_latency", "locomo")
USES_LOCOMO = {"ingest_cost", "retrieval_scale", "locomo"}
PACKAGES = (
    "langchain-session-rag", "langchain-core", "langgraph", "langchain-chroma", "chromadb", "tiktoken",
    "sentence-transformers", "torch", "xllamacpp", "numpy",
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
    loose, careful = ingest["vs_naive"], ingest["vs_naive_batched"]
    return [
        (
            f"scoped retrieval at {scale['chunks']:,} chunks ≥ 10× faster than the `where` filter (p50)",
            f"{scale['speedup_vs_where_filter_p50']}×",
            _check(scale["speedup_vs_where_filter_p50"] >= 10),
        ),
        (
            "≥ 1.8× fewer embedding calls than the naive pipeline (unbatched: one call per exchange and per segment)",
            f"{loose['fewer_embedding_calls']}× fewer calls",
            _check(loose["fewer_embedding_calls"] >= 1.8),
        ),
        (
            "the same target against the batched naive pipeline (one call per session for each step)",
            f"{careful['fewer_embedding_calls']}× fewer calls",
            _check(careful["fewer_embedding_calls"] >= 1.8),
        ),
        (
            "texts embedded, against either naive pipeline (no target was set; the fair measure of work)",
            f"{careful['fewer_texts_embedded']}× fewer texts",
            "",
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


def systems_of(stage: dict[str, Any]) -> list[str]:
    return [k for k, v in stage.items() if isinstance(v, dict) and "without_query_embedding" in v]


def ingest_lines(ingest: dict[str, Any]) -> list[str]:
    lines = ["", f"## Ingest ({ingest['data']})", "",
             f"Seconds: the best of {ingest['repeats']} rounds (the three pipelines alternate within a round); all rounds listed.", "",
             "| pipeline | seconds (best) | all rounds | load avg before→after, per round | exchanges/s | stored chunks | embedding calls | texts embedded | texts per chunk |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    lines += [
        f"| {r['pipeline']} | {r['seconds']} | {', '.join(str(x) for x in r['seconds_all_rounds'])} | "
        f"{', '.join(f'{a}→{b}' for a, b in r.get('load_avg_1min_all_rounds', []))} | "
        f"{r['exchanges_per_s']} | {r['stored_chunks']} | {r['embedding_calls']} | {r['texts_embedded']} | "
        f"{r['texts_per_stored_chunk']} |"
        for r in ingest["pipelines"]
    ]
    for label, key in (("naive (unbatched)", "vs_naive"), ("naive, batched", "vs_naive_batched")):
        v = ingest[key]
        lines.append(
            f"\nAgainst {label}: {v['fewer_embedding_calls']}× fewer calls, {v['fewer_texts_embedded']}× fewer texts, "
            f"{v['speedup_best_round']}× faster (best rounds; per round {', '.join(str(x) for x in v['speedup_per_round'])})."
        )
    return lines


def retrieval_lines(scale: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    lines = ["", f"## Scoped retrieval ({scale['users']} users, k={scale['k']}, {scale['queries']} queries per stage)", "",
             f"Data: {scale.get('data', 'LoCoMo')}.", "",
             ('p50 / p95 in ms; "+ embedding" embeds each query with the real model. "ours without replica" calls the '
             "store's index as the memory does without its replica (there is no public switch to turn it off)."), "",
             "| chunks | system | p50 / p95, query vector given | × ours (p50) | + embedding (p50) | first query of each user (p50) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for stage in scale["stages"]:
        ratios = stage.get("p50_over_ours_hybrid", {})
        for name in systems_of(stage):
            row = stage[name]
            lines.append(
                f"| {stage['chunks']:,} | {name} | {row['without_query_embedding']['p50']} / "
                f"{row['without_query_embedding']['p95']} | {ratios.get(name, '')} | {row['with_query_embedding']['p50']} | "
                f"{row['first_query_per_user']['p50']} |"
            )
    cold = scale["stages"][-1]["ours (hybrid, default)"].get("cold_process_first_query_per_user")
    if cold:
        lines += ["", (f"A new process over (a copy of) the {scale['stages'][-1]['chunks']:,}-chunk store: first query of each "
                  f"user (loads that user's replica) p50 {cold['p50']} ms, p95 {cold['p95']} ms; that process peaks at "
                  f"{cold['peak_rss_mb']} MB with all {scale['users']} users loaded.")]  # fmt: skip
    over = scale.get("over_capacity")
    if over:
        lines += ["", (f"### More users than the replica cache holds: {over['users']:,} users × {over['per_user']} chunks "
                  f"({over['chunks']:,} chunks; the cache keeps {over['replica_users']:,} users)"), "",
                  "| queries | p50 ms | p95 ms |", "|---|---|---|"]  # fmt: skip
        lines += [f"| {name} | {row['p50']} | {row['p95']} |" for name, row in over.items() if isinstance(row, dict)]
    lines += ["", (f"Peak RSS of the retrieval benchmark process: {scale['peak_rss_mb']} MB "
              f"({scale.get('peak_rss_mb_before_over_capacity', '?')} MB before the over-capacity run); "
              f"{meta['steps']['retrieval_scale']['seconds']} s.")]  # fmt: skip
    return lines


def _recall(t: dict[str, Any]) -> list[str]:
    k, tok, text = t["recall_at_k"], t["recall_at_tokens"], t["recall_at_text_tokens"]
    return [k["5"]["overall"], k["25"]["overall"], tok["512"]["overall"], tok["600"]["overall"],
            tok["1024"]["overall"], text["600"]["overall"]]  # fmt: skip


def locomo_more_lines(loc: dict[str, Any], by: dict[Any, Any], names: list[str], weight: float) -> list[str]:
    """The lexical-weight tables, the all-five table and the paired differences."""
    lines: list[str] = []
    weights = loc["lexical_weights"]
    for sp in [x for x in ("tune", "report") if x in loc["splits"]]:
        lines += ["", f"### r@600 tok by `lexical_weight`, {sp} split ({', '.join(loc['splits'][sp])})", "",
                  "| strategy | " + " | ".join(str(w) for w in weights) + " |", "|---" * (len(weights) + 1) + "|"]  # fmt: skip
        for n in names:
            cells = [
                str(by[(n, w)]["splits"][sp]["recall_at_tokens"]["600"]["overall"]) if (n, w) in by else ""
                for w in weights
            ]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    if "report" in loc["splits"]:
        lines += ["", f"### All five dev conversations (includes the tuning split), hybrid {weight}", "",
                  "| strategy | units | r@5 | r@25 | r@512 tok | r@600 tok | r@1024 tok | r@600 text tok |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for n in names:
            if (n, weight) in by:
                t = by[(n, weight)]["splits"]["all"]
                lines.append(f"| {n} | {t['units']} | " + " | ".join(str(x) for x in _recall(t)) + " |")
    if loc.get("comparisons"):
        lines += ["", "### Paired differences on the report split (points, 95% bootstrap interval over questions)", "",
                  "| a − b | r@512 tok | r@600 tok | r@5 |", "|---|---|---|---|"]  # fmt: skip
        for c in loc["comparisons"]:
            cells = [
                f"{c[m]['difference']:+} [{c[m]['ci95'][0]:+}, {c[m]['ci95'][1]:+}]" for m in ("t512", "t600", "k5")
            ]
            lines.append(f"| {c['a']} − {c['b']} | " + " | ".join(cells) + " |")
    return lines


def locomo_lines(loc: dict[str, Any]) -> list[str]:
    sel = loc["selection"]
    weight = sel["package_defaults"]["lexical_weight"]
    split = "report" if "report" in loc["splits"] else "all"
    lines = ["", "## Retrieval quality: LoCoMo evidence recall (%)", "",
             (f"{loc['data']}; {loc['embedding_model']}; splits {loc['splits']}. \"tok\": retrieved prompt tokens "
             '(marker + text, cl100k); "text tok": text only, as the paper counts.'), ""]  # fmt: skip
    if loc.get("bundled_sample"):
        lines += ["**Bundled sample only** (no report split): set LOCOMO_PATH to the dev file for real figures.", ""]
    if "topic_parameters" in sel:
        tp, anything = sel["topic_parameters"], sel["any_strategy"]
        defaults = sel["package_defaults"]
        differ = {k: (v, defaults[k]) for k, v in tp["chosen"].items() if k in defaults and defaults[k] != v}
        lines += [f"Chosen by {sel['metric']}:", "",
                  (f"- topic parameters: `{tp['name']}` {tp['chosen']} — package defaults {defaults}: "
                  + ("match;" if tp["matches_defaults"] else "**differ** in " + ", ".join(
                      f"{k} (chosen {a!r}, default {b!r})" for k, (a, b) in differ.items()) + ";")),
                  (f"- any strategy: `{anything['name']}` {anything['chosen']} — "
                  f"{'matches the defaults' if anything['matches_defaults'] else '**not the defaults**'}."), ""]  # fmt: skip
    tuned = sel.get("lexical_weight_per_strategy", {})
    by = {(r["strategy"]["name"], r["strategy"]["lexical_weight"]): r for r in loc["results"]}
    names = list(dict.fromkeys(r["strategy"]["name"] for r in loc["results"]))
    lines += [f"### Every strategy on the {split} split, dense and hybrid {weight} (and the weight the tuning split chose)", "",
              "| strategy | units | ranking | r@5 | r@25 | r@512 tok | r@600 tok | r@1024 tok | r@600 text tok |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for n in names:
        shown = dict.fromkeys(w for w in (0.0, weight, tuned.get(n)) if w is not None)
        for w in shown:
            if (n, w) not in by:
                continue
            t = by[(n, w)]["splits"][split]
            label = "dense" if w == 0 else f"hybrid {w}" + (" (tuned)" if w == tuned.get(n) and w != weight else "")
            lines.append(f"| {n} | {t['units']} | {label} | " + " | ".join(str(x) for x in _recall(t)) + " |")
    lines += locomo_more_lines(loc, by, names, weight)
    paper = loc["paper_table_3"]
    lines += ["", "Paper (DRAGON, dialog turns, all ten conversations): " + "; ".join(
        f"{k}: {v['overall']}" for k, v in paper.items()) + "."]  # fmt: skip
    return lines


def report(res: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        "# Benchmarks: langchain-session-rag side by side",
        "",
        (
            f"Run on {meta['date']} by `bash scripts/benchmark.sh run_all` ({meta['total_seconds'] / 60:.1f} min). "
            f"Machine: {meta['machine']['cpus']} CPUs ({meta['machine']['cpu']}), {meta['machine']['memory_gib']} GiB, "
            f"Python {meta['machine']['python']}, {meta['machine']['platform']}. Timings are from a shared machine: "
            "compare the systems within one run (they ran side by side), not across runs."
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
    lines += ingest_lines(res["ingest_cost"])
    scale = res["retrieval_scale"]
    lines += retrieval_lines(scale, meta)

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
              f"| the retrieval benchmark ({len(systems_of(scale['stages'][-1]))} systems to {scale['stages'][-1]['chunks']:,} chunks, then the over-capacity run; one process) | {meta['steps']['retrieval_scale']['peak_rss_mb']} MB | {meta['steps']['retrieval_scale']['seconds']} s |",
              "",
              "On disk per 1,000 chunks: " + ", ".join(f"{k} {v} MB" for k, v in scale["disk_mb_per_1k_chunks"].items())
              + " (ours stores 15 metadata keys per chunk in 32 shard collections)."]  # fmt: skip

    lines += locomo_lines(res["locomo"])
    lines += ["", "Plots: `retrieval_latency.png`, `ingest_cost.png`, `long_thread.png`, `locomo_recall.png`.", ""]
    return "\n".join(lines)


def plots(res: dict[str, Any]) -> None:
    import matplotlib as mpl  # noqa: PLC0415 - only for the report

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    scale = res["retrieval_scale"]["stages"]
    fig, ax = plt.subplots(figsize=(8, 5))
    for name in systems_of(scale[0]):
        ax.plot(
            [s["chunks"] for s in scale],
            [s[name]["without_query_embedding"]["p50"] for s in scale],
            marker="o",
            label=name,
        )
    over = res["retrieval_scale"].get("over_capacity")
    if over:
        for name, marker in (("ours (hybrid, default), user order: every query reloads", "v"),
                             ("ours (hybrid, default), random users", "^")):  # fmt: skip
            ax.scatter([over["chunks"]], [over[name]["p50"]], marker=marker, color="black", zorder=3,
                       label=f"{over['users']:,} users (over the replica cache): {name.split(', ', 2)[-1]}")  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="stored chunks (100 users)", ylabel="p50 ms, one user's top 4",
           title="Scoped retrieval latency (query vector given)")  # fmt: skip
    ax.grid(visible=True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "retrieval_latency.png", dpi=110)
    plt.close(fig)

    ingest = res["ingest_cost"]["pipelines"]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.8))
    names = [r["pipeline"] for r in ingest]
    for ax, key, title in zip(axes, ("embedding_calls", "texts_embedded", "seconds"),
                              ("embedding calls", "texts embedded", "seconds (best round)"), strict=True):  # fmt: skip
        ax.bar(names, [r[key] for r in ingest], color=["tab:green", "tab:red", "tab:orange"])
        ax.set_title(title)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("Ingest of the LoCoMo sessions: ours vs naive pipelines")
    fig.tight_layout()
    fig.savefig(RESULTS / "ingest_cost.png", dpi=110)
    plt.close(fig)

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
    plt.close(fig)

    fig = locomo.plot(res["locomo"])
    fig.savefig(RESULTS / "locomo_recall.png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from existing results")
    locomo_data.add_data_argument(parser)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    meta_path = RESULTS / "run_all.json"
    if args.report_only:
        meta = json.loads(meta_path.read_text())
    else:
        data = ["--data", str(locomo_data.data_path(args.data))]
        started = time.perf_counter()
        steps = {name: run(name, [str(HERE / f"{name}.py"), *(data if name in USES_LOCOMO else [])]) for name in STEPS}
        meta = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine(),
            "versions": versions(),
            "steps": steps,
            "footprint": {"demo": demo_footprint()},
        }
        meta["total_seconds"] = round(time.perf_counter() - started, 1)
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    res = {name: load(name) for name in STEPS}
    (RESULTS / "REPORT.md").write_text(report(res, meta))
    plots(res)
    print((RESULTS / "REPORT.md").read_text())


if __name__ == "__main__":
    main()
