"""Bounds on what reaches a store, tested as the attacks of issue 26 (finding 1, and two of finding 12).

One ``add_messages`` with 5,500 metadata keys broke Chroma's compaction for the whole shard (1 in 32 users): the
others could no longer write, and after a restart no longer read. Every entry path now refuses over-limit input
with a typed error before anything is written, and the bounded maximum itself is stored and read back intact.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionMemoryStore, SessionVectorMemory, import_conversations
from langchain_session_rag._checks import MAX_SESSION_ID_CHARS
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    MessageTooLargeError,
    SessionRAGError,
)
from langchain_session_rag.stores import limits
from langchain_session_rag.stores.base import shard_of

CHAT = [{"role": "user", "id": "q1", "content": "I keep my bike in the shed."}, {"role": "assistant", "content": "OK."}]


def neighbour_of(user: str, shards: int = 32) -> str:
    """A user whose chunks live in the same hash shard as ``user``'s."""
    return next(f"user{i}" for i in range(10_000) if shard_of(f"user{i}", shards) == shard_of(user, shards))


def max_metadata() -> dict[str, Any]:
    """Caller metadata exactly at every limit: key count, key length, one value at the value limit, total, depth."""
    nested: Any = []
    for _ in range(limits.MAX_NESTING_DEPTH - 1):  # MAX_NESTING_DEPTH levels of lists in all
        nested = [nested]
    meta: dict[str, Any] = {f"{i:03d}".ljust(limits.MAX_KEY_CHARS, "k"): i for i in range(limits.MAX_METADATA_KEYS)}
    keys = list(meta)
    meta[keys[0]] = "v" * limits.MAX_VALUE_BYTES
    meta[keys[1]] = nested
    used = sum(len(k.encode()) for k in meta) + limits.MAX_VALUE_BYTES + len(json.dumps(nested)) + 8 * (len(meta) - 3)
    meta[keys[2]] = "é" * ((limits.MAX_METADATA_BYTES - used) // 2)  # two bytes each in UTF-8
    total = used + len(meta[keys[2]].encode())
    assert total == limits.MAX_METADATA_BYTES, total
    return meta


def too_deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


ATTACKS: dict[str, dict[str, Any]] = {
    "5,500 keys (broke Chroma's compaction)": {f"k{i}": i for i in range(5_500)},
    "one key over the count": {f"k{i}": i for i in range(limits.MAX_METADATA_KEYS + 1)},
    "a 20 MB value": {"blob": "x" * 20_000_000},
    "a value one byte over": {"blob": "x" * (limits.MAX_VALUE_BYTES + 1)},
    "a total over the limit": {f"b{i}": "x" * limits.MAX_VALUE_BYTES for i in range(3)},
    "a key over the length": {"k" * (limits.MAX_KEY_CHARS + 1): 1},
    "2,000-deep nesting": {"deep": too_deep(2_000)},
    "one level too deep": {"deep": too_deep(limits.MAX_NESTING_DEPTH + 1)},
}


@pytest.fixture
def memory(tmp_path: Path) -> SessionVectorMemory:
    return SessionVectorMemory.local(
        path=tmp_path / "store", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)
    )


def snapshot(memory: SessionVectorMemory) -> list[tuple[str | None, str, str]]:
    docs = memory.list_memories(limit=1000)
    return sorted((d.id, d.page_content, json.dumps(d.metadata, sort_keys=True, default=str)) for d in docs)


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_over_limit_metadata_is_refused_on_every_write_path_and_nothing_changes(
    memory: SessionVectorMemory, attack: str
) -> None:
    meta = ATTACKS[attack]
    memory.add_messages(CHAT, session_id="before")
    memory.add_note("Alice likes tea.", key="tea")
    before = snapshot(memory)
    writes: dict[str, Callable[[], object]] = {
        "add_messages": lambda: memory.add_messages(CHAT, session_id="s", metadata=meta),
        "add_note": lambda: memory.add_note("a note", key="n", metadata=meta),
        "add_documents": lambda: memory.add_documents([Document("doc text", metadata={"name": "d.md", **meta})]),
    }
    for name, write in writes.items():
        with pytest.raises(InvalidMetadataError, match=r"limit|deep|keys") as caught:
            write()
        assert "MAX_" in str(caught.value) or "limit" in str(caught.value), (name, caught.value)
    memory.flush()
    assert snapshot(memory) == before


