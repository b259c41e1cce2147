"""Redaction: how many secrets pasted into chat are caught, and how many look-alikes are left alone?

Usage::

    python benchmarks/redaction.py [--data FILE] [--splits tune holdout] [--out benchmarks/results/redaction.json]

The messages come from ``secrets_data.py`` (generated in memory from its fixed seeds, or read from ``--data``, a
file it wrote): chat messages holding fake secrets of every kind, and look-alikes that hold none (git SHAs, UUIDs,
base64 images, checksums, code, URLs, phone and order numbers, Luhn-invalid numbers, ISBNs...). Each message is
given to ``redact_secrets``. Measures, per split:

- message level: ``precision``, ``recall`` and ``f1`` of "this message holds a secret" (a message is flagged when
  anything in it is redacted);
- secret level, per kind: ``recall`` (every character of the labelled secret replaced) and ``kind_correct`` (the
  placeholder names the labelled kind); ``partial`` counts secrets only partly replaced (a leak of the rest);
- ``false_positives`` per look-alike category: the share of its messages where something was redacted, and
  ``extra_findings``: redactions in secret-holding messages that cover no labelled secret;
- cost: mean and p95 microseconds of one ``redact_secrets`` call on ordinary chat messages, on all the messages
  without a secret (look-alikes and ordinary) and on messages
  with secrets (after a warm-up: the first call that needs detect-secrets imports it, ``cold_import_ms``).

``--errors`` prints the misses and false positives of the split (used on ``tune`` only).
Takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from secrets_data import generate

from langchain_session_rag.privacy import FoundSecret, find_secrets, redact_secrets

HERE = Path(__file__).parent
TIMING_ROUNDS = 20


def covered(secrets: tuple[FoundSecret, ...], start: int, end: int) -> bool:
    """Whether every character of ``[start, end)`` lies inside a redacted span."""
    position = start
    for found in secrets:
        if found.start <= position < found.end:
            position = found.end
    return position >= end


def labelled_spans(item: dict[str, Any]) -> list[tuple[int, int, str]]:
    spans, text = [], item["text"]
    for label in item["secrets"]:
        start = text.index(label["value"])
        spans.append((start, start + len(label["value"]), label["kind"]))
    return spans


def share(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def timings(texts: list[str]) -> dict[str, float]:
    samples = []
    for _ in range(TIMING_ROUNDS):
        for text in texts:
            began = time.perf_counter_ns()
            redact_secrets(text)
            samples.append((time.perf_counter_ns() - began) / 1000)
    samples.sort()
    return {
        "messages": len(texts),
        "mean_us": round(statistics.fmean(samples), 1),
        "p95_us": round(samples[int(0.95 * (len(samples) - 1))], 1),
    }


def run_split(items: list[dict[str, Any]], errors: bool) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    per_kind: dict[str, dict[str, int]] = defaultdict(
        lambda: {"secrets": 0, "caught": 0, "kind_correct": 0, "partial": 0}
    )
    per_category: dict[str, dict[str, int]] = defaultdict(lambda: {"messages": 0, "flagged": 0})
    extra = 0
    for item in items:
        result = redact_secrets(item["text"])
        positive, flagged = bool(item["secrets"]), result.redacted
        tp += positive and flagged
        fn += positive and not flagged
        fp += flagged and not positive
        tn += not positive and not flagged
        if not positive:
            per_category[item["category"]]["messages"] += 1
            per_category[item["category"]]["flagged"] += flagged
            if flagged and errors:
                print(
                    f"FP [{item['category']}] {item['text'][:160]!r} -> {[(s.kind, s.value[:40]) for s in result.secrets]}"
                )
            continue
        spans = labelled_spans(item)
        for start, end, kind in spans:
            stats = per_kind[kind]
            stats["secrets"] += 1
            hit = covered(result.secrets, start, end)
            stats["caught"] += hit
            stats["kind_correct"] += hit and any(s.kind == kind and s.start <= start < s.end for s in result.secrets)
            touched = any(s.start < end and start < s.end for s in result.secrets)
            stats["partial"] += touched and not hit
            if errors and not hit:
                print(f"MISS [{kind}] {item['text'][:160]!r} -> {[(s.kind, s.value[:40]) for s in result.secrets]}")
        for found in result.secrets:
            if not any(found.start < end and start < found.end for start, end, _ in spans):
                extra += 1
                if errors:
                    print(f"EXTRA [{found.kind}] {found.value[:60]!r} in {item['text'][:120]!r}")
    precision, recall = share(tp, tp + fp), share(tp, tp + fn)
    f1 = round(2 * precision * recall / (precision + recall), 3) if precision and recall else None
    secrets_total = sum(s["secrets"] for s in per_kind.values())
    return {
        "messages": len(items),
        "with_secrets": tp + fn,
        "message_level": {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "secret_recall": share(sum(s["caught"] for s in per_kind.values()), secrets_total),
        "per_kind": {
            kind: {
                "secrets": s["secrets"],
                "recall": share(s["caught"], s["secrets"]),
                "kind_correct": share(s["kind_correct"], s["secrets"]),
                "partial": s["partial"],
            }
            for kind, s in sorted(per_kind.items())
        },
        "false_positives": {
            category: {"messages": c["messages"], "flagged": c["flagged"], "rate": share(c["flagged"], c["messages"])}
            for category, c in sorted(per_category.items())
        },
        "extra_findings": extra,
        "cost": {
            "ordinary": timings([item["text"] for item in items if item["category"] == "ordinary"]),
            "no_secret": timings([item["text"] for item in items if not item["secrets"]]),
            "with_secret": timings([item["text"] for item in items if item["secrets"]]),
        },
    }


def table(results: dict[str, Any]) -> str:
    """The printed summary: message level, per kind, look-alikes, cost."""
    splits = list(results["splits"])
    rows = [
        (
            "| split | messages (with secrets) | precision | recall | F1 | secret recall | extra findings | "
            "µs/message mean (p95): ordinary chat | look-alikes and ordinary | with secret |"
        ),
        "|" + "---|" * 10,
    ]
    for split, r in results["splits"].items():
        m, c = r["message_level"], r["cost"]
        rows.append(
            f"| {split} | {r['messages']} ({r['with_secrets']}) | {m['precision']} | {m['recall']} | {m['f1']} | "
            f"{r['secret_recall']} | {r['extra_findings']} | {c['ordinary']['mean_us']} ({c['ordinary']['p95_us']}) | "
            f"{c['no_secret']['mean_us']} ({c['no_secret']['p95_us']}) | "
            f"{c['with_secret']['mean_us']} ({c['with_secret']['p95_us']}) |"
        )
    per_kind = {split: results["splits"][split]["per_kind"] for split in splits}
    kinds = sorted({k for found in per_kind.values() for k in found})

    def kind_cell(split: str, kind: str) -> str:
        k = per_kind[split].get(kind)
        return f"{k['recall']} ({k['kind_correct']}, {k['partial']}) n={k['secrets']}" if k else "-"

    rows += by_split(f"| kind | {' | '.join(f'{s} recall (kind correct, partial)' for s in splits)} |", splits, kinds,
                     kind_cell)  # fmt: skip
    flagged = {split: results["splits"][split]["false_positives"] for split in splits}
    categories = sorted({c for found in flagged.values() for c in found})

    def category_cell(split: str, category: str) -> str:
        c = flagged[split].get(category)
        return f"{c['flagged']}/{c['messages']}" if c else "-"

    rows += by_split(
        f"| look-alike | {' | '.join(f'{s} flagged' for s in splits)} |", splits, categories, category_cell
    )
    return "\n".join(rows)


def by_split(header: str, splits: list[str], keys: list[str], cell: Callable[[str, str], str]) -> list[str]:
    """A Markdown table (after a blank line): one row per key, one column per split."""
    rows = ["", header, "|" + "---|" * (len(splits) + 1)]
    return rows + [f"| {key} | " + " | ".join(cell(split, key) for split in splits) + " |" for key in keys]


REPEATED_UNITS = (
    *("sk-", "-p", "eyJ", "password: ", "github_pat_", "xoxb-1-", "aA1", "Ab1+", "a.", "4111 ", "://", "//"),
    *("AKIA-", "ghp_A1b2 ", "4111/", "1111,", "pin is 1234 ", "de89 "),  # split keys, separators, PINs, IBANs
)
"""Pieces a hostile message repeats to make a regular expression backtrack (each once caused quadratic time)."""


def worst_case(size: int = 1_000_000) -> dict[str, float]:
    """Seconds ``redact_secrets`` takes on a ``size``-character message made of one repeated piece, per piece."""
    out = {}
    for unit in REPEATED_UNITS:
        text = unit * (size // len(unit)) + "T3BlbkFJ/:_authToken=x"
        began = time.perf_counter()
        redact_secrets(text)
        out[unit] = round(time.perf_counter() - began, 3)
    return out


def flagged_in_conversations(path: Path) -> dict[str, Any]:
    """What is found in LoCoMo's turns and questions: real conversations that hold no secret (every find is false)."""
    from locomo_data import load  # noqa: PLC0415 - only with --locomo

    conversations = load(path)
    texts = [m["content"] for c in conversations for s in c.sessions for m in s.messages]
    texts += [q.question for c in conversations for q in c.questions]
    found = [(t, sorted({f.kind for f in find_secrets(t)})) for t in texts]
    hits = [(t, kinds) for t, kinds in found if kinds]
    return {"messages": len(texts), "flagged": len(hits), "examples": hits[:20]}


