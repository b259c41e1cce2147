"""Ingest cost: our topic pipeline against the naive pipeline tutorials show, same model, store and data.

Data: every session of the LoCoMo dev conversations (``../shared/data/locomo``), turns as messages.
- ours: ``SessionVectorMemory.local(...).add_messages(session, session_id=...)`` per session (default topic
  chunking: exchanges embedded in one batch to find boundaries, only segments of several exchanges embedded
  again, single-exchange segments reuse their vector);
- naive: pair the turns into exchanges, ``embed_query`` each exchange to find topic boundaries (cosine of
  consecutive exchanges < 0.7), then add each segment through ``langchain_chroma.Chroma.add_texts([segment])``,
  which embeds it again: one call per item.
Both use the real all-MiniLM-L6-v2 behind a counter and an embedded Chroma. Writes results/ingest_cost.json.
Run: bash scripts/benchmark.sh ingest_cost
"""

from __future__ import annotations

import json
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


def sessions() -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for conv in locomo_data.load():
        out.extend((f"{conv.sample_id}-{s.session_id}", s.messages) for s in conv.sessions)
    return out


def naive(data: list[tuple[str, list[dict[str, Any]]]], embeddings: Counting, path: Path) -> int:
    store = Chroma(collection_name="naive", client=open_chroma_client(path=path), embedding_function=embeddings)
    stored = 0
    for session_id, messages in data:
        pairs = [
            "\n".join(f"{m['role']}: {m['content']}" for m in messages[i : i + 2]) for i in range(0, len(messages), 2)
        ]
        vectors = [np.asarray(embeddings.embed_query(p)) for p in pairs]
        segments: list[list[str]] = [[pairs[0]]]
        for prev, cur, text in zip(vectors, vectors[1:], pairs[1:], strict=False):
            similarity = float(prev @ cur / (np.linalg.norm(prev) * np.linalg.norm(cur)))
            if similarity < THRESHOLD:
                segments.append([text])
            else:
                segments[-1].append(text)
        for segment in segments:
            store.add_texts(["\n".join(segment)], metadatas=[{"user_id": "u", "session_id": session_id}])
            stored += 1
    return stored


def ours(data: list[tuple[str, list[dict[str, Any]]]], embeddings: Counting, path: Path) -> int:
    memory = SessionVectorMemory.local(path=path, user_id="u", embeddings=embeddings)
    for session_id, messages in data:
        memory.add_messages(messages, session_id=session_id)
    return memory.count()


def measure(name: str, pipeline: Any, data: list[tuple[str, list[dict[str, Any]]]], exchanges: int) -> dict[str, Any]:
    embeddings = Counting(get_default_embeddings())
    started = time.perf_counter()
    stored = pipeline(data, embeddings, Path(tempfile.mkdtemp(prefix=f"ingest-{name}-")))
    seconds = time.perf_counter() - started
    row = {
        "pipeline": name,
        "seconds": round(seconds, 1),
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
    data = sessions()
    messages = sum(len(m) for _, m in data)
    exchanges = sum((len(m) + 1) // 2 for _, m in data)
    get_default_embeddings().embed_query("warm up")  # load the model outside the timings
    rows = [measure("ours", ours, data, exchanges), measure("naive", naive, data, exchanges)]
    mine, theirs = rows
    payload = {
        "benchmark": "ingest_cost",
        "date": time.strftime("%Y-%m-%d"),
        "data": f"LoCoMo dev: {len(data)} sessions, {messages} messages, {exchanges} exchanges",
        "threshold": THRESHOLD,
        "pipelines": rows,
        "fewer_embedding_calls": round(theirs["embedding_calls"] / mine["embedding_calls"], 1),
        "fewer_texts_embedded": round(theirs["texts_embedded"] / mine["texts_embedded"], 2),
        "speedup": round(theirs["seconds"] / mine["seconds"], 2),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ingest_cost.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps({k: v for k, v in payload.items() if k != "pipelines"}, indent=2))


if __name__ == "__main__":
    main()
