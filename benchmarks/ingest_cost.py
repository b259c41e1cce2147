"""Ingest cost: our topic pipeline against two naive pipelines, same model, store and data.

Data: every session of the LoCoMo file (``--data PATH``, else ``$LOCOMO_PATH``, else the bundled sample), turns
as messages.
- ours: ``SessionVectorMemory.local(...).add_messages(session, session_id=...)`` per session (default topic
  chunking: exchanges embedded in one batch to find boundaries, only segments of several exchanges embedded
  again, single-exchange segments reuse their vector);
- naive, unbatched (the tutorial loop): pair the turns into exchanges, ``embed_query`` each exchange to find
  topic boundaries (cosine of consecutive exchanges < 0.7), then add each segment through
  ``langchain_chroma.Chroma.add_texts([segment])``, which embeds it again: one call per item;
- naive, batched (as a careful user writes it): the same segmentation, but the session's exchanges embedded in
  one ``embed_documents`` call and its segments added in one ``add_texts`` call (which embeds them in one call).
Both naive pipelines embed every exchange, then every segment again (N + S texts for N exchanges in S segments);
ours embeds the exchanges, then only the segments of several exchanges (each stored text once). The pipelines run in turn, ``--repeats`` rounds, to see the timing noise.
All use the real all-MiniLM-L6-v2 behind a counter and an embedded Chroma. Writes results/ingest_cost.json.
Run: bash scripts/benchmark.sh ingest_cost [--data PATH] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import locomo_data
import numpy as np
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.stores.adapter import open_chroma_client

RESULTS = Path(__file__).parent / "results"
THRESHOLD = 0.7


class Counting(Embeddings):
    """The real model, counting calls and texts."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.model_id = getattr(inner, "model_id", "counting")
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts += 1
        return self.inner.embed_query(text)


