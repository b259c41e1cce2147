"""Bad input is a typed error naming the problem, and nothing stored is lost or changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    InvalidRequestError,
    SessionRAGError,
    UnknownOptionError,
)


@pytest.fixture
def memory(tmp_path: Path) -> SessionVectorMemory:
    mem = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16)
    )
    mem.add_messages([{"role": "user", "content": "My locker code is 1234.", "id": "u1"},
                      {"role": "assistant", "content": "Noted.", "id": "a1"}], session_id="s1")  # fmt: skip
    return mem


@pytest.mark.parametrize("query", [None, 7, b"bytes", ["a"]])
def test_a_query_that_is_not_text(memory: SessionVectorMemory, query: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="query must be a string"):
        memory.invoke(query)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"filter": "str"}, "filter must be a dict"),
        ({"filter": {"$regex": "x"}}, "operators such as"),
        ({"filter": {"topic": {"$regex": "x"}}}, "unsupported operator"),
        ({"filter": {"topic": ["a"]}}, "must be a string, number or boolean"),
        ({"score_threshold": 5}, "score_threshold"),
        ({"score_threshold": -5}, "score_threshold"),
        ({"score_threshold": float("nan")}, "score_threshold"),
        ({"session_ids": "ab"}, "session_ids must be a list"),
        ({"session_ids": [" "]}, "non-empty strings"),
        ({"exclude_session_ids": ["a\x00"]}, "non-empty strings"),
        ({"k": 0}, "k must be"),
    ],
)
def test_bad_retrieval_options(memory: SessionVectorMemory, options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidArgumentError, match=fragment):
        memory.invoke("locker", **options)
    with pytest.raises(UnknownOptionError):
        memory.invoke("locker", colour="red")


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        ({"": 1}, "not allowed"),
        ({"$and": 1}, "not allowed"),
        ({"marker": "x"}, "added to every result"),
        ({"mood": float("nan")}, "not a finite number"),
        ({"big": 2**70}, "beyond 2\\*\\*53"),
        ({"session_id": "x"}, "reserved"),
    ],
)
def test_bad_metadata_is_refused_and_nothing_is_stored(
    memory: SessionVectorMemory, metadata: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(InvalidMetadataError, match=fragment):
        memory.add_messages([{"role": "user", "content": "hello"}], session_id="s2", metadata=metadata)
    assert memory.count() == 1


def test_reserved_document_metadata_is_refused(memory: SessionVectorMemory) -> None:
    with pytest.raises(InvalidMetadataError, match="reserved"):
        memory.add_documents([Document("Guide", metadata={"source": "a.md", "user_id": "bob"})])
    assert memory.count() == 1


@pytest.mark.parametrize("session_id", ["", "   ", "a\x00b", 5])
def test_bad_session_ids(memory: SessionVectorMemory, session_id: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="session_id"):
        memory.add_messages([{"role": "user", "content": "hello"}], session_id=session_id)
    with pytest.raises(InvalidArgumentError, match="session_id"):
        memory.forget(session_id=session_id)


def test_forget_ids_must_be_a_list(memory: SessionVectorMemory) -> None:
    with pytest.raises(InvalidArgumentError, match="ids must be a list"):
        memory.forget(ids="abc")  # type: ignore[arg-type]
    assert memory.count() == 1


def _export(memory: SessionVectorMemory, path: Path) -> list[dict[str, Any]]:
    memory.export_jsonl(path)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda ls: [ls[0], ls[0]], "repeats line"),
        (lambda ls: [{**ls[0], "metadata": {**ls[0]["metadata"], "timestamp": "garbage"}}], "bad timestamp"),
        (lambda ls: [{**ls[0], "metadata": {**ls[0]["metadata"], "chunk_index": "x"}}], "chunk_index"),
        (lambda ls: [{**ls[0], "embedding": [float("nan")] * 16}], "NaN"),
        (lambda ls: [{**ls[0], "id": "x1"}, {**ls[0], "id": "x2", "embedding": [0.1] * 8}], "dimensional"),
        (lambda ls: [{**ls[0], "metadata": {**ls[0]["metadata"], "$and": 1}}], "not allowed"),
        (lambda ls: [ls[0], {"id": 3}], "non-empty string 'id'"),
        (lambda ls: [{**ls[0], "embedding": ls[0]["embedding"][:10]}], "10-dimensional vectors, but"),
    ],
)
def test_a_bad_import_is_refused_whole(tmp_path: Path, memory: SessionVectorMemory, mutate: Any, fragment: str) -> None:
    lines = _export(memory, tmp_path / "ok.jsonl")
    fresh = memory.for_user("carol")
    with pytest.raises(InvalidMessageError, match=fragment):
        fresh.import_jsonl(_write(tmp_path / "bad.jsonl", mutate(lines)), reassign=True)
    assert fresh.count() == 0
    assert fresh.invoke("locker code") == [], "no phantom record in the replica"


def test_a_non_utf8_import_is_a_typed_error(tmp_path: Path, memory: SessionVectorMemory) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"id": "x", "text": "caf\u00e9", "metadata": {}}\n'.encode("latin-1"))
    with pytest.raises(InvalidMessageError, match="not UTF-8"):
        memory.import_jsonl(bad)


def test_an_import_never_overwrites_another_users_chunk_on_any_store(tmp_path: Path) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    alice = SessionVectorMemory(vectorstore=store, user_id="alice")
    alice.add_messages([{"role": "user", "content": "Alice's passport is P-123.", "id": "u1"}], session_id="s")
    lines = _export(alice, tmp_path / "alice.jsonl")
    bob = alice.for_user("bob")
    forged = [{**line, "text": "Bob was here.", "metadata": {**line["metadata"], "user_id": "bob"}} for line in lines]
    with pytest.raises(InvalidArgumentError, match="belong to another user"):
        bob.import_jsonl(_write(tmp_path / "forged.jsonl", forged))  # alice's ids, said to be bob's
    reassigned = [{**line, "text": "Bob was here."} for line in lines]
    assert bob.import_jsonl(_write(tmp_path / "reassigned.jsonl", reassigned), reassign=True) == 1
    assert {d.id for d in bob.list_memories()}.isdisjoint(line["id"] for line in lines), "ids of bob's own"
    assert [d.page_content for d in alice.invoke("passport")] == ["User: Alice's passport is P-123."]


def test_every_error_is_in_the_family() -> None:
    for error in (InvalidMessageError, InvalidMetadataError, InvalidRequestError, UnknownOptionError):
        assert issubclass(error, SessionRAGError)
    assert issubclass(InvalidMetadataError, ValueError)
    assert issubclass(UnknownOptionError, TypeError)


def _shard_neighbours() -> tuple[str, str]:
    """Two users whose chunks live in different shards of a default (32-shard) store."""
    from langchain_session_rag.stores.base import shard_of

    other = next(f"bob{n}" for n in range(100) if shard_of(f"bob{n}", 32) != shard_of("alice", 32))
    return "alice", other


def test_an_export_of_another_shards_user_never_lands_under_their_ids(tmp_path: Path) -> None:
    alice_id, bob_id = _shard_neighbours()
    bob = SessionVectorMemory.local(path=tmp_path / "m", user_id=bob_id, embeddings=DeterministicFakeEmbedding(size=16))
    bob.add_messages([{"role": "user", "content": "Bob's passport is P-987.", "id": "u1"}], session_id="s")
    lines = _export(bob, tmp_path / "bob.jsonl")
    bobs_ids = {line["id"] for line in lines}
    alice = bob.for_user(alice_id)
    # The file edited to call the chunks alice's, keeping bob's ids: bob's ids live in another shard.
    edited = [{**line, "metadata": {**line["metadata"], "user_id": alice_id}} for line in lines]
    with pytest.raises(InvalidArgumentError, match="belong to another user"):
        alice.import_jsonl(_write(tmp_path / "edited.jsonl", edited))
    assert alice.count() == 0
    # Reassigned on purpose: stored as alice's, under ids of her own.
    assert alice.import_jsonl(tmp_path / "bob.jsonl", reassign=True) == 1
    assert alice.import_jsonl(tmp_path / "bob.jsonl", reassign=True) == 0, "the same import again adds nothing"
    [mine] = alice.list_memories()
    assert mine.id not in bobs_ids
    assert mine.metadata["user_id"] == alice_id
    assert {d.id for d in bob.list_memories()} == bobs_ids
    assert [d.page_content for d in bob.invoke("passport")] == ["User: Bob's passport is P-987."]
