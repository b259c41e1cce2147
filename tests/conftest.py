from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_session_rag import LocalEmbeddings, SessionVectorMemory, get_default_embeddings
from langchain_session_rag.chunking import ExchangeChunker


class CountingEmbeddings(Embeddings):
    """Wraps a real model and counts every text it embeds."""

    def __init__(self, inner: Embeddings, model_id: str | None = None) -> None:
        self.inner = inner
        self.model_id = model_id or getattr(inner, "model_id", "counting")
        self.texts: list[str] = []
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts.append(text)
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts.append(text)
        return await self.inner.aembed_query(text)


@pytest.fixture(scope="session")
def real_embeddings() -> LocalEmbeddings:
    return get_default_embeddings()


_names = itertools.count()


@pytest.fixture
def make_memory(tmp_path: Path, real_embeddings: LocalEmbeddings) -> Callable[..., SessionVectorMemory]:
    """Open a memory on an embedded Chroma in a temp dir, with a unique store name per call."""

    def make(user_id: str = "alice", *, chunker_min: int | None = None, **kwargs: Any) -> SessionVectorMemory:
        kwargs.setdefault("embeddings", real_embeddings)
        if chunker_min is not None:
            kwargs["chunker"] = ExchangeChunker(min_tokens=chunker_min)
        kwargs.setdefault("collection_name", f"mem{next(_names):04d}")
        return SessionVectorMemory.local(path=tmp_path / "store", user_id=user_id, **kwargs)

    return make


def chroma_session() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "id": "u1",
            "timestamp": "2026-02-06T10:00:00",
            "content": "ChromaDB keeps throwing 'collection not found' after restart",
        },
        {
            "role": "assistant",
            "id": "a1",
            "content": "Your client is EphemeralClient; switch to chromadb.PersistentClient(path='./chroma_db').",
        },
    ]


def cooking_session() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "id": "c1",
            "timestamp": "2026-03-01T18:00:00",
            "content": "How long should I bake a sourdough loaf at 230 degrees?",
        },
        {
            "role": "assistant",
            "id": "c2",
            "content": "Bake it covered for 20 minutes, then uncovered for another 20 to 25 minutes until deep brown.",
        },
    ]
