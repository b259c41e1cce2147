"""Hostile text and hostile files after issue 26, tested as the attacks of its independent review.

- A lone surrogate (``"\\ud800"``: valid JSON, not storable text) in an id, a key, a value, a user id or a text
  raised raw ``UnicodeEncodeError`` / chromadb ``TypeError``, and one such conversation aborted a whole import.
- A file of millions of broken items gave a report of millions of skipped entries (3.4 GB, 400,014 CLI lines).
- An oversized store value or note was refused only after its whole text was tokenised (16 s for 20 MB).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionMemoryStore, SessionVectorMemory, import_conversations
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    MessageTooLargeError,
)
from langchain_session_rag.importers import types as import_types
from langchain_session_rag.importers.files import read_conversations
from langchain_session_rag.stores import limits
from tests.unit_tests.test_cli import run

BAD = "\ud800"
CHAT = [{"role": "user", "id": "q1", "content": "I keep my bike in the shed."}, {"role": "assistant", "content": "OK."}]


class CountingCounter:
    """A token counter that records the length of every text it is asked to count."""

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def __call__(self, text: str) -> int:
        self.lengths.append(len(text))
        return max(1, len(text) // 4)


@pytest.fixture
def counter() -> CountingCounter:
    return CountingCounter()


@pytest.fixture
def memory(tmp_path: Path, counter: CountingCounter) -> SessionVectorMemory:
    return SessionVectorMemory.local(
        path=tmp_path / "store",
        user_id="alice",
        embeddings=DeterministicFakeEmbedding(size=8),
        chunker=ExchangeChunker(token_counter=counter),
        max_message_chars=1_000,
    )


def snapshot(memory: SessionVectorMemory) -> list[tuple[str | None, str]]:
    memory.flush()
    return sorted((d.id, d.page_content) for d in memory.list_memories(limit=1000))


def _export(tmp_path: Path, record: dict[str, object]) -> Path:
    path = tmp_path / "export.jsonl"
    line = {"id": "r1", "text": "hello", "metadata": {"session_id": "s", "source_type": "session"}} | record
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def _writes(memory: SessionVectorMemory, tmp_path: Path) -> dict[str, tuple[type[Exception], Callable[[], object]]]:
    user = [{"role": "user", "id": f"m{BAD}", "content": "x"}]
    return {
        "message id": (InvalidMessageError, lambda: memory.add_messages(user, session_id="s")),
        "message text": (
            InvalidMessageError,
            lambda: memory.add_messages([{"role": "user", "content": f"x{BAD}"}], session_id="s"),
        ),
        "metadata key": (
            InvalidMetadataError,
            lambda: memory.add_messages(CHAT, session_id="s", metadata={f"k{BAD}": 1}),
        ),
        "metadata value": (
            InvalidMetadataError,
            lambda: memory.add_messages(CHAT, session_id="s", metadata={"k": BAD}),
        ),
        "document value": (InvalidMetadataError, lambda: memory.add_documents([Document("d", metadata={"k": BAD})])),
        "document key": (InvalidMetadataError, lambda: memory.add_documents([Document("d", metadata={f"k{BAD}": 1})])),
        "document text": (InvalidMessageError, lambda: memory.add_documents([Document(f"d{BAD}")])),
        "note key": (InvalidMetadataError, lambda: memory.add_note("a note", key=f"k{BAD}")),
        "note value": (InvalidMetadataError, lambda: memory.add_note("a note", metadata={"k": BAD})),
        "note text": (InvalidMessageError, lambda: memory.add_note(f"a note{BAD}")),
        "user id": (InvalidArgumentError, lambda: memory.for_user(f"u{BAD}")),
        "import_jsonl value": (
            InvalidMessageError,
            lambda: memory.import_jsonl(_export(tmp_path, {"metadata": {"session_id": "s", "k": BAD}})),
        ),
        "store key": (
            InvalidMetadataError,
            lambda: SessionMemoryStore(memory).put(("memories", "alice"), f"k{BAD}", {"t": "x"}),
        ),
    }


WRITES = [
    "message id",
    "message text",
    "metadata key",
    "metadata value",
    "document value",
    "document key",
    "document text",
    "note key",
    "note value",
    "note text",
    "user id",
    "import_jsonl value",
    "store key",
]


@pytest.mark.parametrize("name", WRITES)
def test_lone_surrogates_are_refused_with_the_typed_error_on_every_entry_path(
    memory: SessionVectorMemory, tmp_path: Path, name: str
) -> None:
    memory.add_messages(CHAT, session_id="before")
    before = snapshot(memory)
    error, write = _writes(memory, tmp_path)[name]
    with pytest.raises(error, match=r"surrogate|not valid Unicode"):
        write()
    assert snapshot(memory) == before


def test_an_import_skips_a_conversation_that_fails_validation_and_stores_the_rest(
    memory: SessionVectorMemory, tmp_path: Path
) -> None:
    path = tmp_path / "chats.jsonl"
    bad = {"id": "conv1", "messages": [{"role": "user", "id": f"m{BAD}", "content": "x"}]}
    good = {"id": "conv2", "messages": CHAT}
    path.write_text(f"{json.dumps(bad)}\n{json.dumps(good)}\n", encoding="utf-8")
    report = import_conversations(memory, path)
    assert report.new_sessions == ["conv2"]
    assert [s.item for s in report.skipped] == ["line 1"]
    assert "surrogate" in report.skipped[0].reason


def test_a_conversation_refused_at_write_time_is_skipped_not_fatal(
    memory: SessionVectorMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal validation did not foresee (here: injected at ``add_messages``) skips that conversation only."""
    path = tmp_path / "chats.jsonl"
    convs = [{"id": "conv1", "messages": CHAT}, {"id": "conv2", "messages": CHAT}]
    path.write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    real = SessionVectorMemory.add_messages

    def refuse_first(self: SessionVectorMemory, messages: object, **kw: object) -> list[str]:
        if kw.get("session_id") == "conv1":
            msg = "metadata 'k' holds a lone surrogate"
            raise InvalidMetadataError(msg)
        return real(self, messages, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(SessionVectorMemory, "add_messages", refuse_first)
    report = import_conversations(memory, path)
    assert report.new_sessions == ["conv2"]
    assert [s.reason for s in report.skipped] == ["metadata 'k' holds a lone surrogate"]


def _broken_chatgpt(path: Path, items: int) -> Path:
    path.write_text("[" + ",".join(['{"mapping":{}}'] * items) + "]", encoding="utf-8")
    return path


def test_the_skipped_report_is_bounded(memory: SessionVectorMemory, tmp_path: Path) -> None:
    path = _broken_chatgpt(tmp_path / "conversations.json", 5_000)
    batch = read_conversations(path)
    assert len(batch.skipped) == import_types.MAX_SKIPPED_KEPT
    assert batch.skipped_count == 5_000
    report = import_conversations(memory, path)
    assert len(report.skipped) == import_types.MAX_SKIPPED_KEPT
    assert report.skipped_count == 5_000
    assert report.as_dict()["skipped_count"] == 5_000
    assert len(report.as_dict()["skipped"]) == import_types.MAX_SKIPPED_KEPT


def test_the_cli_lists_a_screenful_of_skipped_items_then_the_count(tmp_path: Path) -> None:
    path = _broken_chatgpt(tmp_path / "conversations.json", 5_000)
    done = run("ingest", str(path), "--path", str(tmp_path / "store"))
    assert "Skipped (5,000)" in done.stdout
    assert "and 4,980 more skipped" in done.stdout
    assert len(done.stdout.splitlines()) < 100


def test_an_oversized_store_value_is_refused_before_its_text_is_tokenised(
    memory: SessionVectorMemory, counter: CountingCounter
) -> None:
    store = SessionMemoryStore(memory)
    with pytest.raises(InvalidMetadataError, match="MAX_VALUE_BYTES"):
        store.put(("memories", "alice"), "k", {"t": "x" * (limits.MAX_VALUE_BYTES + 1)})
    assert counter.lengths == []
    store.put(("memories", "alice"), "k", {"t": "small"})
    assert counter.lengths  # the counter is the one in use: a stored item is counted


def test_an_oversized_note_is_refused_before_its_text_is_tokenised(
    memory: SessionVectorMemory, counter: CountingCounter
) -> None:
    with pytest.raises(MessageTooLargeError, match="max_message_chars"):
        memory.add_note("x" * 1_001, key="big")
    assert counter.lengths == []
    memory.add_note("x" * 1_000, key="fits")
    assert counter.lengths == [1_000]
