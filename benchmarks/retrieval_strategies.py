"""Every retrieval technique tried for LoCoMo's multi-hop, temporal and open-domain questions, on a tuning split.

1. **Units** are stored through the public API (``SessionVectorMemory.local``, one ``add_messages`` per session,
   message ids = LoCoMo ``dia_id``): segments as in 0.4 (``TopicSegmenter(threshold=0.7, comparison="centroid",
   max_tokens=128)`` over exchanges merged below 24 tokens), segments as in 0.5 (the depth method, 128 tokens),
   one chunk per exchange, one chunk per turn. Their texts and vectors are read back from the store.
2. **Rankings** are computed over those units with numpy, the way ``SessionVectorMemory`` ranks (dense top 50 and
   BM25 top 50, ``(1 - w) x cosine + w x bm25 / best``), and then varied: lexical weight, score normalisation,
   reciprocal-rank fusion, pseudo-relevance feedback, MMR and per-session caps (diversity), neighbour expansion
   (the next chunk after each hit), a speaker boost,
   token-density ordering, BM25 parameters, best-sub-unit scores (exchange or turn vectors inside a segment),
   extractive compression (a segment's best turns only), and query rewrites without a model call (content words
   only; the speakers' names left out of the dense query; also left out of the stored vectors).
3. **Scores**: recall of the evidence turns within 256 / 512 / 1,024 chunk-text tokens (cl100k; whole chunks in rank
   order; the ``[S: date]`` marker not counted), overall and per category, on the TUNING split (conv-26, conv-30:
   choose here) and the REPORTING split (conv-41, conv-42, conv-43: look only). The ``api`` rows run
   ``evaluate_locomo`` on the package's 0.4 and 0.5 defaults, with and without markers, so the numbers the README
   shows come from the public API, not from this simulation. The ``cost`` rows ingest the first report conversation
   with each default and the real model (no cache) and time every question's ``invoke``.

Data: ``--data PATH``, else ``$LOCOMO_PATH``. Embeddings are cached in results/ between runs (``--no-cache``).
Run: bash scripts/benchmark.sh retrieval_strategies   (about 10 minutes on 2 cores the first time)
Writes results/retrieval_strategies.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).parent))

from bench_embeddings import CachedEmbeddings
from langchain_core.embeddings import Embeddings
from locomo import TurnChunker

from langchain_session_rag import SessionVectorMemory, TopicSegmenter, get_default_embeddings
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.evaluation import LocomoConversation, evaluate_locomo, load_locomo
from langchain_session_rag.memory.lexical import _STOP, _WORD, BM25Index
from langchain_session_rag.memory.speakers import dense_query
from langchain_session_rag.models.tokens import tiktoken_counter
from langchain_session_rag.stores.base import decode_message_ids

RESULTS = Path(__file__).parent / "results"
TUNE = ("conv-26", "conv-30")
BUDGETS = (256, 512, 1024)
FETCH = 50
LABEL = re.compile(r"^[^:\n]{1,40}: ", re.MULTILINE)
Vector = npt.NDArray[np.float32]


def unit_options(name: str, embeddings: CachedEmbeddings) -> dict[str, Any]:
    """``SessionVectorMemory`` options storing one kind of unit."""
    if name == "segments-0.4":
        return {
            "chunker": ExchangeChunker(min_tokens=24),
            "segmenter": TopicSegmenter(embeddings, threshold=0.7, comparison="centroid", max_tokens=128),
        }
    if name == "segments-0.5":
        return {}
    if name == "exchange":
        return {"chunking": "exchange"}
    if name == "turn":
        return {"chunking": "exchange", "chunker": TurnChunker()}
    msg = f"unknown unit {name!r}"
    raise ValueError(msg)


class Units:
    """One conversation's stored units: texts, covered turns, sessions, unit vectors, BM25 and token costs."""

    def __init__(self, conv: LocomoConversation, name: str, embeddings: CachedEmbeddings, root: Path) -> None:
        memory = SessionVectorMemory.local(
            root / name, user_id=conv.sample_id, embeddings=embeddings, **unit_options(name, embeddings)
        )
        for session in conv.sessions:
            memory.add_messages(session.messages, session_id=session.session_id)
        records = memory.backend.get(conv.sample_id, {}, with_embeddings=True)
        self.texts = [r.text for r in records]
        self.turns = [set(decode_message_ids(r.metadata.get("message_ids"))) for r in records]
        self.sessions = [str(r.metadata["session_id"]) for r in records]
        position = {
            (s, int(r.metadata.get("chunk_index", 0))): i
            for i, (s, r) in enumerate(zip(self.sessions, records, strict=True))
        }
        self.next = [
            position.get((s, int(r.metadata.get("chunk_index", 0)) + 1))
            for s, r in zip(self.sessions, records, strict=True)
        ]
        self.previous = [
            position.get((s, int(r.metadata.get("chunk_index", 0)) - 1))
            for s, r in zip(self.sessions, records, strict=True)
        ]
        self.speakers = [decode_message_ids(r.metadata.get("speakers")) for r in records]
        self.vectors = unit_rows([r.embedding or [] for r in records])
        self.bm25 = BM25Index()
        for i, text in enumerate(self.texts):
            self.bm25.add(str(i), text)
        count = tiktoken_counter()
        self.cost = np.array([count(t) for t in self.texts])
        self.names = conv.speakers
        self.sub: dict[str, tuple[Vector, list[list[int]]]] = {}

    def attach(self, name: str, other: Units) -> None:
        """Index another unit kind's vectors by the unit of this kind that holds them (for best-sub-unit scores)."""
        owner = {turn: i for i, turns in enumerate(self.turns) for turn in turns}
        held: list[list[int]] = [[] for _ in self.texts]
        for j, turns in enumerate(other.turns):
            for i in {owner[t] for t in turns if t in owner}:
                held[i].append(j)
        self.sub[name] = (other.vectors, held)


