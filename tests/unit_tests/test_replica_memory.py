"""The replica's memory footprint: no second copy of the vectors, compact postings, a bound per chunk."""

from __future__ import annotations

import gc
import math
import random
import tracemalloc
from array import array
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_session_rag.memory.lexical import UBIQUITOUS, BM25Index, tokenize
from langchain_session_rag.memory.replica import ReplicaSource, UserReplica
from langchain_session_rag.stores.base import Record, RecordPage, fingerprint
from langchain_session_rag.stores.records import session_record

DIM = 384
WORDS = [
    f"{a}{b}" for a in ("tra", "mo", "kel", "ispa", "dor", "vun", "sel", "qua") for b in ("nto", "ri", "bex", "lum")
]


def _fresh(value: Any) -> Any:
    return value.encode().decode() if isinstance(value, str) else value


def _records(n: int, seed: int = 0) -> list[Record]:
    """Chunks as a store returns them: ~90 words, the metadata ``session_record`` writes, fresh strings."""
    rng, vectors = random.Random(seed), np.random.default_rng(seed)  # noqa: S311 - test data
    out = []
    for i in range(n):
        vocabulary = [*WORDS, f"name{rng.randrange(5_000)}", str(rng.randrange(10_000))]
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(60, 120)))
        record = session_record(
            user_id="user-7f3a9c2e",
            session_id=f"session-{i // 40:04d}",
            kind="exchange",
            text=f"Alice: {text}",
            message_ids=[f"msg-{i:06d}-a", f"msg-{i:06d}-b"],
            timestamp=datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=i),
            token_count=120,
            model_id="sentence-transformers/all-MiniLM-L6-v2",
            vector=vectors.standard_normal(DIM).tolist(),
            speakers=["Alice", "Bob"],
        )
        record.metadata["chunk_index"] = i % 40
        meta = {_fresh(k): _fresh(v) for k, v in record.metadata.items()}
        out.append(Record(id=_fresh(record.id), text=_fresh(record.text), metadata=meta, embedding=record.embedding))
    return out


def _reachable(root: object) -> list[object]:
    seen, stack, out = set(), [root], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | np.ndarray | array):
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, dict):
            stack.extend([*obj.keys(), *obj.values()])
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
    return out


def test_the_replica_holds_each_vector_once_as_a_float32_row() -> None:
    records = _records(300)
    replica = UserReplica()
    replica.put(records[:200])
    for record in records[200:]:  # writes one by one grow the matrix by a quarter, not twice over
        replica.put([record])
    containers = [o for o in _reachable(replica) if isinstance(o, list | tuple)]
    assert not [c for c in containers if any(isinstance(x, float) for x in c)]
    arrays = [v for v in vars(replica).values() if isinstance(v, np.ndarray)]
    assert [(a.dtype, a.shape[1]) for a in arrays] == [(np.float32, DIM)]
    assert 300 <= arrays[0].shape[0] <= 1.25 * 300
    fresh = UserReplica()
    fresh.put(records)  # one batch: its rows reserved exactly
    assert fresh._matrix.shape == (300, DIM)


def test_dense_matches_an_exact_reference_on_a_fixed_random_set() -> None:
    """Ids and order equal the float64 cosine ranking; scores within 1e-6 (the rows are float32)."""
    rng = np.random.default_rng(11)
    vectors, queries = rng.standard_normal((2_000, DIM)), rng.standard_normal((30, DIM))
    replica = UserReplica()
    replica.put(Record(id=f"d{i:04d}", text="x", metadata={}, embedding=v.tolist()) for i, v in enumerate(vectors))
    replica.drop([f"d{i:04d}" for i in range(0, 2_000, 7)])  # holes filled by moved rows
    alive = [i for i in range(2_000) if i % 7]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for query in queries:
        exact = unit[alive] @ (query / np.linalg.norm(query))
        order = np.argsort(-exact, kind="stable")[:10]
        got = replica.dense(query.tolist(), 10)
        assert [r.id for r, _ in got] == [f"d{alive[j]:04d}" for j in order]
        assert [s for _, s in got] == pytest.approx(exact[order].tolist(), abs=1e-6)


