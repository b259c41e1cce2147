"""Long use: does the right fact survive months of repeated questions, non-answers, corrections and invented claims?

Usage::

    python benchmarks/long_use.py [--data FILE] [--splits tune report] [--out benchmarks/results/long_use.json]

The scenarios come from ``long_use_data.py`` (generated in memory from its fixed seeds, or read from ``--data``,
a file it wrote). Each scenario is one user of one embedded store (a temporary folder, the bundled embedding
model), fed as the graph feeds it: every exchange is stored after its turn with
``memory.for_user(user).add_messages([user, assistant], session_id=..., chunking="exchange")`` (written through,
as ``background_writes=False``), timestamps in the message dicts; the first session is imported history, stored
in one batch. Before an ask is stored, it is a probe, queried as the graph's ``retrieve_memories`` does
(``k=4``, ``source_type=["session", "note"]``, the current session's turns excluded as the graph's window holds
them), in four modes: ``graph`` (the graph's and the CLI's defaults: the recall policy and the 0.1 floor),
``floor_0.3`` (the CLI's floor before), ``no_floor`` (the policy alone) and ``before`` (0.6.0's graph: no floor,
ranked by score alone, ``recall_policy=None``); queries with ``k=10`` (no floor; with the policy and without) rank
the evidence for the rank measures.

Measures, per split and mode:

- ``recall@3`` (and ``@4``, what the prompt receives) of the expected evidence, the newest user statement of the
  fact, by the number of earlier asks of the same fact already stored (0, 1, 5, 20), over facts never
  corrected and asked with non-answers only (``clean``, the issue's measure), over facts asked with non-answers
  only (corrected or not) and over all probes;
- ``stale_or_invented@3``: of the probes with a stale statement or a model-invented claim of their fact stored,
  the share whose top 3 holds one; ``unmarked_stale_or_invented@3``: one shown without its marker (a stale
  statement not marked superseded, an invented claim not marked as said by the assistant);
- ``noise@3``: chunks in the top 3 that are not the expected evidence (mean per probe), and what they are
  (``repeat``: earlier asks of the same fact with their non-answers; ``stale``; ``invented``; ``other_fact``;
  ``small_talk``);
- ``invented_outranks``: of the probes with an invented claim stored, the share where one ranks above the user's
  statement (a statement missing from the top 10 ranks below anything found);
- ``correction_first``: of the probes after a correction, the share where the newest correction ranks first;
  ``stale_outranks_correction``: the share where an older statement of the fact ranks above the newest one.

``recall@3_curve_clean`` holds recall@3 after 0 to 20 earlier asks; ``probes`` every probe's ranked ids.
Takes about 4-5 minutes on 2 cores (about 3,900 exchanges embedded and stored, 7,000 queries).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from long_use_data import generate

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD
from langchain_session_rag.stores.base import decode_message_ids

HERE = Path(__file__).parent
GRAPH_K, DEEP_K, TOP = 4, 10, 3
WINDOW_TURNS = 6  # the graph's default window: these turns of the session are in the prompt, not retrieved
CHECKPOINTS = (0, 1, 5, 20)
MODES: dict[str, dict[str, Any]] = {
    "graph": {"score_threshold": DEFAULT_SCORE_THRESHOLD},  # the graph's and the CLI's defaults: floor and policy
    "floor_0.3": {"score_threshold": 0.3},  # the CLI's floor before
    "no_floor": {"score_threshold": None},  # the recall policy without a floor
    "before": {"score_threshold": None, "recall_policy": None},  # 0.6.0's graph: no floor, ranked by score alone
}
DEEP = {"policy": {}, "before": {"recall_policy": None}}
CATEGORIES = ("repeat", "stale", "invented", "other_fact", "small_talk")


def messages(exchange: dict[str, Any]) -> list[dict[str, str]]:
    """The exchange as the graph stores it: the user's message and the answer, with ids and the timestamp."""
    return [
        {"role": "user", "content": exchange["user"], "id": f"{exchange['id']}:u", "timestamp": exchange["time"]},
        {
            "role": "assistant",
            "content": exchange["assistant"],
            "id": f"{exchange['id']}:a",
            "timestamp": exchange["time"],
        },
    ]


def exchange_of(doc: Any) -> str:
    """The id of the (first) exchange a retrieved chunk holds."""
    ids = decode_message_ids(doc.metadata.get("message_ids"))
    return ids[0].rsplit(":", 1)[0] if ids else ""


def category(chunk: str, probe_fact: str, probe: dict[str, Any], exchanges: dict[str, dict[str, Any]]) -> str:
    """What a retrieved chunk is, seen from the probe: expected, stale, invented, repeat, other_fact, small_talk."""
    if chunk == probe["expected"]:
        return "expected"
    if chunk in probe["stale"]:
        return "stale"
    if chunk in probe["invented"]:
        return "invented"
    exchange = exchanges.get(chunk, {})
    if exchange.get("kind") == "small_talk":
        return "small_talk"
    return "repeat" if exchange.get("fact") == probe_fact else "other_fact"


