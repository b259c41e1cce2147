"""LoCoMo evidence recall of SessionVectorMemory, through the public API, with a tuning split.

Each conversation is ingested under its own user_id, sessions as sessions, turns as messages (ids = dia_ids,
timestamps = session dates); each question retrieves with ``invoke(question, lexical_weight=w)``. Recall = share of
a question's evidence turns covered by the retrieved chunks, at k retrieved units and at retrieved-prompt-token
budgets (cl100k, marker + text of each chunk, whole chunks in rank order).

Every strategy of the sweep is scored at every lexical weight, on every conversation. Parameters (unit,
segmentation threshold, comparison, token cap, ``lexical_weight``) are chosen on the tuning split (conv-26,
conv-30) by recall at 600 prompt tokens; results are reported on the other split (conv-41, conv-42, conv-43),
and on all five, labelled. The package's defaults (read from a default ``SessionVectorMemory``) are scored as
their own strategy and compared with the tuning split's choice.

Data: ``--data PATH``, else ``$LOCOMO_PATH``, else the bundled sample (conv-26 sessions 1-4: no report split).
Writes benchmarks/results/locomo.json (not committed).
Run: bash scripts/benchmark.sh locomo [--quick] [--data PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import locomo_data
from bench_embeddings import CachedEmbeddings
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag import SessionVectorMemory, TopicSegmenter, get_default_embeddings
from langchain_session_rag.chunking import Chunk, ExchangeChunker, Turn
from langchain_session_rag.evaluation.locomo import (
    prompt_tokens,
    recall_table,
    recall_within_budget,
    score_question,
)

RESULTS = Path(__file__).parent / "results"
KS = (1, 5, 10, 25)
BUDGETS = (256, 512, 600, 1024)
WEIGHTS = (0.0, 0.2, 0.3, 0.5, 0.7)
FETCH_K = 50
SELECT_BY = ("600", "512", "1024")
"""Selection metric: overall recall at 600 retrieved prompt tokens (DRAGON's k=25 costs about that), ties broken
at 512, then 1,024 tokens."""
PAPER_TABLE_3 = {  # Maharana et al. 2024, DRAGON retriever, dialog turns (all ten conversations)
    "turn k=5": {"single": 68.0, "multi": 35.4, "temporal": 70.4, "open": 33.1, "adv": 43.9, "overall": 56.7},
    "turn k=10": {"single": 77.7, "multi": 46.6, "temporal": 77.3, "open": 40.8, "adv": 54.7, "overall": 66.2},
    "turn k=25": {"single": 87.1, "multi": 62.5, "temporal": 83.5, "open": 52.6, "adv": 66.3, "overall": 76.7},
    "turn k=50": {"single": 91.1, "multi": 73.0, "temporal": 89.6, "open": 61.7, "adv": 72.5, "overall": 82.7},
}


class TurnChunker(ExchangeChunker):
    """One chunk per message (the paper's dialog-turn unit)."""

    def chunk(self, turns: Sequence[Turn], *, default_timestamp: datetime | None = None) -> list[Chunk]:
        del default_timestamp
        return [
            Chunk(
                text=f"{t.label}: {t.text}",
                message_ids=[t.id],
                timestamp=t.timestamp,
                token_count=0,
                speakers=[t.label],
            )  # type: ignore[arg-type]
            for t in turns
        ]


class WindowChunker(ExchangeChunker):
    """Fixed token windows over the session text, ignoring exchange boundaries (the common tutorial split)."""

    window: int = 128

    def chunk(self, turns: Sequence[Turn], *, default_timestamp: datetime | None = None) -> list[Chunk]:
        del default_timestamp
        chunks: list[Chunk] = []
        lines: list[tuple[str, str]] = []
        size = 0
        for t in turns:
            line = f"{t.label}: {t.text}"
            n = self.count(line)
            if lines and size + n > self.window:
                chunks.append(self._make(lines, turns))
                lines, size = [], 0
            lines.append((t.id, line))
            size += n
        if lines:
            chunks.append(self._make(lines, turns))
        return chunks

    def _make(self, lines: list[tuple[str, str]], turns: Sequence[Turn]) -> Chunk:
        first = next(t for t in turns if t.id == lines[0][0])
        text = "\n".join(line for _, line in lines)
        return Chunk(text=text, message_ids=[i for i, _ in lines], timestamp=first.timestamp, token_count=0)  # type: ignore[arg-type]


def package_defaults(embeddings: Embeddings) -> dict[str, Any]:
    """The chunking and ranking a default ``SessionVectorMemory`` uses (read from one, not restated here)."""
    memory = SessionVectorMemory.local(
        path=tempfile.mkdtemp(prefix="locomo-defaults-"), user_id="x", embeddings=embeddings
    )
    segmenter = memory.segmenter
    if segmenter is None:  # pragma: no cover - set by the memory's validator
        msg = "a default memory has no segmenter"
        raise RuntimeError(msg)
    return {
        "chunking": memory.chunking,
        "method": segmenter.method,
        "threshold": segmenter.threshold,
        "comparison": segmenter.comparison,
        "max_tokens": segmenter.max_tokens,
        "lexical_weight": memory.lexical_weight,
        "fetch_k": memory.fetch_k,
    }


def build_memory(
    name: str, root: Path, user_id: str, embeddings: Embeddings, strategy: dict[str, Any]
) -> SessionVectorMemory:
    kwargs: dict[str, Any] = {"embeddings": embeddings, "collection_name": name, "k": 50, "fetch_k": FETCH_K}
    kind = strategy["unit"]
    if kind == "turn":
        kwargs["chunker"] = TurnChunker()
        kwargs["chunking"] = "exchange"  # store the chunker's units as they are
    elif kind == "window":
        kwargs["chunker"] = WindowChunker(max_tokens=max(strategy["window"], 32))
        kwargs["chunker"].window = strategy["window"]
        kwargs["chunking"] = "exchange"
    elif kind == "exchange":
        kwargs["chunking"] = "exchange"
    elif kind == "topic":
        kwargs["chunking"] = "topic"
        kwargs["segmenter"] = TopicSegmenter(
            embeddings, threshold=strategy["threshold"], comparison=strategy["comparison"],
            max_tokens=strategy.get("max_tokens"),
        )  # fmt: skip
    elif kind != "default":  # "default": nothing but the embeddings, as a user who sets nothing
        msg = f"unknown unit {kind!r}"
        raise ValueError(msg)
    return SessionVectorMemory.local(path=root / name, user_id=user_id, **kwargs)


def evaluate(
    conversations: list[locomo_data.Conversation],
    strategy: dict[str, Any],
    embeddings: Embeddings,
    root: Path,
    count: Callable[[str], int],
    *,
    weights: Sequence[float] = WEIGHTS,
) -> dict[str, Any]:
    """Ingest every conversation with one strategy; score every question at every lexical weight.

    Returns the per-question scores (``questions[weight]``, each row naming its conversation) and the stored
    units of each conversation; :func:`summarise` turns them into tables for a split.
    """
    name = strategy["name"]
    questions: dict[float, list[dict[str, Any]]] = {w: [] for w in weights}
    units: dict[str, list[int]] = {}
    started = time.perf_counter()
    for conv in conversations:
        memory = build_memory(name.replace(".", ""), root, conv.sample_id, embeddings, strategy)
        for session in conv.sessions:
            memory.add_messages(session.messages, session_id=session.session_id)
        units[conv.sample_id] = [count(r.text) for r in memory.backend.get(conv.sample_id, {})]
        for q in conv.questions:
            if not q.evidence:
                continue
            for weight in weights:
                docs = memory.invoke(q.question, k=max(KS) * 2, lexical_weight=weight)
                questions[weight].append({"conversation": conv.sample_id, **score_row(q, docs, count)})
    return {"strategy": strategy, "questions": questions, "units": units, "seconds": time.perf_counter() - started}


def score_row(q: locomo_data.Question, docs: list[Document], count: Callable[[str], int]) -> dict[str, Any]:
    """The package's scores of one question (``k{k}``, ``t{budget}``: marker + text), its category, recall within
    budgets counting the text only (``x{budget}``), and the prompt tokens of its first 25 chunks."""
    row: dict[str, Any] = {"category": q.category, **score_question(q.evidence, docs, count, ks=KS, budgets=BUDGETS)}
    row["tokens_k25"] = sum(prompt_tokens(docs, count)[:25])
    text_costs = prompt_tokens(docs, count, with_marker=False)
    for budget in BUDGETS:
        row[f"x{budget}"] = recall_within_budget(q.evidence, docs, text_costs, budget)
    return row


def summarise(run: dict[str, Any], weight: float, conversations: Sequence[str]) -> dict[str, Any] | None:
    """Recall tables of one strategy at one weight over the given conversations (``None`` if none of them ran)."""
    per_q = [q for q in run["questions"][weight] if q["conversation"] in conversations]
    if not per_q:
        return None
    tokens = [n for c in conversations for n in run["units"].get(c, [])]
    return {
        "conversations": sorted({q["conversation"] for q in per_q}),
        "questions": len(per_q),
        "units": len(tokens),
        "mean_unit_tokens": round(statistics.fmean(tokens), 1),
        "recall_at_k": {str(k): recall_table(per_q, f"k{k}") for k in KS},
        "recall_at_tokens": {str(b): recall_table(per_q, f"t{b}") for b in BUDGETS},
        "recall_at_text_tokens": {str(b): recall_table(per_q, f"x{b}") for b in BUDGETS},
        "tokens_at_k25": round(statistics.fmean(q["tokens_k25"] for q in per_q), 1),
    }


def splits_of(conversations: list[locomo_data.Conversation]) -> dict[str, list[str]]:
    """The splits present in the data: tune, report (when their conversations are there) and all."""
    ids = [c.sample_id for c in conversations]
    out = {
        "tune": [c for c in ids if c in locomo_data.TUNE_SPLIT],
        "report": [c for c in ids if c in locomo_data.REPORT_SPLIT],
        "all": ids,
    }
    return {name: convs for name, convs in out.items() if convs}


def results_of(run: dict[str, Any], splits: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One result per lexical weight: the strategy, its splits' tables."""
    out = []
    for weight in run["questions"]:
        tables = {name: summarise(run, weight, convs) for name, convs in splits.items()}
        out.append(
            {
                "strategy": {**run["strategy"], "lexical_weight": weight},
                "seconds": round(run["seconds"], 1),
                "splits": {name: t for name, t in tables.items() if t is not None},
            }
        )
    return out


def strategies(quick: bool, defaults: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The sweep: single turns, fixed token windows, exchanges, topic segments (threshold x comparison x cap).

    ``defaults`` (from :func:`package_defaults`) adds the package's own configuration as the strategy "default".
    """
    out: list[dict[str, Any]] = [{"name": "turn", "unit": "turn"}]
    out.extend({"name": f"window-{w}", "unit": "window", "window": w} for w in ((128,) if quick else (64, 128, 256)))
    out.append({"name": "exchange", "unit": "exchange"})
    thresholds = (0.6, 0.7) if quick else (0.6, 0.65, 0.7, 0.75, 0.8)
    caps = (None, 128) if quick else (None, 128, 256)
    for comparison in ("centroid", "previous"):
        for cap in caps:
            out.extend(
                {"name": f"topic-{comparison}-{t}" + (f"-max{cap}" if cap else ""), "unit": "topic", "threshold": t,
                 "comparison": comparison, "max_tokens": cap}
                for t in thresholds
            )  # fmt: skip
    if defaults is not None:
        out.append(
            {"name": "default", "unit": "default", **{k: v for k, v in defaults.items() if k != "lexical_weight"}}
        )
    return out


# -- choosing on the tuning split ------------------------------------------------------------------
def _key(result: dict[str, Any], split: str) -> tuple[float, ...]:
    tokens = result["splits"][split]["recall_at_tokens"]
    return tuple(tokens[b]["overall"] for b in SELECT_BY)


def select(
    results: list[dict[str, Any]], among: Callable[[dict[str, Any]], bool], split: str = "tune"
) -> dict[str, Any]:
    """The best result on ``split`` among the strategies ``among`` accepts (first in sweep order on a full tie)."""
    candidates = [r for r in results if among(r["strategy"]) and split in r["splits"]]
    best = max(_key(r, split) for r in candidates)
    return next(r for r in candidates if _key(r, split) == best)


def config_of(strategy: dict[str, Any]) -> dict[str, Any]:
    keys = ("unit", "window", "threshold", "comparison", "max_tokens", "lexical_weight")
    return {k: strategy[k] for k in keys if k in strategy}


def selections(results: list[dict[str, Any]], defaults: dict[str, Any]) -> dict[str, Any]:
    """What the tuning split chooses, and whether the package's defaults are that choice."""
    if not any("tune" in r["splits"] for r in results):
        return {"note": "no tuning-split conversation in this data: nothing chosen", "package_defaults": defaults}
    swept = [r for r in results if r["strategy"]["unit"] != "default"]
    if not any(r["strategy"]["unit"] == "topic" for r in swept):  # --only without a topic strategy
        return {"note": "no topic strategy swept (--only): nothing chosen", "package_defaults": defaults}
    topic = select(swept, lambda s: s["unit"] == "topic")
    anything = select(swept, lambda _: True)
    default_config = {"unit": "topic", "threshold": defaults["threshold"], "comparison": defaults["comparison"],
                      "method": defaults["method"],
                      "max_tokens": defaults["max_tokens"], "lexical_weight": defaults["lexical_weight"]}  # fmt: skip
    per_strategy = {}
    for name in dict.fromkeys(r["strategy"]["name"] for r in results):
        best = select(results, lambda s, name=name: s["name"] == name)
        per_strategy[name] = best["strategy"]["lexical_weight"]
    return {
        "metric": f"overall recall at {SELECT_BY[0]} prompt tokens on the tuning split (ties: {', '.join(SELECT_BY[1:])})",
        "package_defaults": defaults,
        "topic_parameters": {
            "chosen": config_of(topic["strategy"]),
            "name": topic["strategy"]["name"],
            "matches_defaults": config_of(topic["strategy"]) == default_config,
        },
        "any_strategy": {
            "chosen": config_of(anything["strategy"]),
            "name": anything["strategy"]["name"],
            "matches_defaults": config_of(anything["strategy"]) == default_config,
        },
        "lexical_weight_per_strategy": per_strategy,
    }


def paired_bootstrap(a: list[float], b: list[float], resamples: int = 2000, seed: int = 0) -> dict[str, float]:
    """Mean difference a - b (points) over the same questions, with a 95% bootstrap interval."""
    rng = random.Random(seed)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    means = sorted(statistics.fmean(rng.choices(diffs, k=n)) for _ in range(resamples))
    return {
        "difference": round(100 * statistics.fmean(diffs), 1),
        "ci95": [round(100 * means[int(0.025 * resamples)], 1), round(100 * means[int(0.975 * resamples) - 1], 1)],
        "questions": n,
    }


def comparisons(
    runs: dict[str, dict[str, Any]], picks: dict[str, Any], split: str, convs: list[str]
) -> list[dict[str, Any]]:
    """Paired differences on ``split`` between the default and the main alternatives, at 512 and 600 tokens and k=5."""
    weight = picks["package_defaults"]["lexical_weight"]
    pairs = [
        ("default", weight, "window-128", weight),
        ("default", weight, "exchange", weight),
        ("default", weight, "default", 0.0),
    ]
    chosen = picks.get("any_strategy", {}).get("name")
    if chosen:
        pairs.append(("default", weight, chosen, picks["any_strategy"]["chosen"]["lexical_weight"]))
    out = []
    for a, wa, b, wb in pairs:
        if a not in runs or b not in runs or (a, wa) == (b, wb):
            continue
        if wa not in runs[a]["questions"] or wb not in runs[b]["questions"]:  # --lexical left that weight out
            continue
        qa = [q for q in runs[a]["questions"][wa] if q["conversation"] in convs]
        qb = [q for q in runs[b]["questions"][wb] if q["conversation"] in convs]
        row = {"a": f"{a} w={wa}", "b": f"{b} w={wb}", "split": split}
        for metric in ("t512", "t600", "k5"):
            row[metric] = paired_bootstrap([q[metric] for q in qa], [q[metric] for q in qb])
        out.append(row)
    return out


def _line(result: dict[str, Any]) -> str:
    s = result["strategy"]
    parts = [f"{s['name'] + ' w=' + str(s['lexical_weight']):<36}"]
    for split, t in result["splits"].items():
        parts.append(
            f"{split}: r@5 {t['recall_at_k']['5']['overall']:5.1f} r@512tok {t['recall_at_tokens']['512']['overall']:5.1f} "
            f"r@600tok {t['recall_at_tokens']['600']['overall']:5.1f}"
        )
    return "  ".join(parts) + f"  ({result['seconds']:.0f} s)"


def plot(payload: dict[str, Any], split: str | None = None) -> Any:
    """Two panels on one split (default: report, else all): recall against prompt tokens for the main units at
    dense and default ranking, and every strategy's recall at 600 tokens at each lexical weight. Returns the figure.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415 - only for plots

    split = split or ("report" if "report" in payload["splits"] else "all")
    results = [r for r in payload["results"] if split in r["splits"]]
    weight = payload["selection"]["package_defaults"]["lexical_weight"]
    by = {(r["strategy"]["name"], r["strategy"]["lexical_weight"]): r["splits"][split] for r in results}
    names = list(dict.fromkeys(r["strategy"]["name"] for r in results))
    weights = sorted({r["strategy"]["lexical_weight"] for r in results})
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, max(4.5, 0.24 * len(names) + 1.6)), gridspec_kw={"width_ratios": [1, 1.25]}
    )
    chosen = payload["selection"].get("any_strategy", {})
    main = [n for n in ("turn", "window-128", "exchange", "default", chosen.get("name")) if n in names]
    for n, color, marker in zip(dict.fromkeys(main), plt.get_cmap("tab10").colors, "osD^v", strict=False):
        for w, style in ((0.0, "--"), (weight, "-")):
            if (n, w) in by:
                t = by[(n, w)]["recall_at_tokens"]
                budgets = sorted(t, key=int)
                left.plot([int(b) for b in budgets], [t[b]["overall"] for b in budgets], style, marker=marker,
                          color=color, markerfacecolor="none" if n != "default" else color,
                          linewidth=2.2 if n == "default" else 1.2, zorder=3 if n == "default" else 2,
                          label=f"{n}, {'dense' if w == 0 else f'hybrid {w}'}")  # fmt: skip
    left.axhline(payload["paper_table_3"]["turn k=25"]["overall"], color="grey", linestyle=":",
                 label="paper: DRAGON turns k=25 (~600 tok, 10 conv.)")  # fmt: skip
    left.set(xlabel="retrieved prompt tokens (marker + text)", ylabel="evidence recall %",
             title=f"LoCoMo recall vs token budget ({split}: {', '.join(payload['splits'][split])})")  # fmt: skip
    left.legend(fontsize=7)
    left.grid(visible=True, alpha=0.3)
    shades = plt.get_cmap("viridis")
    for i, w in enumerate(weights):
        xs = [by[(n, w)]["recall_at_tokens"]["600"]["overall"] if (n, w) in by else float("nan") for n in names]
        color = shades(i / max(1, len(weights) - 1))
        right.scatter(xs, range(len(names)), s=28, edgecolors=color, facecolors=color if w == weight else "none",
                      label=f"lexical_weight {w}" + (" (default)" if w == weight else ""))  # fmt: skip
    tuned = payload["selection"].get("lexical_weight_per_strategy", {})
    for i, n in enumerate(names):
        if n in tuned and (n, tuned[n]) in by:
            right.scatter(by[(n, tuned[n])]["recall_at_tokens"]["600"]["overall"], i, marker="x", color="black", s=40)
    if tuned:
        right.scatter([], [], marker="x", color="black", label="weight chosen on the tuning split")
    right.set_yticks(range(len(names)), names, fontsize=7)
    right.invert_yaxis()
    right.set(xlabel="evidence recall % at 600 prompt tokens", title=f"Every strategy of the sweep ({split})")
    right.grid(visible=True, axis="x", alpha=0.3)
    right.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def sweep(
    path: Path,
    conversations: list[locomo_data.Conversation],
    *,
    quick: bool = False,
    only: Sequence[str] | None = None,
    weights: Sequence[float] = WEIGHTS,
    verbose: bool = True,
) -> dict[str, Any]:
    """Score the strategies (all, ``quick``'s fewer, or ``only`` these and the default); choose on the tuning split."""
    splits = splits_of(conversations)
    embeddings = CachedEmbeddings(get_default_embeddings())
    defaults = package_defaults(embeddings)
    if defaults["lexical_weight"] not in weights:
        weights = (*weights, defaults["lexical_weight"])
    count = functools.lru_cache(maxsize=None)(ExchangeChunker().count)  # each retrieved text counted once
    root = Path(tempfile.mkdtemp(prefix="locomo-"))
    if verbose:
        print(f"data: {locomo_data.describe(path, conversations)}; splits: {splits}", flush=True)
    runs: dict[str, dict[str, Any]] = {}
    results = []
    started = time.perf_counter()
    for strategy in strategies(quick, defaults):
        if only and strategy["name"] not in only and strategy["name"] != "default":
            continue
        run = evaluate(conversations, strategy, embeddings, root, count, weights=weights)
        runs[strategy["name"]] = run
        for result in results_of(run, splits):
            results.append(result)
            if verbose:
                print(_line(result), flush=True)
    picks = selections(results, defaults)
    compared = comparisons(runs, picks, "report", splits["report"]) if "report" in splits else []
    return {
        "benchmark": "locomo",
        "date": time.strftime("%Y-%m-%d"),
        "data": locomo_data.describe(path, conversations),
        "bundled_sample": locomo_data.is_sample(path),
        "splits": splits,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "versions": {p: version(p) for p in ("langchain-session-rag", "chromadb", "sentence-transformers")},
        "embedding_model": embeddings.model_id,
        "lexical_weights": list(weights),
        "seconds": round(time.perf_counter() - started, 1),
        "paper_table_3": PAPER_TABLE_3,
        "selection": picks,
        "comparisons": compared,
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer strategies")
    parser.add_argument("--only", nargs="*", help="strategy names to run (the default is always run)")
    parser.add_argument("--out", default=str(RESULTS / "locomo.json"))
    parser.add_argument("--lexical", nargs="*", type=float, help=f"lexical weights to score (default {WEIGHTS})")
    locomo_data.add_data_argument(parser)
    args = parser.parse_args()
    path = locomo_data.data_path(args.data)
    payload = sweep(
        path, locomo_data.load(path), quick=args.quick, only=args.only, weights=tuple(args.lexical or WEIGHTS)
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps({"selection": payload["selection"], "comparisons": payload["comparisons"]}, indent=1))


if __name__ == "__main__":
    main()
