"""SessionVectorMemory on a real embedded Chroma and the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import (
    EmbeddingModelMismatchError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidTimestampError,
)
from tests.conftest import CountingEmbeddings, chroma_session, cooking_session

Factory = Callable[..., SessionVectorMemory]


def test_readme_contract(tmp_path: Path) -> None:
    m = SessionVectorMemory.local(path=tmp_path, user_id="alice")
    m.add_messages(chroma_session(), session_id="s1")
    docs = m.invoke("what was that chroma error last week?", k=3)
    assert docs[0].metadata["message_ids"] == ["u1", "a1"]
    assert docs[0].metadata["marker"] == "[S: 2026-02-06]"
    assert m.for_user("bob").invoke("chroma error", k=3) == []


def test_stored_metadata(make_memory: Factory) -> None:
    m = make_memory()
    (cid,) = m.add_messages(chroma_session(), session_id="s1")
    (doc,) = m.invoke("chroma", k=1, lexical_weight=0)
    meta = doc.metadata
    assert doc.id == cid
    assert meta["user_id"] == "alice"
    assert meta["session_id"] == "s1"
    assert meta["timestamp"] == "2026-02-06T10:00:00+00:00"
    assert meta["source_type"] == "session"
    assert meta["chunk_index"] == 0
    assert meta["token_count"] == m.chunker.count(doc.page_content)
    assert meta["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"
    assert doc.page_content.startswith("User: ChromaDB keeps throwing")
    assert 0 < meta["similarity"] <= 1
    assert meta["score"] == meta["similarity"]  # no decay by default


def test_relevant_session_ranks_first(make_memory: Factory) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    m.add_messages(cooking_session(), session_id="s2")
    assert m.invoke("bread baking time", k=1)[0].metadata["session_id"] == "s2"
    assert m.invoke("vector database lost my collection", k=1)[0].metadata["session_id"] == "s1"


def test_each_chunk_is_embedded_once_and_reingest_stores_nothing(make_memory: Factory, real_embeddings) -> None:
    counting = CountingEmbeddings(real_embeddings)
    m = make_memory(embeddings=counting)
    msgs = chroma_session() + cooking_session()
    ids = m.add_messages(msgs, session_id="s1")
    assert len(ids) == 2
    assert counting.calls == 1
    assert len(counting.texts) == 2
    again = m.add_messages(msgs, session_id="s1")
    assert again == ids
    assert counting.calls == 1, "nothing new was embedded"
    assert m.count() == 2


def test_invalid_batch_stores_nothing(make_memory: Factory) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    bad = [*cooking_session(), {"role": "user", "content": "x", "timestamp": "not a date"}]
    with pytest.raises(InvalidTimestampError):
        m.add_messages(bad, session_id="s2")
    with pytest.raises(InvalidArgumentError, match="session_id"):
        m.add_messages(cooking_session(), session_id="")
    assert m.count() == 1


def test_trailing_question_is_replaced_when_its_reply_arrives(make_memory: Factory) -> None:
    m = make_memory()
    q = {"role": "user", "id": "q", "content": "What port does the Chroma server listen on by default?"}
    m.add_messages([q], session_id="s")
    m.add_messages(
        [q, {"role": "assistant", "id": "r", "content": "Port 8000 unless you pass --port."}], session_id="s"
    )
    docs = m.invoke("chroma port", k=5)
    assert [d.metadata["message_ids"] for d in docs] == [["q", "r"]]


def test_scope_fails_closed(make_memory: Factory) -> None:
    alice = make_memory("alice")
    alice.add_messages(chroma_session(), session_id="s1")
    bob = alice.for_user("bob")
    bob.add_messages(cooking_session(), session_id="s1")
    assert {d.metadata["user_id"] for d in alice.invoke("anything", k=10)} == {"alice"}
    assert {d.metadata["user_id"] for d in bob.invoke("anything", k=10)} == {"bob"}
    alice_ids = [d.id for d in alice.invoke("chroma", k=10)]
    assert bob.forget(ids=alice_ids) == 0
    assert bob.forget(session_id="s1") == 1
    assert bob.forget_all() == 0
    assert alice.count() == 1
    with pytest.raises(ValueError, match="for_user"):
        alice.invoke("x", filter={"user_id": "bob"})
    with pytest.raises(ValueError, match="user_id"):
        alice.for_user("")


def test_a_document_keeps_the_time_it_is_given(make_memory: Factory) -> None:
    m = make_memory()
    m.add_documents([Document("Backups run at 02:30.", metadata={"name": "ops.md", "timestamp": "2025-03-14"})])
    (doc,) = m.invoke("when do backups run", k=1, source_type="document")
    assert doc.metadata["timestamp"].startswith("2025-03-14")
    assert doc.metadata["marker"] == "[D: ops.md]"
    assert [d.id for d in m.invoke("backups", k=1, until="2025-03-15", source_type="document")] == [doc.id]


def test_session_time_source_and_threshold_filters(make_memory: Factory) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    m.add_messages(cooking_session(), session_id="s2")
    m.add_documents([Document("Chroma's default port is 8000.", metadata={"source": "docs/readme.md"})])
    assert {d.metadata["session_id"] for d in m.invoke("x", k=10, session_ids=["s2"])} == {"s2"}
    assert "s1" not in {d.metadata["session_id"] for d in m.invoke("x", k=10, exclude_session_ids=["s1"])}
    assert {d.metadata["session_id"] for d in m.invoke("x", k=10, until="2026-02-10", source_type="session")} == {"s1"}
    assert {d.metadata["session_id"] for d in m.invoke("x", k=10, since="2026-02-10", source_type="session")} == {"s2"}
    (doc,) = m.invoke("chroma port", k=10, source_type="document")
    assert doc.metadata["marker"] == "[D: readme.md]"
    assert doc.metadata["message_ids"] == []
    strict = m.invoke("chroma collection not found after restart", k=10, score_threshold=0.5, source_type="session")
    assert [d.metadata["session_id"] for d in strict] == ["s1"]
    assert all(d.metadata["similarity"] >= 0.5 for d in strict)
    assert m.invoke("x", k=10, filter={"session_id": "s2"})[0].metadata["session_id"] == "s2"
    with pytest.raises(TypeError, match="Unknown retrieval option"):
        m.invoke("x", top_k=3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        m.invoke("x", k=0)


def test_recency_decay_prefers_newer_memories_and_is_off_by_default(make_memory: Factory) -> None:
    m = make_memory()
    old = [
        {"role": "user", "content": "Our staging database is PostgreSQL 14.", "timestamp": "2025-01-01T00:00:00"},
        {"role": "assistant", "content": "Noted: staging runs PostgreSQL 14."},
    ]
    new = [
        {"role": "user", "content": "Our staging database is now PostgreSQL 16.", "timestamp": "2026-06-01T00:00:00"},
        {"role": "assistant", "content": "Noted: staging now runs PostgreSQL 16."},
    ]
    m.add_messages(old, session_id="old")
    m.add_messages(new, session_id="new")
    query = "which PostgreSQL version is staging on? 14"
    plain = m.invoke(query, k=2, lexical_weight=0, recall_policy=None)
    assert plain[0].metadata["session_id"] == "old", "without decay (and without the recall policy) wording wins"
    corrected = m.invoke(query, k=2, lexical_weight=0)  # the recall policy: the newer statement supersedes
    assert [d.metadata["session_id"] for d in corrected] == ["new", "old"]
    assert corrected[1].metadata["superseded_by"] == corrected[0].id
    decayed = m.invoke(query, k=2, half_life_days=30, recency_weight=1.0, now="2026-06-02T00:00:00", lexical_weight=0,
                       recall_policy=None)  # fmt: skip
    assert decayed[0].metadata["session_id"] == "new"
    top = decayed[0].metadata
    assert top["score"] == pytest.approx(top["similarity"] * 0.5 ** (1 / 30), rel=1e-6)


def test_forget_by_session_date_and_ids(make_memory: Factory) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    (cook,) = m.add_messages(cooking_session(), session_id="s2")
    with pytest.raises(ValueError, match="forget_all"):
        m.forget()
    assert m.forget(before="2026-01-01") == 0
    assert m.forget(before="2026-02-10") == 1
    assert m.forget(ids=[cook, "missing"]) == 1
    assert m.count() == 0
    m.add_messages(chroma_session(), session_id="s1")
    assert m.forget(session_id="nope") == 0
    assert m.forget_all() == 1
    assert m.invoke("chroma") == []


def test_export_import_round_trip(make_memory: Factory, tmp_path: Path, real_embeddings) -> None:
    src = make_memory("alice")
    ids = src.add_messages(chroma_session() + cooking_session(), session_id="s1")
    path = tmp_path / "alice.jsonl"
    assert src.export_jsonl(path) == 2
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert all(isinstance(line["metadata"]["message_ids"], list) for line in lines)

    same = CountingEmbeddings(real_embeddings)
    dst = make_memory("alice", embeddings=same)
    assert dst.import_jsonl(path) == 2
    assert same.texts == ["dimension check"], "vectors of the same model are reused (one probe checks their size)"
    assert dst.import_jsonl(path) == 0, "import is idempotent"
    got = {d.id: d.metadata for d in dst.invoke("anything", k=5)}
    want = {d.id: d.metadata for d in src.invoke("anything", k=5)}
    assert sorted(got) == sorted(ids)
    for cid, meta in want.items():
        for key in ("message_ids", "session_id", "timestamp", "chunk_index", "token_count"):
            assert got[cid][key] == meta[key]

    other = CountingEmbeddings(real_embeddings, model_id="another-model")
    dst2 = make_memory("carol", embeddings=other)
    assert dst2.import_jsonl(path, reassign=True) == 2  # alice's export made carol's, on purpose
    assert len(other.texts) == 2, "another model re-embeds the texts"
    assert {d.metadata["user_id"] for d in dst2.invoke("x", k=5)} == {"carol"}


def test_import_validates_the_whole_file_first(make_memory: Factory, tmp_path: Path) -> None:
    m = make_memory()
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "fine", "metadata": {}}\n{"id": 3}\n')
    with pytest.raises(InvalidMessageError, match=":2:"):
        m.import_jsonl(path)
    assert m.count() == 0


def test_embedding_model_lock_and_reembed(tmp_path: Path, real_embeddings) -> None:
    path = tmp_path / "store"
    m = SessionVectorMemory.local(path=path, user_id="alice", embeddings=real_embeddings)
    m.add_messages(chroma_session(), session_id="s1")
    other = CountingEmbeddings(real_embeddings, model_id="my-new-model")
    with pytest.raises(EmbeddingModelMismatchError, match=r"all-MiniLM-L6-v2.*my-new-model.*reembed"):
        SessionVectorMemory.local(path=path, user_id="alice", embeddings=other)
    assert SessionVectorMemory.reembed(path, embeddings=other) == 1
    reopened = SessionVectorMemory.local(path=path, user_id="alice", embeddings=other)
    (doc,) = reopened.invoke("chroma error", k=3)
    assert doc.metadata["embedding_model"] == "my-new-model"
    assert doc.metadata["message_ids"] == ["u1", "a1"]
    with pytest.raises(EmbeddingModelMismatchError):
        SessionVectorMemory.local(path=path, user_id="alice", embeddings=real_embeddings)


def test_constructor_needs_a_store() -> None:
    with pytest.raises(ValueError, match=r"SessionVectorMemory\.local"):
        SessionVectorMemory(user_id="alice")


async def test_async_api(make_memory: Factory, tmp_path: Path) -> None:
    m = make_memory()
    ids = await m.aadd_messages(chroma_session(), session_id="s1")
    await m.aadd_documents([Document("Sourdough needs a starter.", metadata={"name": "bread.md"})])
    docs = await m.ainvoke("chroma error", k=1)
    assert docs[0].id == ids[0]
    assert await m.aexport_jsonl(tmp_path / "x.jsonl") == 2
    assert await m.aforget(ids=ids) == 1
    assert await m.aforget_all() == 1
    assert await m.aimport_jsonl(tmp_path / "x.jsonl") == 2