def rank(ids: list[str], wanted: set[str]) -> int:
    """1-based rank of the first of ``wanted`` in ``ids``; past the end when absent."""
    return next((n for n, i in enumerate(ids, 1) if i in wanted), len(ids) + 1_000)


def run_scenario(memory: SessionVectorMemory, scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """Feed one scenario's sessions in order; every ask is queried before it is stored. One record per probe."""
    mem = memory.for_user(scenario["user_id"])
    exchanges = {e["id"]: e for s in scenario["sessions"] for e in s["exchanges"]}
    records = []
    for session in scenario["sessions"]:
        if session["imported"]:
            batch = [m for e in session["exchanges"] for m in messages(e)]
            mem.add_messages(batch, session_id=session["id"], chunking="exchange")
            continue
        window: list[str] = []
        for exchange in session["exchanges"]:
            if "probe" in exchange:
                records.append(probe(mem, exchange, window[-2 * WINDOW_TURNS :], exchanges))
            mem.add_messages(messages(exchange), session_id=session["id"], chunking="exchange")
            window += [m["id"] for m in messages(exchange)]
    return records


def probe(
    mem: SessionVectorMemory, exchange: dict[str, Any], window: list[str], exchanges: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Query one ask as the graph (and the CLI) would, and score what comes back."""
    spec = exchange["probe"]
    options = {"source_type": ["session", "note"], "exclude_message_ids": window}
    record: dict[str, Any] = {
        "fact": exchange["fact"],
        **{k: spec[k] for k in ("earlier_asks", "nonanswers_only", "corrected")},
    }
    record["has_stale_or_invented"] = bool(spec["stale"] or spec["invented"])
    record["has_invented"] = bool(spec["invented"])
    for mode, mode_options in MODES.items():
        docs = mem.invoke(exchange["user"], k=GRAPH_K, **mode_options, **options)
        ids = [exchange_of(d) for d in docs]
        cats = [category(i, exchange["fact"], spec, exchanges) for i in ids]
        marked = [bool(d.metadata.get("superseded_on")) or d.metadata.get("worth") == "claim" for d in docs]
        record[mode] = {
            "ids": ids,
            "hit3": "expected" in cats[:TOP],
            "hit4": "expected" in cats,
            "first": bool(cats) and cats[0] == "expected",
            "bad3": any(c in {"stale", "invented"} for c in cats[:TOP]),
            "unmarked3": any(c in {"stale", "invented"} and not m for c, m in zip(cats[:TOP], marked, strict=False)),
            "noise3": Counter(c for c in cats[:TOP] if c != "expected"),
            "returned": len(ids),
        }
    for name, deep_options in DEEP.items():
        found = mem.invoke(exchange["user"], k=DEEP_K, score_threshold=None, **deep_options, **options)
        deep = [exchange_of(d) for d in found]
        record[f"{name}_prefix_ok"] = deep[:GRAPH_K] == record["no_floor" if name == "policy" else "before"]["ids"]
        record[f"{name}_expected_rank"] = rank(deep, {spec["expected"]})
        record[f"{name}_invented_rank"] = rank(deep, set(spec["invented"]))
        record[f"{name}_stale_rank"] = rank(deep, set(spec["stale"]))
    return record


def share(flags: list[bool]) -> float | None:
    """The share of true values, in percent; None for no values."""
    return round(100 * sum(flags) / len(flags), 1) if flags else None


def summarise(records: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The split's measures for one retrieval mode."""
    clean = [r for r in records if r["nonanswers_only"] and not r["corrected"]]
    nonanswers = [r for r in records if r["nonanswers_only"]]
    out: dict[str, Any] = {"probes": len(records)}
    for name, subset in (("clean", clean), ("nonanswers_only", nonanswers), ("all", records)):
        out[f"recall@3_{name}"] = {
            n: share([r[mode]["hit3"] for r in subset if r["earlier_asks"] == n]) for n in CHECKPOINTS
        }
        out[f"recall@4_{name}"] = {
            n: share([r[mode]["hit4"] for r in subset if r["earlier_asks"] == n]) for n in CHECKPOINTS
        }
        out[f"probes_{name}"] = {n: sum(r["earlier_asks"] == n for r in subset) for n in CHECKPOINTS}
    out["recall@3_curve_clean"] = [share([r[mode]["hit3"] for r in clean if r["earlier_asks"] == n]) for n in range(21)]
    out["recall@3_overall"] = share([r[mode]["hit3"] for r in records])
    eligible = [r for r in records if r["has_stale_or_invented"]]
    out["stale_or_invented@3"] = share([r[mode]["bad3"] for r in eligible])
    out["stale_or_invented@3_probes"] = len(eligible)
    out["unmarked_stale_or_invented@3"] = share([r[mode]["unmarked3"] for r in eligible])
    noise = Counter[str]()
    for r in records:
        noise.update(r[mode]["noise3"])
    out["noise@3_mean"] = round(sum(noise.values()) / len(records), 2)
    out["noise@3_by_kind"] = {c: round(noise[c] / len(records), 2) for c in CATEGORIES}
    out["empty_results"] = share([r[mode]["returned"] == 0 for r in records])
    out["mean_returned"] = round(statistics.mean(r[mode]["returned"] for r in records), 2)
    corrected = [r for r in records if r["corrected"]]
    out["correction_first"] = share([r[mode]["first"] for r in corrected])
    out["correction_first_probes"] = len(corrected)
    return out


def rank_measures(records: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """Measures from the k=10 ranking (no floor), with the policy or ``before`` it: invented above the user's
    statement, stale above the newest correction; the prefix check."""
    invented = [r for r in records if r["has_invented"]]
    corrected = [r for r in records if r["corrected"]]
    return {
        "invented_outranks": share([r[f"{name}_invented_rank"] < r[f"{name}_expected_rank"] for r in invented]),
        "invented_outranks_probes": len(invented),
        "correction_first_k10": share([r[f"{name}_expected_rank"] == 1 for r in corrected]),
        "stale_outranks_correction": share([r[f"{name}_stale_rank"] < r[f"{name}_expected_rank"] for r in corrected]),
        "expected_missing_from_top10": share([r[f"{name}_expected_rank"] > DEEP_K for r in records]),
        "top4_is_prefix_of_top10": share([r[f"{name}_prefix_ok"] for r in records]),
    }


def run_split(name: str, scenarios: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """All scenarios of one split in one embedded store (one user each)."""
    memory = SessionVectorMemory.local(path=folder / name, user_id="long-use", collection_name="long_use")
    started, records = time.perf_counter(), []
    for scenario in scenarios:
        records += run_scenario(memory, scenario)
    return {
        "seconds": round(time.perf_counter() - started, 1),
        "scenarios": len(scenarios),
        "exchanges": sum(len(s["exchanges"]) for sc in scenarios for s in sc["sessions"]),
        "ranks": {name: rank_measures(records, name) for name in DEEP},
        "modes": {mode: summarise(records, mode) for mode in MODES},
        "probes": [{**r, **{mode: r[mode]["ids"] for mode in MODES}} for r in records],
    }


def table(results: dict[str, Any]) -> str:
    """The printed summary: one row per split and mode."""
    head = (
        "| split | mode | r@3 after 0 / 1 / 5 / 20 earlier asks (non-answers, uncorrected) | r@3 all probes | stale or "
        "invented in top 3 (unmarked) | noise@3 (repeat/stale/invented/other/small talk) | invented outranks | "
        "correction first | stale outranks correction |"
    )
    rows = [head, "|" + "---|" * 9]
    for split, result in results["splits"].items():
        for mode, m in result["modes"].items():
            curve = " / ".join(f"{m['recall@3_clean'][n]}" for n in CHECKPOINTS)
            kinds = "/".join(f"{m['noise@3_by_kind'][c]}" for c in CATEGORIES)
            ranks = result["ranks"]["before" if mode == "before" else "policy"]
            outranks = ranks["invented_outranks"] if mode != "graph" else "-"
            stale = ranks["stale_outranks_correction"] if mode != "graph" else "-"
            rows.append(
                f"| {split} | {mode} | {curve} | {m['recall@3_overall']} | {m['stale_or_invented@3']} "
                f"({m['unmarked_stale_or_invented@3']}) | {m['noise@3_mean']} ({kinds}) | {outranks} | "
                f"{m['correction_first']} | {stale} |"
            )
    return "\n".join(rows)


def main() -> None:
    """Run the splits, write the JSON, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a file written by long_use_data.py (default: generate it)")
    parser.add_argument("--splits", nargs="+", default=["tune", "report"], choices=["tune", "report", "holdout"])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "long_use.json")
    parser.add_argument("--folder", type=Path, help="where the stores go (default: a temporary folder)")
    parser.add_argument("--scenarios", type=int, help="only the first N scenarios of each split (a quick look)")
    args = parser.parse_args()
    data = json.loads(args.data.read_text()) if args.data else generate()
    results: dict[str, Any] = {
        "benchmark": "long_use",
        "data": str(args.data) if args.data else "generated (long_use_data.generate, fixed seeds)",
        "python": platform.python_version(),
        "splits": {},
    }
    with tempfile.TemporaryDirectory(prefix="long_use_") as tmp:
        folder = args.folder or Path(tmp)
        for split in args.splits:
            results["splits"][split] = run_split(split, data["splits"][split][: args.scenarios], folder)
            print(f"{split}: {results['splits'][split]['seconds']} s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