def test_the_async_path_refuses_too(memory: SessionVectorMemory) -> None:
    import asyncio

    with pytest.raises(InvalidMetadataError, match="MAX_METADATA_KEYS"):
        asyncio.run(
            memory.aadd_messages(CHAT, session_id="s", metadata=ATTACKS["5,500 keys (broke Chroma's compaction)"])
        )
    assert memory.count() == 0


def test_the_bounded_maximum_is_stored_and_read_back_intact(memory: SessionVectorMemory) -> None:
    meta = max_metadata()
    memory.add_messages(CHAT, session_id="s" * MAX_SESSION_ID_CHARS, metadata=meta)
    memory.add_note("a note at the limits", key="n" * limits.MAX_NAME_CHARS, metadata=meta)
    memory.flush()
    docs = memory.list_memories(limit=10)
    assert len(docs) == 2
    for doc in docs:
        for key, value in meta.items():
            stored = doc.metadata[key]
            assert (json.loads(stored) if isinstance(value, list) else stored) == value


@pytest.mark.parametrize(
    ("what", "call"),
    [
        ("session id", lambda m: m.add_messages(CHAT, session_id="s" * (MAX_SESSION_ID_CHARS + 1))),
        (
            "message id",
            lambda m: m.add_messages([{"role": "user", "id": "i" * 5_000, "content": "hi"}], session_id="s"),
        ),
        (
            "speaker name",
            lambda m: m.add_messages([{"role": "user", "name": "n" * 5_000, "content": "hi"}], session_id="s"),
        ),
        ("note key", lambda m: m.add_note("text", key="k" * (limits.MAX_NAME_CHARS + 1))),
        ("note session", lambda m: m.add_note("text", session_id="s" * (MAX_SESSION_ID_CHARS + 1))),
        ("note text", lambda m: m.add_note("x" * 1_000_001)),
        ("document name", lambda m: m.add_documents([Document("text", metadata={"name": "d" * 5_000})])),
        ("document session", lambda m: m.add_documents([Document("text")], session_id="s" * 5_000)),
        (
            "deep tool call",
            lambda m: m.add_messages(
                [{"role": "assistant", "content": None, "tool_calls": [{"name": "f", "args": too_deep(2_000)}]}],
                session_id="s",
            ),
        ),
    ],
)
def test_names_ids_and_texts_that_reach_metadata_are_bounded(
    memory: SessionVectorMemory, what: str, call: Callable[[SessionVectorMemory], object]
) -> None:
    memory.add_note("Alice likes tea.", key="tea")
    before = snapshot(memory)
    with pytest.raises(SessionRAGError, match=r"limit|characters|JSON") as caught:
        call(memory)
    assert isinstance(
        caught.value, InvalidMetadataError | InvalidMessageError | MessageTooLargeError | InvalidArgumentError
    ), what
    assert snapshot(memory) == before


def test_a_store_item_too_large_for_metadata_is_refused(memory: SessionVectorMemory) -> None:
    store = SessionMemoryStore(memory)
    store.put(("memories", "alice"), "diet", {"content": "vegetarian"})
    before = snapshot(memory)
    with pytest.raises(InvalidMetadataError, match="store_value"):
        store.put(("memories", "alice"), "blob", {"content": "x", "padding": "y" * 20_000_000})
    with pytest.raises(InvalidMetadataError, match="deep"):
        store.put(("memories", "alice"), "deep", {"content": "x", "tree": too_deep(2_000)})
    assert snapshot(memory) == before
    item = store.get(("memories", "alice"), "diet")
    assert item is not None
    assert item.value == {"content": "vegetarian"}


def export_line(metadata: dict[str, Any], text: str = "hello", rid: str = "r1") -> str:
    return json.dumps({"id": rid, "text": text, "metadata": {"session_id": "s", "source_type": "session", **metadata}})


