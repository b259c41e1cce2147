"""Plumbing of the generic VectorStore back end (InMemoryVectorStore, fake embeddings: no similarity asserted)."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import EmbeddingModelMismatchError
from tests.conftest import chroma_session, cooking_session


def make(user_id: str = "alice") -> SessionVectorMemory:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    return SessionVectorMemory(vectorstore=store, user_id=user_id)


def test_generic_store_scopes_and_forgets() -> None:
    alice = make()
    bob = alice.for_user("bob")
    alice.add_messages(chroma_session(), session_id="s1")
    bob.add_messages(cooking_session(), session_id="s1")
    assert alice.add_messages(chroma_session(), session_id="s1") == alice.add_messages(
        chroma_session(), session_id="s1"
    )
    assert len(alice.vectorstore.store) == 2  # type: ignore[union-attr]
    assert [d.metadata["user_id"] for d in alice.invoke("q", k=10)] == ["alice"]
    assert [d.metadata["message_ids"] for d in bob.invoke("q", k=10)] == [["c1", "c2"]]
    assert bob.forget(ids=[d.id for d in alice.invoke("q", k=10)]) == 0
    assert bob.forget(session_id="s1") == 1
    assert alice.count() == 1


def test_generic_store_refuses_another_model() -> None:
    alice = make()
    alice.add_messages(chroma_session(), session_id="s1")
    with pytest.raises(EmbeddingModelMismatchError, match="other-model"):
        SessionVectorMemory(vectorstore=alice.vectorstore, user_id="alice", embedding_model_id="other-model")