def unit_rows(vectors: Sequence[Sequence[float]]) -> Vector:
    matrix = np.array(vectors, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


Ranking = Callable[[Units, str, Vector, "Query"], list[int]]


class Query:
    """A question's vectors (full, without the speakers' names, content words only), embedded once."""

    def __init__(self, text: str, names: Sequence[str], embeddings: CachedEmbeddings) -> None:
        self.text = text
        self.stripped = dense_query(text, names)
        content = " ".join(w for w in _WORD.findall(text.lower()) if w not in _STOP) or text
        full, stripped, words = embeddings.embed_documents([text, self.stripped, content])
        self.full, self.no_names, self.content = (unit_rows([v])[0] for v in (full, stripped, words))


def fused(units: Units, text: str, vector: Vector, *, w: float = 0.3, normalise: bool = False) -> dict[int, float]:
    """The package's hybrid score over dense top 50 and BM25 top 50."""
    cosine = units.vectors @ vector
    lexical = {int(k): v for k, v in units.bm25.top(text, FETCH)}
    best = max(lexical.values(), default=0.0) or 1.0
    candidates = set(np.argsort(-cosine)[:FETCH].tolist()) | set(lexical)
    dense = {i: float(cosine[i]) for i in candidates}
    if normalise:
        low, high = min(dense.values()), max(dense.values())
        dense = {i: (v - low) / (high - low or 1.0) for i, v in dense.items()}
    return {i: (1 - w) * dense[i] + w * lexical.get(i, 0.0) / best for i in candidates}


def ordered(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def hybrid(w: float = 0.3, *, names: bool = True, normalise: bool = False) -> Ranking:
    return lambda u, text, _v, q: ordered(fused(u, text, q.full if names else q.no_names, w=w, normalise=normalise))


def content_words(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
    return ordered(fused(u, text, q.content))


def rrf(k: int) -> Ranking:
    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        scores: dict[int, float] = {}
        dense = np.argsort(-(u.vectors @ q.full))[: 2 * FETCH].tolist()
        lexical = [int(i) for i, _ in u.bm25.top(text, 2 * FETCH)]
        for ranks in (dense, lexical):
            for r, i in enumerate(ranks):
                scores[i] = scores.get(i, 0.0) + 1 / (k + r)
        return ordered(scores)

    return rank


def prf(beta: float, *, names: bool = True) -> Ranking:
    """Rocchio pseudo-relevance feedback: the query vector moved toward the mean of its top 3 units."""

    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        vector = q.full if names else q.no_names
        top = ordered(fused(u, text, vector))[:3]
        moved = vector + beta * u.vectors[top].mean(axis=0)
        return ordered(fused(u, text, moved / np.linalg.norm(moved)))

    return rank


def mmr(lam: float) -> Ranking:
    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        scores = fused(u, text, q.full)
        pool, chosen = ordered(scores)[:60], []
        while pool:
            if chosen:
                redundancy = (u.vectors[pool] @ u.vectors[chosen].T).max(axis=1)
                values = [lam * scores[c] - (1 - lam) * r for c, r in zip(pool, redundancy, strict=True)]
                pick = pool[int(np.argmax(values))]
            else:
                pick = pool[0]
            chosen.append(pick)
            pool.remove(pick)
        return chosen

    return rank


def session_cap(cap: int) -> Ranking:
    """At most ``cap`` units per session among the first eight, then the rest in score order."""

    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        order, seen, first = ordered(fused(u, text, q.full)), {}, []
        for i in order:
            if seen.get(u.sessions[i], 0) < cap and len(first) < 8:
                first.append(i)
            seen[u.sessions[i]] = seen.get(u.sessions[i], 0) + 1
        return first + [i for i in order if i not in set(first)]

    return rank


def speaker_boost(boost: float) -> Ranking:
    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        scores = fused(u, text, q.full)
        named = {n for n in u.names if re.search(rf"\b{re.escape(n)}\b", text, re.IGNORECASE)}
        if len(named) == 1:
            for i in scores:
                share = sum(s in named for s in u.speakers[i]) / max(len(u.speakers[i]), 1)
                scores[i] *= 1 + boost * share
        return ordered(scores)

    return rank


def neighbours(rank: Ranking, *, before: bool = False) -> Ranking:
    """Each hit followed by the next chunk of its session (and preceded by the one before), when not listed yet."""

    def run(u: Units, text: str, v: Vector, q: Query) -> list[int]:
        out: list[int] = []
        for i in rank(u, text, v, q):
            for j in (u.previous[i] if before else None, i, u.next[i]):
                if j is not None and j not in out:
                    out.append(j)
        return out

    return run


def density(gamma: float) -> Ranking:
    """Score × (tokens / 100)^-gamma: shorter units first at equal relevance."""

    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        scores = fused(u, text, q.full)
        return ordered({i: s * (max(int(u.cost[i]), 8) / 100) ** -gamma for i, s in scores.items()})

    return rank


def bm25_parameters(k1: float, b: float) -> Ranking:
    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        u.bm25.k1, u.bm25.b = k1, b
        try:
            return ordered(fused(u, text, q.full))
        finally:
            u.bm25.k1, u.bm25.b = 1.2, 0.75

    return rank


def best_sub_unit(kind: str) -> Ranking:
    """A segment's dense score is the best of its own and its exchanges' (or turns') cosines."""

    def rank(u: Units, text: str, _v: Vector, q: Query) -> list[int]:
        vectors, held = u.sub[kind]
        inner = vectors @ q.full
        own = u.vectors @ q.full
        dense = np.array([max([own[i], *(inner[j] for j in held[i])]) for i in range(len(own))])
        lexical = {int(k): v for k, v in u.bm25.top(text, FETCH)}
        best = max(lexical.values(), default=0.0) or 1.0
        candidates = set(np.argsort(-dense)[:FETCH].tolist()) | set(lexical)
        return ordered({i: 0.7 * float(dense[i]) + 0.3 * lexical.get(i, 0.0) / best for i in candidates})

    return rank


def unlabelled(rank: Ranking) -> Ranking:
    """Rank with unit vectors embedded without their speaker labels."""

    def run(u: Units, text: str, v: Vector, q: Query) -> list[int]:
        labelled = u.vectors
        u.vectors = u.sub["unlabelled"][0]
        try:
            return rank(u, text, v, q)
        finally:
            u.vectors = labelled

    return run


# -- scoring ------------------------------------------------------------------------------------
Row = tuple[str, list[float]]


def recall(u: Units, order: Sequence[int], evidence: set[str]) -> list[float]:
    out = []
    for budget in BUDGETS:
        got: set[str] = set()
        spent = 0
        for i in order:
            if spent + u.cost[i] > budget:
                break
            spent += int(u.cost[i])
            got |= u.turns[i]
        out.append(len(evidence & got) / len(evidence))
    return out


def compressed_recall(u: Units, turns: Units, q: Query, evidence: set[str], keep: int) -> list[float]:
    """Units ranked as usual, each cut to its ``keep`` best turns (by the turns' own hybrid scores)."""
    order = ordered(fused(u, q.text, q.full))
    turn_scores = fused(turns, q.text, q.full)
    held = u.sub["turn"][1]
    out = []
    for budget in BUDGETS:
        got: set[str] = set()
        spent = 0
        for i in order:
            best = sorted(held[i], key=lambda j: -turn_scores.get(j, -1.0))[:keep]
            cost = sum(int(turns.cost[j]) for j in best)
            if spent + cost > budget:
                break
            spent += cost
            for j in best:
                got |= turns.turns[j]
        out.append(len(evidence & got) / len(evidence))
    return out


def table(rows: list[Row]) -> dict[str, float]:
    out = {f"t{b}": round(100 * statistics.fmean(r[1][n] for r in rows), 1) for n, b in enumerate(BUDGETS)}
    middle = BUDGETS.index(512)
    for category in ("single", "multi", "temporal", "open", "adv"):
        values = [r[1][middle] for r in rows if r[0] == category]
        if values:
            out[f"{category}@512"] = round(100 * statistics.fmean(values), 1)
    return out


def strategies() -> list[tuple[str, str, Ranking]]:
    """(unit, name, ranking) of every technique tried."""
    tried: list[tuple[str, str, Ranking]] = []
    for unit in ("segments-0.4", "segments-0.5", "exchange", "turn"):
        tried += [
            (unit, "hybrid w=0.3 (0.4 ranking)", hybrid()),
            (unit, "speaker names out of dense query", hybrid(names=False)),
        ]
    base = "segments-0.4"
    tried += [(base, f"hybrid w={w}", hybrid(w)) for w in (0.0, 0.2, 0.5, 0.7, 1.0)]
    tried += [
        (base, "min-max dense + w=0.5", hybrid(0.5, normalise=True)),
        (base, "reciprocal-rank fusion k=10", rrf(10)),
        (base, "reciprocal-rank fusion k=60", rrf(60)),
        (base, "PRF beta=0.3", prf(0.3)),
        (base, "PRF beta=0.5", prf(0.5)),
        (base, "MMR lambda=0.7", mmr(0.7)),
        (base, "MMR lambda=0.85", mmr(0.85)),
        (base, "1 unit per session in the first 8", session_cap(1)),
        (base, "2 units per session in the first 8", session_cap(2)),
        (base, "speaker boost 0.3", speaker_boost(0.3)),
        (base, "token density gamma=0.1", density(0.1)),
        (base, "token density gamma=0.2", density(0.2)),
        (base, "BM25 k1=1.2 b=0.3", bm25_parameters(1.2, 0.3)),
        (base, "BM25 k1=2 b=0.75", bm25_parameters(2.0, 0.75)),
        (base, "best exchange vector in segment", best_sub_unit("exchange")),
        (base, "best turn vector in segment", best_sub_unit("turn")),
        (base, "content words only (dense)", content_words),
        (base, "neighbour expansion (next chunk after each hit)", neighbours(hybrid())),
        ("exchange", "neighbour expansion, names out", neighbours(hybrid(names=False))),
        ("turn", "neighbour expansion, names out", neighbours(hybrid(names=False))),
        ("turn", "both neighbours, names out", neighbours(hybrid(names=False), before=True)),
        (base, "neighbour expansion, names out", neighbours(hybrid(names=False))),
        ("segments-0.5", "neighbour expansion", neighbours(hybrid())),
        ("segments-0.5", "neighbour expansion, names out", neighbours(hybrid(names=False))),
        ("segments-0.5", "both neighbours, names out", neighbours(hybrid(names=False), before=True)),
        (base, "names out + PRF beta=0.3", prf(0.3, names=False)),
        (base, "names out + unlabelled unit vectors", unlabelled(hybrid(names=False))),
        ("turn", "speaker boost 0.3", speaker_boost(0.3)),
        ("turn", "names out, w=0.2", hybrid(0.2, names=False)),
        ("segments-0.5", "names out, w=0.2", hybrid(0.2, names=False)),
        ("segments-0.5", "names out, w=0.5", hybrid(0.5, names=False)),
        ("segments-0.5", "names out + PRF beta=0.3", prf(0.3, names=False)),
    ]
    return tried


def api_rows(convs: list[LocomoConversation], embeddings: CachedEmbeddings) -> list[dict[str, Any]]:
    """The 0.4 and 0.5 defaults through ``evaluate_locomo`` (markers counted and not), per split."""
    old = {**unit_options("segments-0.4", embeddings), "strip_speaker_names": False, "time_aware": False}
    rows = []
    for name, options in (("0.4 defaults", old), ("0.5 defaults", {})):
        for split, ids in (("tune", TUNE), ("report", tuple(c.sample_id for c in convs if c.sample_id not in TUNE))):
            for markers in (False, True):
                chosen = [c for c in convs if c.sample_id in ids]
                report = evaluate_locomo(chosen, embeddings=embeddings, memory_options=options, budgets=BUDGETS,
                                         with_markers=markers)  # fmt: skip
                rows.append({"defaults": name, "split": split, "markers": markers, "chunks": report.chunks,
                             "mean_chunk_tokens": report.mean_chunk_tokens,
                             "recall_at_tokens": {str(b): r for b, r in report.recall_at_tokens.items()}})  # fmt: skip
                print(name, split, "markers" if markers else "text", report.recall_at_tokens[512], flush=True)
    return rows


class CountingEmbeddings(Embeddings):
    """The real model, counting the texts it embeds."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner, self.texts = inner, 0
        self.model_id = getattr(inner, "model_id", "counted")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def cost_rows(conv: LocomoConversation, root: Path) -> list[dict[str, Any]]:
    """Ingest seconds, texts embedded and query milliseconds of the 0.4 and 0.5 defaults, live (no cache)."""
    rows = []
    questions = [q.question for q in conv.questions if q.evidence]
    get_default_embeddings().embed_documents([m["content"] for m in conv.sessions[0].messages])  # load and warm
    for name in ("0.4 defaults", "0.5 defaults"):
        embeddings = CountingEmbeddings(get_default_embeddings())
        options: dict[str, Any] = {}
        if name == "0.4 defaults":
            segmenter = TopicSegmenter(embeddings, threshold=0.7, comparison="centroid", max_tokens=128)
            options = {"chunker": ExchangeChunker(min_tokens=24), "segmenter": segmenter,
                       "strip_speaker_names": False, "time_aware": False}  # fmt: skip
        memory = SessionVectorMemory.local(root / name, user_id=conv.sample_id, embeddings=embeddings, **options)
        started = time.perf_counter()
        for session in conv.sessions:
            memory.add_messages(session.messages, session_id=session.session_id)
        ingest = time.perf_counter() - started
        memory.invoke(questions[0])  # warm
        timings = []
        for question in questions:
            began = time.perf_counter()
            memory.invoke(question, k=50)
            timings.append(1000 * (time.perf_counter() - began))
        rows.append({"defaults": name, "conversation": conv.sample_id, "ingest_s": round(ingest, 1),
                     "texts_embedded": embeddings.texts, "query_ms_median": round(statistics.median(timings), 1),
                     "query_ms_p95": round(sorted(timings)[int(0.95 * len(timings))], 1)})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def load_cache(path: Path | None, embeddings: CachedEmbeddings) -> None:
    if path is not None and path.exists():
        data = np.load(path, allow_pickle=False)
        embeddings.cache.update(zip(data["texts"].tolist(), data["vectors"].tolist(), strict=True))


def save_cache(path: Path | None, embeddings: CachedEmbeddings) -> None:
    if path is not None and embeddings.cache:
        texts = list(embeddings.cache)
        np.savez(path, texts=np.array(texts), vectors=np.array([embeddings.cache[t] for t in texts], dtype=np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("LOCOMO_PATH"), help="LoCoMo JSON (or $LOCOMO_PATH)")
    parser.add_argument("--no-cache", action="store_true", help="embed everything again")
    parser.add_argument("--skip-api", action="store_true", help="leave out the evaluate_locomo rows")
    args = parser.parse_args()
    if not args.data:
        parser.error("give --data PATH or set LOCOMO_PATH (the LoCoMo dev conversations)")
    convs = load_locomo(args.data)
    RESULTS.mkdir(exist_ok=True)
    cache = None if args.no_cache else RESULTS / "retrieval_strategies_embeddings.npz"
    embeddings = CachedEmbeddings(get_default_embeddings())
    load_cache(cache, embeddings)
    started = time.perf_counter()
    units: dict[tuple[str, str], Units] = {}
    with tempfile.TemporaryDirectory(prefix="strategies-") as root:
        for conv in convs:
            for name in ("segments-0.4", "segments-0.5", "exchange", "turn"):
                units[name, conv.sample_id] = Units(conv, name, embeddings, Path(root) / conv.sample_id)
            base = units["segments-0.4", conv.sample_id]
            for kind in ("exchange", "turn"):
                base.attach(kind, units[kind, conv.sample_id])
            base.sub["unlabelled"] = (unit_rows(embeddings.embed_documents([LABEL.sub("", t) for t in base.texts])), [])
        save_cache(cache, embeddings)
        queries = {
            (c.sample_id, q.question): Query(q.question, c.speakers, embeddings) for c in convs for q in c.questions
        }
        save_cache(cache, embeddings)
        results = []
        tried = [(u, n, r) for u, n, r in strategies()] + [
            ("segments-0.4", f"compressed to best {m} turns", m) for m in (1, 2, 3)
        ]
        for unit, name, ranking in tried:
            split_rows: dict[str, list[Row]] = {"tune": [], "report": []}
            for conv in convs:
                u = units[unit, conv.sample_id]
                for q in conv.questions:
                    if not q.evidence:
                        continue
                    query = queries[conv.sample_id, q.question]
                    evidence = set(q.evidence)
                    if isinstance(ranking, int):
                        scores = compressed_recall(u, units["turn", conv.sample_id], query, evidence, ranking)
                    else:
                        scores = recall(u, ranking(u, q.question, query.full, query), evidence)
                    split_rows["tune" if conv.sample_id in TUNE else "report"].append((q.category, scores))
            row = {"unit": unit, "strategy": name, **{s: table(r) for s, r in split_rows.items() if r}}
            results.append(row)
            print(f"{unit:13} {name:40} tune {row.get('tune')}\n{'':54} report {row.get('report')}", flush=True)
        api = [] if args.skip_api else api_rows(convs, embeddings)
        save_cache(cache, embeddings)
        report_conv = next(c for c in convs if c.sample_id not in TUNE)
        cost = [] if args.skip_api else cost_rows(report_conv, Path(root) / "cost")
    payload = {
        "benchmark": "retrieval_strategies",
        "data": args.data,
        "splits": {"tune": list(TUNE), "report": [c.sample_id for c in convs if c.sample_id not in TUNE]},
        "budgets": BUDGETS,
        "metric": "evidence recall (%) within chunk-text tokens (cl100k), whole chunks in rank order",
        "results": results,
        "api": api,
        "cost": cost,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (RESULTS / "retrieval_strategies.json").write_text(json.dumps(payload, indent=1))
    print(f"wrote {RESULTS / 'retrieval_strategies.json'} in {payload['seconds']} s")


if __name__ == "__main__":
    main()
