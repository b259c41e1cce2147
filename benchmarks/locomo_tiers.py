"""The tiers on LoCoMo: does the importance prior cost recall, and how often does the long-context shortcut apply?

Every conversation is stored with a default ``SessionVectorMemory`` (importance and topics computed at ingest).
1. **Importance prior**: every question is retrieved with ``importance_weight`` 0 (off, the default) and 0.1, 0.2,
   0.3; the weight is chosen on the tuning split (conv-26, conv-30) by recall within 600 prompt tokens, and both the
   default and the chosen weight are reported on the report split (conv-41..43) with a paired bootstrap.
2. **Long-context shortcut**: for 2K, 8K and 32K context windows (the graph's budget: ``reserve_for_answer`` a
   quarter of the window at most 1,024, the ``memories`` allocation), the share of questions whose whole memory
   fits the allowance (LoCoMo asks after the last session), the share of session prefixes that fit (how far into a
   relationship the shortcut keeps applying), and the recall of the shortcut where it applies.

Run: bash scripts/benchmark.sh locomo_tiers [--data PATH]   (about 5 minutes on 2 cores with the dev file)
Writes results/locomo_tiers.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo
import locomo_data

from langchain_session_rag import TokenBudget, get_default_embeddings
from langchain_session_rag.evaluation.locomo import recall_table
from langchain_session_rag.graph.pinned import memory_allowance
from langchain_session_rag.memory.whole import MARKER_TOKENS
from langchain_session_rag.models import tiktoken_counter
from langchain_session_rag.stores.base import decode_message_ids

RESULTS = Path(__file__).parent / "results"
PRIORS = (0.0, 0.1, 0.2, 0.3)
WINDOWS = (2048, 8192, 32768)
METRICS = ("t600", "t512", "k5", "k10")


def budget_for(window: int) -> TokenBudget:
    return TokenBudget(context_window=window, reserve_for_answer=min(1024, window // 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(RESULTS / "locomo_tiers.json"))
    locomo_data.add_data_argument(parser)
    args = parser.parse_args()
    conversations = locomo_data.load(locomo_data.data_path(args.data))
    embeddings = get_default_embeddings()
    count = tiktoken_counter()
    root = Path(tempfile.mkdtemp(prefix="locomo-tiers-"))
    rows: dict[float, list[dict[str, Any]]] = {w: [] for w in PRIORS}
    memories: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for conv in conversations:
        memory = locomo.build_memory("tiers", root, conv.sample_id, embeddings, {"unit": "default"})
        prefix_tokens = []
        for session in conv.sessions:
            memory.add_messages(session.messages, session_id=session.session_id)
            records = memory.backend.get(conv.sample_id, {})
            prefix_tokens.append(sum(int(r.metadata.get("token_count") or 0) + MARKER_TOKENS for r in records))
        records = memory.backend.get(conv.sample_id, {})
        importance = [float(r.metadata.get("importance", 0)) for r in records]
        covered = {m for r in records for m in decode_message_ids(r.metadata.get("message_ids"))}
        memories[conv.sample_id] = {
            "chunks": len(records),
            "tokens": prefix_tokens[-1],
            "prefix_tokens": prefix_tokens,
            "mean_importance": round(statistics.fmean(importance), 3),
            "share_above_0_4": round(sum(i > 0.4 for i in importance) / len(importance), 3),
            "questions": sum(1 for q in conv.questions if q.evidence),
            "evidence_recall_all": round(
                statistics.fmean(
                    len(set(q.evidence) & covered) / len(q.evidence) for q in conv.questions if q.evidence
                ),
                3,
            ),
        }
        for q in conv.questions:
            if not q.evidence:
                continue
            for weight in PRIORS:
                docs = memory.invoke(q.question, k=50, importance_weight=weight)
                rows[weight].append({"conversation": conv.sample_id, **locomo.score_row(q, docs, count)})
    splits = {
        "tune": locomo_data.TUNE_SPLIT,
        "report": locomo_data.REPORT_SPLIT,
        "all": [c.sample_id for c in conversations],
    }
    tables = {
        str(w): {
            split: {m: recall_table([r for r in rows[w] if r["conversation"] in convs], m) for m in METRICS}
            for split, convs in splits.items()
            if any(r["conversation"] in convs for r in rows[w])
        }
        for w in PRIORS
    }
    tune = [w for w in PRIORS if "tune" in tables[str(w)]]
    chosen = max(tune, key=lambda w: (tables[str(w)]["tune"]["t600"]["overall"], -w)) if tune else 0.0
    report = [r for r in rows[0.0] if r["conversation"] in locomo_data.REPORT_SPLIT]
    report_prior = [r for r in rows[chosen] if r["conversation"] in locomo_data.REPORT_SPLIT]
    comparison = (
        locomo.paired_bootstrap([r["t600"] for r in report_prior], [r["t600"] for r in report]) if report else None
    )
    shortcut = {}
    for window in WINDOWS:
        allowance = memory_allowance(budget_for(window))
        fits = [c for c, m in memories.items() if m["tokens"] <= allowance]
        prefixes = [t for m in memories.values() for t in m["prefix_tokens"]]
        questions = sum(m["questions"] for m in memories.values())
        shortcut[str(window)] = {
            "allowance_tokens": allowance,
            "questions_where_it_applies": round(sum(memories[c]["questions"] for c in fits) / questions, 3),
            "session_prefixes_where_it_applies": round(sum(t <= allowance for t in prefixes) / len(prefixes), 3),
            "recall_where_it_applies": (
                round(statistics.fmean(memories[c]["evidence_recall_all"] for c in fits), 3) if fits else None
            ),
        }
    payload = {
        "benchmark": "locomo_tiers",
        "date": time.strftime("%Y-%m-%d"),
        "conversations": [c.sample_id for c in conversations],
        "seconds": round(time.perf_counter() - started, 1),
        "importance_prior": {"tables": tables, "chosen_on_tune": chosen, "report_t600_chosen_minus_off": comparison},
        "memories": {c: {k: v for k, v in m.items() if k != "prefix_tokens"} for c, m in memories.items()},
        "long_context_shortcut": shortcut,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps({k: v for k, v in payload.items() if k != "memories"}, indent=1))


if __name__ == "__main__":
    main()
