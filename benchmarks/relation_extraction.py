"""Precision and recall of relation and entity extraction: the patterns vs an LLM extractor, side by side.

Data: ``benchmarks/data/relations_labelled.json`` (200 chat exchanges labelled by hand, blind to the extractor;
see ``relations_labelled.md``) and ``relations_holdout.json`` (100 more, written later by another author, blind to
the extractor and to the first set, scored once at the end): the patterns were tuned on the ``tune`` half only.
Each exchange is extracted as the memory stores it (``"User: ...\\nAssistant: ..."``).

Matching: a predicted relation matches a gold one with the same predicate when their subjects and objects match
(keys equal after :func:`~langchain_session_rag.relations.vocabulary.key_of`, or one contained in the other as
whole words: "bad DNS change" ~ "a bad DNS change in the resolver"); each gold relation matches once. ``closes``
is scored apart: of the matched relations whose gold names a replaced object, the share whose prediction names it.
Entities match by key the same way (types not required; typed accuracy reported).

Run:
    python benchmarks/relation_extraction.py [--llm] [--llm-limit N] [--out benchmarks/results/relation_extraction.json]

``--llm`` also runs :class:`LLMExtractor` on the bundled local model (SmolLM2-135M through llama.cpp, grammar-
constrained structured output), or on Ollama's ``$OLLAMA_MODEL`` when one answers at ``$OLLAMA_HOST``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_session_rag.relations import Extraction, LLMExtractor, PatternExtractor
from langchain_session_rag.relations.vocabulary import key_of

DATA = Path(__file__).parent / "data" / "relations_labelled.json"
HOLDOUT = Path(__file__).parent / "data" / "relations_holdout.json"
SPLITS = ("tune", "report", "holdout")
RESULTS = Path(__file__).parent / "results"


def same(a: str, b: str) -> bool:
    """Whether two names match (keys equal, or one inside the other as whole words)."""
    ka, kb = key_of(a), key_of(b)
    if not ka or not kb:
        return False
    if ka == kb:
        return True
    short, long = sorted((ka, kb), key=len)
    return bool(re.search(rf"(?<!\w){re.escape(short)}(?!\w)", long))


def _subject(value: str) -> str:
    return "user" if value.lower() in {"user", "i", "we"} else value


def score_relations(gold: list[dict[str, Any]], found: Extraction) -> dict[str, int]:
    """Counts of one exchange: true positives, predicted, gold, closes expected / closes right."""
    predicted = [r for r in found.relations if r.object]
    used: set[int] = set()
    tp = closes_expected = closes_right = 0
    for g in gold:
        for i, p in enumerate(predicted):
            if i in used or p.predicate != g["predicate"]:
                continue
            if same(_subject(p.subject), _subject(g["subject"])) and same(p.object, g["object"]):
                used.add(i)
                tp += 1
                if g.get("closes"):
                    closes_expected += 1
                    closes_right += bool(p.closes and same(p.closes, g["closes"]))
                break
    return {"tp": tp, "predicted": len(predicted), "gold": len(gold), "closes_expected": closes_expected,
            "closes_right": closes_right}  # fmt: skip


def score_entities(gold: list[dict[str, Any]], found: Extraction) -> dict[str, int]:
    """Counts of one exchange's entities (and how many matched ones have the gold type)."""
    used: set[int] = set()
    tp = typed = 0
    for g in gold:
        for i, m in enumerate(found.entities):
            if i not in used and same(m.name, g["name"]):
                used.add(i)
                tp += 1
                typed += m.type == g["type"]
                break
    return {"tp": tp, "predicted": len(found.entities), "gold": len(gold), "typed": typed}


def prf(counts: dict[str, int]) -> dict[str, float]:
    """Precision, recall, F1 (in %) of summed counts."""
    p = counts["tp"] / counts["predicted"] if counts["predicted"] else 0.0
    r = counts["tp"] / counts["gold"] if counts["gold"] else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(100 * p, 1), "recall": round(100 * r, 1), "f1": round(100 * f, 1)}


