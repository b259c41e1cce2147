"""Retrieval through entities on LoCoMo: recall with and without ``entity_weight``, chosen on the tuning split.

Each conversation is stored once per weight through the public API (``evaluate_locomo``: one ``add_messages`` per
session, the package's defaults otherwise); every question retrieves ``memory.invoke(question)``. Entities named
in the question (and their one-hop neighbours in the relation graph) bring the chunks naming them into the
candidates, and ``entity_weight`` × the share of the question's entities a chunk names is added to its score.

The weight is chosen on the TUNING split (conv-26, conv-30) by multi-hop recall within 512 prompt tokens (ties:
overall at 512), among ``--weights``; the REPORTING split (conv-41, conv-42, conv-43) is only looked at, for the
chosen weight and for 0 (off).

Data: ``--data PATH``, else ``$LOCOMO_PATH``. Run:
    python benchmarks/relations_retrieval.py [--weights 0 0.05 0.1 0.2 0.3] [--out benchmarks/results/relations_retrieval.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_embeddings import CachedEmbeddings
from locomo_data import REPORT_SPLIT, TUNE_SPLIT

from langchain_session_rag import get_default_embeddings
from langchain_session_rag.evaluation import evaluate_locomo, load_locomo

RESULTS = Path(__file__).parent / "results"
BUDGETS = (512, 1024)
CATEGORIES = ("multi_hop", "overall")


def scores(report: Any) -> dict[str, float]:
    """Recall % within each budget, multi-hop and overall."""
    out = {}
    for budget in BUDGETS:
        row = report.recall_at_tokens[budget]
        multi = next((v for k, v in row.items() if k.replace("-", "_").startswith("multi")), float("nan"))
        out[f"multi_hop@{budget}"] = multi
        out[f"overall@{budget}"] = row["overall"]
    return out


def run(conversations: list[Any], weight: float, embeddings: CachedEmbeddings) -> dict[str, Any]:
    """One weight over some conversations."""
    started = time.perf_counter()
    report = evaluate_locomo(
        conversations, embeddings=embeddings, memory_options={"entity_weight": weight}, budgets=BUDGETS
    )
    return {"weight": weight, **scores(report), "questions": report.questions,
            "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip


def main() -> None:
    """Choose on the tuning split, report on the reporting split."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("LOCOMO_PATH"))
    parser.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.05, 0.1, 0.2, 0.3])
    parser.add_argument("--out", default=str(RESULTS / "relations_retrieval.json"))
    args = parser.parse_args()
    if not args.data:
        parser.error("give --data PATH or set LOCOMO_PATH (LoCoMo's locomo10.json or a dev file)")
    every = load_locomo(args.data)
    tune = [c for c in every if c.sample_id in TUNE_SPLIT]
    report = [c for c in every if c.sample_id in REPORT_SPLIT]
    embeddings = CachedEmbeddings(get_default_embeddings())
    tuning = []
    for weight in args.weights:
        tuning.append(run(tune, weight, embeddings))
        print("tune", json.dumps(tuning[-1]), flush=True)
    best = max(tuning, key=lambda r: (r["multi_hop@512"], r["overall@512"], -r["weight"]))
    reporting = [run(report, w, embeddings) for w in sorted({0.0, best["weight"]})]
    for row in reporting:
        print("report", json.dumps(row), flush=True)
    payload = {"tune": tuning, "chosen_weight": best["weight"], "report": reporting,
               "tune_split": list(TUNE_SPLIT), "report_split": list(REPORT_SPLIT)}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    print(f"chosen on the tuning split: entity_weight={best['weight']}; wrote {args.out}")


if __name__ == "__main__":
    main()