def sessions(conversations: list[locomo_data.Conversation]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for conv in conversations:
        out.extend((f"{conv.sample_id}-{s.session_id}", s.messages) for s in conv.sessions)
    return out


def _pairs(messages: list[dict[str, Any]]) -> list[str]:
    return ["\n".join(f"{m['role']}: {m['content']}" for m in messages[i : i + 2]) for i in range(0, len(messages), 2)]


def _segments(pairs: list[str], vectors: list[np.ndarray]) -> list[str]:
    """Consecutive exchanges joined while the cosine of neighbours stays at or above THRESHOLD."""
    segments: list[list[str]] = [[pairs[0]]]
    for prev, cur, text in zip(vectors, vectors[1:], pairs[1:], strict=False):
        similarity = float(prev @ cur / (np.linalg.norm(prev) * np.linalg.norm(cur)))
        if similarity < THRESHOLD:
            segments.append([text])
        else:
            segments[-1].append(text)
    return ["\n".join(segment) for segment in segments]


def _naive_store(embeddings: Counting, path: Path) -> Chroma:
    return Chroma(collection_name="naive", client=open_chroma_client(path=path), embedding_function=embeddings)


def naive(data: list[tuple[str, list[dict[str, Any]]]], embeddings: Counting, path: Path) -> int:
    """The tutorial loop: one embedding call per exchange, one ``add_texts`` call per segment."""
    store = _naive_store(embeddings, path)
    stored = 0
    for session_id, messages in data:
        pairs = _pairs(messages)
        vectors = [np.asarray(embeddings.embed_query(p)) for p in pairs]
        for segment in _segments(pairs, vectors):
            store.add_texts([segment], metadatas=[{"user_id": "u", "session_id": session_id}])
            stored += 1
    return stored


def naive_batched(data: list[tuple[str, list[dict[str, Any]]]], embeddings: Counting, path: Path) -> int:
    """A careful user: one embedding call for a session's exchanges, one ``add_texts`` call for its segments."""
    store = _naive_store(embeddings, path)
    stored = 0
    for session_id, messages in data:
        pairs = _pairs(messages)
        vectors = [np.asarray(v) for v in embeddings.embed_documents(pairs)]
        segments = _segments(pairs, vectors)
        store.add_texts(segments, metadatas=[{"user_id": "u", "session_id": session_id}] * len(segments))
        stored += len(segments)
    return stored


def ours(data: list[tuple[str, list[dict[str, Any]]]], embeddings: Counting, path: Path) -> int:
    memory = SessionVectorMemory.local(path=path, user_id="u", embeddings=embeddings)
    for session_id, messages in data:
        memory.add_messages(messages, session_id=session_id)
    return memory.count()


PIPELINES = {"ours": ours, "naive": naive, "naive, batched": naive_batched}


def measure(name: str, data: list[tuple[str, list[dict[str, Any]]]], exchanges: int) -> dict[str, Any]:
    embeddings = Counting(get_default_embeddings())
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    stored = PIPELINES[name](data, embeddings, Path(tempfile.mkdtemp(prefix="ingest-")))
    seconds = time.perf_counter() - started
    row = {
        "pipeline": name,
        "seconds": round(seconds, 1),
        "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # before, after: other work on the box
        "exchanges_per_s": round(exchanges / seconds, 1),
        "stored_chunks": stored,
        "embedding_calls": embeddings.calls,
        "texts_embedded": embeddings.texts,
        "calls_per_stored_chunk": round(embeddings.calls / stored, 3),
        "texts_per_stored_chunk": round(embeddings.texts / stored, 3),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    locomo_data.add_data_argument(parser)
    parser.add_argument("--repeats", type=int, default=2, help="rounds of the three pipelines (timing noise)")
    parser.add_argument("--out", default=str(RESULTS / "ingest_cost.json"))
    args = parser.parse_args()
    path = locomo_data.data_path(args.data)
    conversations = locomo_data.load(path)
    data = sessions(conversations)
    messages = sum(len(m) for _, m in data)
    exchanges = sum((len(m) + 1) // 2 for _, m in data)
    get_default_embeddings().embed_query("warm up")  # load the model outside the timings
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in PIPELINES}
    for _ in range(args.repeats):
        for name in PIPELINES:
            runs[name].append(measure(name, data, exchanges))
    rows = []
    for name, got in runs.items():
        if len({(r["embedding_calls"], r["texts_embedded"], r["stored_chunks"]) for r in got}) != 1:
            msg = f"{name}: counts differ between rounds: {got}"
            raise RuntimeError(msg)
        seconds = [r["seconds"] for r in got]
        best = min(seconds)
        rows.append(
            {
                **got[0],
                "seconds": best,
                "exchanges_per_s": round(exchanges / best, 1),
                "seconds_all_rounds": seconds,
                "load_avg_1min_all_rounds": [r["load_avg_1min"] for r in got],
            }
        )
    mine, theirs, careful = rows

    def ratios(other: dict[str, Any]) -> dict[str, float]:
        return {
            "fewer_embedding_calls": round(other["embedding_calls"] / mine["embedding_calls"], 2),
            "fewer_texts_embedded": round(other["texts_embedded"] / mine["texts_embedded"], 2),
            "speedup_best_round": round(other["seconds"] / mine["seconds"], 2),
            "speedup_per_round": [
                round(o / m, 2) for o, m in zip(other["seconds_all_rounds"], mine["seconds_all_rounds"], strict=True)
            ],
        }

    payload = {
        "benchmark": "ingest_cost",
        "date": time.strftime("%Y-%m-%d"),
        "data": f"{locomo_data.describe(path, conversations)}: {len(data)} sessions, {messages} messages, "
        f"{exchanges} exchanges",
        "bundled_sample": locomo_data.is_sample(path),
        "threshold": THRESHOLD,
        "repeats": args.repeats,
        "timing": "seconds: the best of the rounds; the pipelines alternate within each round",
        "pipelines": rows,
        "vs_naive": ratios(theirs),
        "vs_naive_batched": ratios(careful),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps({k: v for k, v in payload.items() if k != "pipelines"}, indent=2))


if __name__ == "__main__":
    main()