def evaluate(extract: Callable[[str], Extraction], exchanges: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores of one extractor over some exchanges, with the time per exchange."""
    rel: dict[str, int] = {}
    ent: dict[str, int] = {}
    times = []
    misses = []
    for ex in exchanges:
        text = f"User: {ex['user']}\nAssistant: {ex['assistant']}"
        started = time.perf_counter()
        found = extract(text)
        times.append(time.perf_counter() - started)
        for key, value in score_relations(ex["relations"], found).items():
            rel[key] = rel.get(key, 0) + value
        for key, value in score_entities(ex["entities"], found).items():
            ent[key] = ent.get(key, 0) + value
        if score_relations(ex["relations"], found)["tp"] < len(ex["relations"]):
            misses.append(ex["id"])
    return {
        "exchanges": len(exchanges),
        "relations": {**prf(rel), **rel},
        "closes_accuracy": round(100 * rel["closes_right"] / rel["closes_expected"], 1) if rel["closes_expected"] else None,
        "entities": {**prf(ent), **ent, "type_accuracy": round(100 * ent["typed"] / ent["tp"], 1) if ent["tp"] else None},
        "ms_per_exchange_median": round(1000 * statistics.median(times), 3),
        "ms_per_exchange_p95": round(1000 * sorted(times)[int(0.95 * (len(times) - 1))], 3),
        "exchanges_with_misses": misses,
    }  # fmt: skip


class Nothing:
    """Finds nothing: a chunk the model failed on scores as found by nobody, not by the patterns."""

    def extract(self, text: str, *, speaker: str = "user") -> Extraction:  # noqa: ARG002 - the protocol's
        """Nothing."""
        return Extraction()


def llm_model() -> Any:
    """Ollama's chat model (``$OLLAMA_MODEL``, default llama3.2) when a server answers, else the bundled local model."""
    from langchain_session_rag.models import pick_chat_model  # noqa: PLC0415 - only with --llm

    choice = pick_chat_model(os.environ.get("OLLAMA_MODEL", "llama3.2"))
    print(f"LLM extractor on {choice.description}", file=sys.stderr)
    return choice


def main() -> None:
    """Score the patterns (and with ``--llm`` the LLM extractor) on both halves."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--holdout", default=str(HOLDOUT), help="the later held-out set (split 'holdout')")
    parser.add_argument("--llm", action="store_true")
    parser.add_argument("--llm-limit", type=int, default=None, help="exchanges per split for the LLM (all)")
    parser.add_argument("--out", default=str(RESULTS / "relation_extraction.json"))
    args = parser.parse_args()
    exchanges = json.loads(Path(args.data).read_text())["exchanges"]
    if Path(args.holdout).exists():
        exchanges += json.loads(Path(args.holdout).read_text())["exchanges"]
    splits = {s: [e for e in exchanges if e["split"] == s] for s in SPLITS}
    patterns = PatternExtractor()
    payload: dict[str, Any] = {"patterns": {s: evaluate(patterns.extract, ex) for s, ex in splits.items()}}
    if args.llm:
        choice = llm_model()
        extractor = LLMExtractor(choice.model, fallback=Nothing())  # the model's own findings only
        payload["llm"] = {"model": choice.description, "limit_per_split": args.llm_limit,
                          **{s: evaluate(extractor.extract, ex[: args.llm_limit]) for s, ex in splits.items()}}  # fmt: skip
        payload["llm"]["fallbacks"] = extractor.fallbacks
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    for name, result in payload.items():
        for split in SPLITS:
            r = result[split]
            rel = r["relations"]
            print(f"{name:8} {split:7} relations P/R/F1 {rel['precision']}/{rel['recall']}/{rel['f1']} "
                  f"({rel['tp']} right of {rel['predicted']} found, {rel['gold']} labelled)  closes "
                  f"{rel['closes_right']}/{rel['closes_expected']}  entities P/R "
                  f"{r['entities']['precision']}/{r['entities']['recall']}  {r['ms_per_exchange_median']} ms",
                  file=sys.stdout)  # fmt: skip


if __name__ == "__main__":
    main()