def main() -> None:
    """Run the splits, write the JSON, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a file written by secrets_data.py (default: generate it)")
    parser.add_argument("--splits", nargs="+", default=["tune", "holdout"], choices=["tune", "holdout"])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "redaction.json")
    parser.add_argument("--errors", action="store_true", help="print every miss and false positive")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=os.environ.get("LOCOMO_PATH"),
        help="also count what is flagged in real conversations without secrets: a LoCoMo file [env LOCOMO_PATH]",
    )
    args = parser.parse_args()
    data = json.loads(args.data.read_text()) if args.data else generate(tuple(args.splits))
    began = time.perf_counter()
    redact_secrets("warm-up: key AKIAIOSFODNN7EXAMPLE")  # imports detect-secrets
    cold_ms = round((time.perf_counter() - began) * 1000, 1)
    results: dict[str, Any] = {
        "benchmark": "redaction",
        "data": str(args.data) if args.data else "generated (secrets_data.generate, fixed seeds)",
        "python": platform.python_version(),
        "cold_import_ms": cold_ms,
        "splits": {},
    }
    for split in args.splits:
        began = time.perf_counter()
        results["splits"][split] = run_split(data["splits"][split], args.errors)
        print(f"{split}: {time.perf_counter() - began:.1f} s", file=sys.stderr)
    if args.locomo:
        results["real_conversations"] = flagged_in_conversations(args.locomo)
    results["worst_case_seconds_1mb"] = worst_case()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    slowest = max(results["worst_case_seconds_1mb"].items(), key=lambda item: item[1])
    print(f"\nworst case, a 1 MB message of one repeated piece: {slowest[1]} s ({slowest[0]!r})")
    if args.locomo:
        real = results["real_conversations"]
        print(f"\nreal conversations ({args.locomo}): {real['flagged']} of {real['messages']} messages flagged")
        for text, kinds in real["examples"]:
            print(f"  {kinds}: {text[:120]!r}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
