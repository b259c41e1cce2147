"""LoCoMo evidence recall of SessionVectorMemory, through the public API.

Each conversation of ../shared/data/locomo/locomo_dev.json is ingested under its own user_id, sessions as
sessions, turns as messages (ids = dia_ids, timestamps = session dates); each question retrieves with
``invoke``. Recall = share of a question's evidence turns covered by the retrieved chunks, reported at
k retrieved units and at retrieved-prompt-token budgets (cl100k, marker + text of each chunk, whole chunks
in rank order). Writes benchmarks/results/locomo.json.

Run: .venv/bin/python benchmarks/locomo.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
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

from langchain_session_rag import ExchangeChunker, SessionVectorMemory, TopicSegmenter, get_default_embeddings
from langchain_session_rag.chunking.exchanges import Chunk
from langchain_session_rag.chunking.messages import Turn
from langchain_session_rag.models.tokens import tiktoken_counter

RESULTS = Path(__file__).parent / "results"
KS = (1, 5, 10, 25)
BUDGETS = (256, 512, 600, 1024)
CATEGORIES = {4: "single", 1: "multi", 2: "temporal", 3: "open", 5: "adv"}
PAPER_TABLE_3 = {  # Maharana et al. 2024, DRAGON retriever, dialog turns
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
            Chunk(text=f"{t.label}: {t.text}", message_ids=[t.id], timestamp=t.timestamp, token_count=0)  # type: ignore[arg-type]
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
    return SessionVectorMemory.local(path=root / name, user_id=user_id, **kwargs)


LEXICAL_WEIGHTS: tuple[float, ...] = (0.0, 0.3)
FETCH_K = 50


def evaluate(
    conversations: list[locomo_data.Conversation],
    strategy: dict[str, Any],
    embeddings: Embeddings,
    root: Path,
    count: Callable[[str], int],
) -> list[dict[str, Any]]:
    """Ingest every conversation with one strategy; score dense-only and hybrid retrieval."""
    name = strategy["name"]
    per_q: dict[float, list[dict[str, Any]]] = {w: [] for w in LEXICAL_WEIGHTS}
    units = 0
    unit_tokens: list[int] = []
    started = time.perf_counter()
    for conv in conversations:
        memory = build_memory(name.replace(".", ""), root, conv.sample_id, embeddings, strategy)
        for session in conv.sessions:
            memory.add_messages(session.messages, session_id=session.session_id)
        records = memory.backend.get(conv.sample_id, {})
        units += len(records)
        unit_tokens.extend(count(r.text) for r in records)
        for q in conv.questions:
            if not q.evidence:
                continue
            for weight in LEXICAL_WEIGHTS:
                docs = memory.invoke(q.question, k=max(KS) * 2, lexical_weight=weight)
                per_q[weight].append(score_question(q, docs, count))
    elapsed = time.perf_counter() - started
    return [
        {
            "strategy": {**strategy, "lexical_weight": weight},
            "units": units,
            "mean_unit_tokens": round(statistics.fmean(unit_tokens), 1),
            "questions": len(per_q[weight]),
            "seconds": round(elapsed, 1),
            "recall_at_k": {str(k): table(per_q[weight], f"k{k}") for k in KS},
            "recall_at_tokens": {str(b): table(per_q[weight], f"t{b}") for b in BUDGETS},
            "recall_at_text_tokens": {str(b): table(per_q[weight], f"x{b}") for b in BUDGETS},
            "tokens_at_k25": round(statistics.fmean(q["tokens_k25"] for q in per_q[weight]), 1),
        }
        for weight in LEXICAL_WEIGHTS
    ]


def score_question(q: locomo_data.Question, docs: list[Document], count: Callable[[str], int]) -> dict[str, Any]:
    evidence = set(q.evidence)
    out: dict[str, Any] = {"category": CATEGORIES[q.category]}
    for k in KS:
        got = {m for d in docs[:k] for m in d.metadata["message_ids"]}
        out[f"k{k}"] = len(evidence & got) / len(evidence)
    costs = [count(f"{d.metadata['marker']} {d.page_content}") for d in docs]
    text_costs = [count(d.page_content) for d in docs]
    out["tokens_k25"] = sum(costs[:25])
    for budget in BUDGETS:
        out[f"t{budget}"] = _recall_within(docs, costs, budget, evidence)
        out[f"x{budget}"] = _recall_within(docs, text_costs, budget, evidence)
    return out


def _recall_within(docs: list[Document], costs: list[int], budget: int, evidence: set[str]) -> float:
    """Recall of the longest rank-order prefix of whole chunks that fits the budget."""
    got: set[str] = set()
    spent = 0
    for d, cost in zip(docs, costs, strict=True):
        if spent + cost > budget:
            break
        spent += cost
        got.update(d.metadata["message_ids"])
    return len(evidence & got) / len(evidence)


def table(per_q: list[dict[str, Any]], key: str) -> dict[str, float]:
    by_cat: dict[str, list[float]] = defaultdict(list)
    for q in per_q:
        by_cat[q["category"]].append(q[key])
    row = {cat: round(100 * statistics.fmean(by_cat[cat]), 1) for cat in CATEGORIES.values() if by_cat[cat]}
    row["overall"] = round(100 * statistics.fmean(q[key] for q in per_q), 1)
    return row


def strategies(quick: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"name": "turn", "unit": "turn"},
        {"name": "window-128", "unit": "window", "window": 128},
        {"name": "exchange", "unit": "exchange"},
    ]
    thresholds = (0.6, 0.7) if quick else (0.6, 0.65, 0.7, 0.75, 0.8)
    for comparison in ("centroid", "previous"):
        out.extend(
            {"name": f"topic-{comparison}-{t}", "unit": "topic", "threshold": t, "comparison": comparison}
            for t in thresholds
        )
    capped = (0.7,) if quick else (0.6, 0.7, 0.8)
    out.extend(
        {"name": f"topic-centroid-{t}-max128", "unit": "topic", "threshold": t, "comparison": "centroid",
         "max_tokens": 128}
        for t in capped
    )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer strategies")
    parser.add_argument("--only", nargs="*", help="strategy names to run")
    parser.add_argument("--out", default=str(RESULTS / "locomo.json"))
    parser.add_argument("--lexical", nargs="*", type=float, help="lexical weights to score (default 0 and 0.3)")
    parser.add_argument("--fetch-k", type=int, default=50, help="candidates per retriever before fusion")
    args = parser.parse_args()
    global LEXICAL_WEIGHTS, FETCH_K  # noqa: PLW0603
    LEXICAL_WEIGHTS = tuple(args.lexical) if args.lexical else LEXICAL_WEIGHTS
    FETCH_K = args.fetch_k
    conversations = locomo_data.load()
    embeddings = CachedEmbeddings(get_default_embeddings())
    count = tiktoken_counter()
    root = Path(tempfile.mkdtemp(prefix="locomo-"))
    results = []
    started = time.perf_counter()
    for strategy in strategies(args.quick):
        if args.only and strategy["name"] not in args.only:
            continue
        for result in evaluate(conversations, strategy, embeddings, root, count):
            results.append(result)
            label = f"{strategy['name']} w={result['strategy']['lexical_weight']}"
            r_k, r_t = result["recall_at_k"], result["recall_at_tokens"]
            print(f"{label:<34} units={result['units']:>5} r@5={r_k['5']['overall']:5.1f} "
                  f"r@25={r_k['25']['overall']:5.1f} r@512tok={r_t['512']['overall']:5.1f} "
                  f"r@600tok={r_t['600']['overall']:5.1f} r@1024tok={r_t['1024']['overall']:5.1f} "
                  f"r@600text={result['recall_at_text_tokens']['600']['overall']:5.1f} "
                  f"({result['seconds']:.0f} s)", flush=True)  # fmt: skip
    payload = {
        "benchmark": "locomo",
        "date": time.strftime("%Y-%m-%d"),
        "data": "locomo_dev.json (conv-26, conv-30, conv-41, conv-42, conv-43)",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "versions": {p: version(p) for p in ("langchain-session-rag", "chromadb", "sentence-transformers")},
        "embedding_model": embeddings.model_id,
        "seconds": round(time.perf_counter() - started, 1),
        "paper_table_3": PAPER_TABLE_3,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
