"""The langchain-tests standard retriever suite, on an embedded Chroma and the real model."""

from __future__ import annotations

import tempfile
from functools import cached_property
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_session_rag import SessionVectorMemory, get_default_embeddings

pytestmark = pytest.mark.slow  # the standard suites, on the real model


class TestSessionVectorMemoryOnChroma(RetrieversIntegrationTests):
    """Constructed over a ``langchain_chroma.Chroma`` holding four exchanges of one user."""

    @cached_property
    def _store(self) -> Chroma:
        store = Chroma(
            collection_name="standard",
            embedding_function=get_default_embeddings(),
            persist_directory=tempfile.mkdtemp(),
            collection_metadata={"hnsw:space": "cosine"},
        )
        memory = SessionVectorMemory(vectorstore=store, user_id="alice")
        for n, topic in enumerate(["Chroma persistence", "sourdough baking", "Python packaging", "Fly.io deploys"]):
            memory.add_messages(
                [
                    {"role": "user", "content": f"Tell me about {topic}, in detail please."},
                    {"role": "assistant", "content": f"Here is what matters about {topic}: it takes some practice."},
                ],
                session_id=f"s{n}",
            )
        return store

    @property
    def retriever_constructor(self) -> type[SessionVectorMemory]:
        return SessionVectorMemory

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": self._store, "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "how do I keep my Chroma data?"


class TestSessionVectorMemoryLocal(RetrieversIntegrationTests):
    """Constructed with ``chroma_client=`` (the partitioned layout that ``.local`` uses)."""

    @cached_property
    def _client(self) -> Any:
        import chromadb

        client = chromadb.PersistentClient(path=tempfile.mkdtemp())
        memory = SessionVectorMemory(chroma_client=client, user_id="alice")
        for n in range(4):
            memory.add_messages(
                [
                    {"role": "user", "content": f"Question number {n} about vector databases and their indexes?"},
                    {"role": "assistant", "content": f"Answer number {n}: HNSW indexes trade memory for speed."},
                ],
                session_id=f"s{n}",
            )
        return client

    @property
    def retriever_constructor(self) -> type[SessionVectorMemory]:
        return SessionVectorMemory

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"chroma_client": self._client, "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "vector index"