@pytest.mark.parametrize(
    "line",
    [
        export_line({f"k{i}": i for i in range(5_500)}),
        export_line({"blob": "x" * 20_000_000}),
        export_line({"deep": too_deep(100)}),
        export_line({"deep": "DEEP"}).replace('"DEEP"', '{"d": ' * 100_000 + "1" + "}" * 100_000),
        export_line({}, text="x" * 5_000_000),  # finding 12: a 5 MB import line was stored as one chunk
        export_line({}, rid="r" * 5_000),
        export_line({"note_key": "k" * 5_000}),
    ],
    ids=["5500-keys", "20MB-value", "100-deep", "100000-deep", "5MB-text", "long-id", "long-note-key"],
)
def test_import_jsonl_refuses_over_limit_lines_whole(memory: SessionVectorMemory, tmp_path: Path, line: str) -> None:
    memory.add_note("Alice likes tea.", key="tea")
    before = snapshot(memory)
    path = tmp_path / "export.jsonl"
    path.write_text(export_line({}, rid="ok") + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InvalidMessageError, match=r":2: .*(limit|deep)"):
        memory.import_jsonl(path)
    assert snapshot(memory) == before


def test_import_jsonl_applies_the_memory_s_own_message_limit(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "store", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8), max_message_chars=100
    )
    path = tmp_path / "export.jsonl"
    path.write_text(export_line({}, text="x" * 101) + "\n", encoding="utf-8")
    with pytest.raises(MessageTooLargeError, match="max_message_chars"):
        memory.import_jsonl(path)
    path.write_text(export_line({}, text="x" * 100) + "\n", encoding="utf-8")
    assert memory.import_jsonl(path) == 1


def test_imported_conversations_are_bounded_like_add_messages(memory: SessionVectorMemory, tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    good = {"id": "ok", "messages": CHAT}
    huge = {"id": "huge", "messages": [{"role": "user", "content": "x" * 5_000_000}]}
    long_id = {"id": "s" * 5_000, "messages": CHAT}
    path.write_text("\n".join(json.dumps(c) for c in (good, huge, long_id)) + "\n", encoding="utf-8")
    report = import_conversations(memory, path)
    renamed = report.renamed_sessions["s" * 5_000]  # an over-long id is stored under a bounded one, and reported
    assert len(renamed) <= MAX_SESSION_ID_CHARS
    assert report.new_sessions == ["ok", renamed]
    reasons = " | ".join(s.reason for s in report.skipped)
    assert "max_message_chars" in reasons
    assert max(len(d.page_content) for d in memory.list_memories(limit=100)) < 10_000


SHARD_CHILD = """
import json, sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import InvalidMetadataError
path, bob = sys.argv[1:3]
m = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
m.for_user(bob).add_messages([{"role": "user", "content": "bob before the attack"}], session_id="b1")
out = {"count": m.for_user(bob).count()}
try:
    m.add_messages([{"role": "user", "content": "attack"}], session_id="x", metadata={f"k{i}": i for i in range(5500)})
    out["refused"] = None
except InvalidMetadataError as exc:
    out["refused"] = type(exc).__name__
m.flush()
print(json.dumps(out))
"""
"""Bob writes, then alice's attack is refused, in one process; the test process is the restart."""


def test_an_attack_leaves_the_other_users_of_its_shard_able_to_write_and_read_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "store"
    bob = neighbour_of("alice")
    done = subprocess.run([sys.executable, "-c", SHARD_CHILD, str(path), bob], check=False, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"count": 1, "refused": "InvalidMetadataError"}
    after = SessionVectorMemory.local(path=path, user_id=bob, embeddings=DeterministicFakeEmbedding(size=8))
    after.add_messages([{"role": "user", "content": "bob after the attack"}], session_id="b2")
    assert after.count() == 2
    assert "User: bob after the attack" in [d.page_content for d in after.invoke("bob after the attack", k=5)]
    assert after.compact() == 2


def test_a_refused_write_leaves_the_neighbour_writable_in_process(memory: SessionVectorMemory) -> None:
    bob = memory.for_user(neighbour_of("alice"))
    with pytest.raises(InvalidMetadataError):
        memory.add_messages(CHAT, session_id="s", metadata=ATTACKS["5,500 keys (broke Chroma's compaction)"])
    bob.add_messages(CHAT, session_id="b")
    bob.flush()
    assert bob.count() == 1
    assert memory.count() == 0


@pytest.mark.parametrize("value", ["x", None, True, float("nan"), -1.0])
def test_recency_options_of_the_wrong_type_raise_the_typed_error(memory: SessionVectorMemory, value: object) -> None:
    memory.add_messages(CHAT, session_id="s")
    for option in ("half_life_days", "recency_weight"):
        if value is None and option == "half_life_days":
            continue  # None switches decay off
        with pytest.raises(InvalidArgumentError, match=f"{option} must be .*{value!r}"):
            memory.invoke("bike", **{option: value})