def test_memory_per_chunk_stays_under_its_bound() -> None:
    """Measured 3.4 KB a chunk with these records (1.5 KB of it the float32 vector), 6.7 KB before the
    compaction (a ``Counter`` per chunk and a ``set`` per term, a string per chunk for every metadata key, a set
    per message). The bound leaves 30% margin; one list of 384 Python floats per chunk (12 KB) breaks it, so do
    the old postings (+2.5 KB with these short-vocabulary texts)."""
    records = _records(2_000)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    replica = UserReplica()
    replica.put(records)
    del records
    gc.collect()
    per_chunk = (tracemalloc.get_traced_memory()[0] - start) / len(replica)
    tracemalloc.stop()
    assert len(replica) == 2_000
    assert per_chunk < 4_500


def _reference(docs: dict[str, str], query: str, only: set[str] | None) -> dict[str, float]:
    """The textbook BM25 the index implements (k1=1.2, b=0.75, terms in over 95% of documents skipped)."""
    terms = {d: Counter(tokenize(t)) for d, t in docs.items()}
    n = len(docs)
    avg = sum(sum(c.values()) for c in terms.values()) / n if n else 1.0
    out: dict[str, float] = {}
    for term in set(tokenize(query)):
        holders = [d for d in docs if term in terms[d]]
        df = len(holders)
        if not df or df > UBIQUITOUS * n:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for d in holders:
            if only is None or d in only:
                f, norm = terms[d][term], 1.2 * (1 - 0.75 + 0.75 * sum(terms[d].values()) / (avg or 1.0))
                out[d] = out.get(d, 0.0) + idf * f * (1.2 + 1) / (f + norm)
    return out


TEXTS = st.lists(st.sampled_from([*WORDS[:10], "the", "dogs", "dog", "painting"]), min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), TEXTS), min_size=1, max_size=60),
    st.lists(st.integers(0, 40), max_size=45),
    TEXTS,
    st.integers(1, 6),
)
def test_compact_postings_score_as_textbook_bm25(
    adds: list[tuple[int, list[str]]], removes: list[int], query: list[str], n: int
) -> None:
    index, docs = BM25Index(), {}
    for i, words in adds:
        index.add(f"d{i}", " ".join(words))
        docs[f"d{i}"] = " ".join(words)
    index.remove_many(f"d{i}" for i in removes)  # over 32 at once: the bulk path
    index.remove(f"d{removes[0] if removes else 0}")
    for doc_id in [f"d{i}" for i in removes] + [f"d{removes[0] if removes else 0}"]:
        docs.pop(doc_id, None)
    only = {d for d in docs if int(d[1:]) % 2} if n % 2 else None
    expected = _reference(docs, " ".join(query), only)
    assert index.scores(" ".join(query), only=only) == pytest.approx(expected)
    ranked = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    got = index.top(" ".join(query), n, only=only)
    assert [d for d, _ in got] == [d for d, _ in ranked]
    assert len(index) == len(docs)


def test_a_sync_fetching_in_batches_gives_back_the_rows_grown_ahead() -> None:
    stored = {r.id: r for r in _records(4_500)}
    replica = UserReplica()
    replica.put([next(iter(stored.values()))])  # not empty: the sync fetches the rest in batches
    replica.sync(
        ReplicaSource(
            log=lambda: None,
            touched=lambda _: None,
            ids=lambda: list(stored),
            listing=lambda: {i: fingerprint(r.metadata) for i, r in stored.items()},
            pages=lambda ids: [RecordPage([stored[i] for i in ids])],
        )
    )
    assert len(replica) == 4_500
    assert replica._matrix.shape == (4_500, DIM)
