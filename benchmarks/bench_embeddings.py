"""Embedding wrappers the benchmarks share."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings


class CachedEmbeddings(Embeddings):
    """The real model behind a per-run text cache (each distinct text embedded once).

    ``live_queries`` makes ``embed_query`` call the model every time, to time query embedding honestly.
    """

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.model_id = getattr(inner, "model_id", "cached")
        self.cache: dict[str, list[float]] = {}
        self.live_queries = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.live_queries:
            return self.inner.embed_query(text)
        return self.embed_documents([text])[0]
