"""Ollama embeddings, when an Ollama server answers at OLLAMA_HOST (skipped otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.models.local_llm import has_model, ollama_models
from tests.conftest import chroma_session, cooking_session
from tests.integration_tests.conftest import ollama_host

pytestmark = [
    pytest.mark.ollama,
    pytest.mark.skipif(
        not has_model(ollama_models(ollama_host()) or [], "nomic-embed-text"),
        reason="no Ollama server with nomic-embed-text answers at OLLAMA_HOST",
    ),
]


def test_memory_with_ollama_embeddings(tmp_path: Path) -> None:
    from langchain_ollama import OllamaEmbeddings

    embeddings = OllamaEmbeddings(model="nomic-embed-text", base_url=ollama_host())
    m = SessionVectorMemory.local(path=tmp_path, user_id="alice", embeddings=embeddings)
    m.add_messages(chroma_session(), session_id="s1")
    m.add_messages(cooking_session(), session_id="s2")
    assert m.model_id == "ollama:nomic-embed-text"
    assert m.invoke("chroma error", k=1)[0].metadata["session_id"] == "s1"
