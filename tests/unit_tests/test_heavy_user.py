"""Heavy users: a user past Chroma's SQL variable limit loads, and past ``max_user_chunks`` the store's index serves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.scoped import state_of
from langchain_session_rag.stores.base import Record

DIM = 4
HEAVY = 33_000
"""Past Chroma's 32,766 SQL variables of one read, and no further than that needs."""


def _memory(tmp_path: Path, user_id: str, **kwargs: object) -> SessionVectorMemory:
    return SessionVectorMemory.local(
        path=tmp_path / "store",
        user_id=user_id,
        embeddings=DeterministicFakeEmbedding(size=DIM),
        collection_name="heavy",
        shards=1,
        **kwargs,
    )


def _store(memory: SessionVectorMemory, user_id: str, n: int, *, seed: int = 0) -> None:
    """``n`` tiny note records written straight through the back end (as another process's writes would be)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).tolist()
    memory.backend.check_model(memory.model_id, DIM)
    batch = 5_000
    for start in range(0, n, batch):
        memory.backend.add(
            user_id,
            [
                Record(
                    id=f"{user_id}-{i}",
                    text=f"topic{i % 97}",  # short: Chroma indexes every text for full-text search
                    metadata={"user_id": user_id, "source_type": "note", "session_id": "", "note_key": str(i)},
                    embedding=vectors[i],
                )
                for i in range(start, min(n, start + batch))
            ],
        )


def test_a_user_past_the_sql_variable_limit_answers_the_first_query(tmp_path: Path) -> None:
    """33,000 chunks (Chroma fails one read past about 32,766 SQL variables): the first query loads and answers."""
    memory = _memory(tmp_path, "heavy")
    _store(memory, "heavy", HEAVY)
    docs = memory.invoke("topic5", k=3)
    assert len(docs) == 3
    assert {d.metadata["user_id"] for d in docs} == {"heavy"}
    replica = state_of(memory.backend).replicas.get("heavy")
    assert len(replica) == HEAVY
    assert replica._matrix.shape == (HEAVY, DIM)  # allocated once, exactly
    assert [d.id for d in memory.get_by_ids([f"heavy-{HEAVY - 1}", "heavy-0"])] == [f"heavy-{HEAVY - 1}", "heavy-0"]
    assert memory.count() == HEAVY


def test_past_max_user_chunks_the_store_index_serves_the_user(tmp_path: Path) -> None:
    """A user over the threshold gets no replica; searches, reads and writes still work, scoped to the user."""
    memory = _memory(tmp_path, "big", lexical_weight=0.0)
    _store(memory, "big", 300)
    _store(memory, "small", 50, seed=1)
    replicated = [d.id for d in memory.invoke("topic7", k=5)]  # the replica's exact search, for reference
    replicas = state_of(memory.backend).replicas
    replicas.evict("big")
    capped = memory.model_copy(update={"runtime": RuntimeSettings(max_user_chunks=100)})
    fallback = [d.id for d in capped.invoke("topic7", k=5)]
    assert fallback == replicated, "the store's index finds what the exact search found"
    assert replicas.get("big").oversize
    assert len(replicas.get("big")) == 0, "nothing of the user is held in process"
    with_lexical = capped.model_copy(update={"lexical_weight": 0.3}).invoke("topic7", k=5)
    assert {d.metadata["user_id"] for d in with_lexical} == {"big"}, "lexical degrades to dense only"
    assert [d.id for d in capped.get_by_ids(["big-3", "small-3"])] == ["big-3"]
    note = capped.add_note("the big user's new note", key="fresh")
    assert [d.page_content for d in capped.get_by_ids([note])] == ["the big user's new note"]
    assert capped.forget(ids=[note]) == 1
    assert capped.get_by_ids([note]) == []
    small = capped.for_user("small").invoke("topic7", k=5)
    assert {d.metadata["user_id"] for d in small} == {"small"}
    assert not replicas.get("small").oversize
    memory.invoke("topic7", k=5)  # the default bound (50,000) holds the big user in a replica again
    assert not replicas.get("big").oversize
    assert len(replicas.get("big")) == 300
