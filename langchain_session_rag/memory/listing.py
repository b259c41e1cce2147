"""Listing a user's memories and sessions (newest first, paged), and the records of saved notes."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.documents import Document

from langchain_session_rag._checks import check_session_id
from langchain_session_rag._time import TimestampLike, parse_timestamp, utcnow
from langchain_session_rag.errors import InvalidArgumentError, InvalidMessageError, MessageTooLargeError
from langchain_session_rag.memory.documents import stored_document
from langchain_session_rag.memory.retrieval import source_condition, time_conditions
from langchain_session_rag.memory.worth import AUTHOR_KEY, AUTHORS, USER_AUTHOR, Author
from langchain_session_rag.stores.base import Record, Where, decode_message_ids
from langchain_session_rag.stores.limits import check_name, check_utf8
from langchain_session_rag.stores.records import chunk_id, user_metadata

MAX_PAGE = 1_000
"""The largest page ``list_memories`` returns."""


@dataclass(frozen=True)
class SessionInfo:
    """One stored session of a user, as ``SessionVectorMemory.list_sessions`` lists it."""

    session_id: str
    started: datetime | None
    """Timestamp of its earliest stored chunk."""
    last_active: datetime | None
    """Timestamp of its latest stored chunk."""
    chunks: int
    """Stored chunks (exchanges, topic segments, notes, document parts)."""
    messages: int
    """Distinct messages its chunks cover."""
    title: str = ""
    """The ``title`` metadata of its chunks when they have one (imported conversations do), else the first words of
    its first question (``""`` for a session of notes only)."""
    tokens: int = 0
    """Tokens its chunks hold (their ``token_count``)."""


def listing_where(
    *,
    session_id: str | None = None,
    since: TimestampLike | None = None,
    until: TimestampLike | None = None,
    source_type: str | Sequence[str] | None = None,
) -> Where:
    """Store conditions of a listing (the user is added by the store)."""
    where: Where = {}
    if session_id is not None:
        where["session_id"] = check_session_id(session_id)
    where.update(time_conditions(since, until))
    if source_type is not None:
        where["source_type"] = source_condition(source_type)
    return where


def _epoch(record: Record) -> float:
    value = record.metadata.get("timestamp_epoch")
    return float(value) if isinstance(value, int | float) else 0.0


def _newest_first(records: Iterable[Record]) -> list[Record]:
    """Newest first by timestamp, then by storage time, then by id (a stable order for paging)."""
    ordered = sorted(records, key=lambda r: r.id)
    ordered.sort(key=lambda r: float(r.metadata.get("stored_epoch") or 0.0), reverse=True)
    ordered.sort(key=lambda r: (_epoch(r), int(r.metadata.get("chunk_index") or 0)), reverse=True)
    return ordered


def _timestamp(meta: dict[str, Any]) -> datetime | None:
    return parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else None


def check_page(limit: object, offset: object) -> None:
    """A page size in 1..1000 and an offset >= 0.

    Raises:
        InvalidArgumentError: Either is out of range or not an integer.
    """
    for name, value, low, high in (("limit", limit, 1, MAX_PAGE), ("offset", offset, 0, None)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high and value > high):
            span = f"between {low} and {high}" if high else f">= {low}"
            msg = f"{name} must be an integer {span}, got {value!r} (page with offset=)."
            raise InvalidArgumentError(msg)


def memory_documents(records: Iterable[Record], *, user_id: str, limit: int, offset: int) -> list[Document]:
    """One page of a user's records as documents with their markers, newest first (a page checked by check_page)."""
    mine = [r for r in records if r.metadata.get("user_id") == user_id]  # fail closed, whatever the store did
    page = _newest_first(mine)[offset : offset + limit]
    return [stored_document(r, with_marker=True) for r in page]


TITLE_CHARS = 80
"""The longest title made from a session's first question."""
MAX_LABEL_CHARS = 40
"""A first line's text before ``": "`` at most this long is its speaker's label (``User``, ``Caroline``)."""


def first_question(chunks: Sequence[Record]) -> str:
    """The first line of a session's earliest exchange, without its speaker label, cut at :data:`TITLE_CHARS`."""
    exchanges = [r for r in chunks if r.metadata.get("chunking") == "exchange"] or [
        r for r in chunks if r.metadata.get("source_type", "session") == "session"
    ]
    if not exchanges:
        return ""
    earliest = min(exchanges, key=lambda r: (_epoch(r), int(r.metadata.get("chunk_index") or 0), r.id))
    line = next((ln for ln in earliest.text.splitlines() if ln.strip()), "")
    label, sep, rest = line.partition(": ")
    text = " ".join((rest if sep and len(label) <= MAX_LABEL_CHARS else line).split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"


def sessions_of(records: Iterable[Record], *, user_id: str) -> list[SessionInfo]:
    """The sessions a user's records belong to, most recently active first."""
    grouped: dict[str, list[Record]] = {}
    for record in records:
        session = record.metadata.get("session_id")
        if record.metadata.get("user_id") == user_id and isinstance(session, str) and session:
            grouped.setdefault(session, []).append(record)
    infos = []
    for session, chunks in grouped.items():
        stamps = sorted(t for t in (_timestamp(r.metadata) for r in chunks) if t is not None)
        messages = {m for r in chunks for m in decode_message_ids(r.metadata.get("message_ids"))}
        first, last = (stamps[0], stamps[-1]) if stamps else (None, None)
        title = next((str(r.metadata["title"]) for r in chunks if r.metadata.get("title")), "") or first_question(
            chunks
        )
        tokens = sum(int(r.metadata.get("token_count") or 0) for r in chunks)
        infos.append(SessionInfo(session, first, last, len(chunks), len(messages), title, tokens))
    infos.sort(key=lambda s: s.session_id)
    infos.sort(key=lambda s: s.last_active.timestamp() if s.last_active else 0.0, reverse=True)
    return infos


def note_id(user_id: str, key: str) -> str:
    """The id of a user's note saved under ``key``."""
    return chunk_id(user_id, "", "note", [key], 0)


def note_record(
    *,
    user_id: str,
    model_id: str,
    text: str,
    key: str | None,
    session_id: str,
    timestamp: TimestampLike | None,
    metadata: dict[str, Any] | None,
    count: Callable[[str], int],
    max_chars: int | None = None,
    author: Author = USER_AUTHOR,
) -> Record:
    """A saved note (``source_type="note"``): its id is derived from ``key`` (or its text), so saving again replaces it.

    Every check (text, length, key, metadata) runs before ``count`` (the tokenizer) sees the text: an oversized
    note is refused at once, not after tokenising megabytes.

    Raises:
        InvalidArgumentError: Empty text or an empty key, an ``author`` other than ``"user"`` / ``"model"``.
        MessageTooLargeError: Text longer than ``max_chars`` (the memory's ``max_message_chars``).
        InvalidMetadataError: Reserved or unstorable metadata, a key or session id over ``MAX_NAME_CHARS``.
    """
    if not isinstance(text, str) or not text.strip():
        msg = f"A note needs text, got {text!r:.80}."
        raise InvalidArgumentError(msg)
    if author not in AUTHORS:
        msg = f"author must be one of {', '.join(map(repr, AUTHORS))}, got {author!r:.80}."
        raise InvalidArgumentError(msg)
    if max_chars is not None and len(text) > max_chars:
        msg = f"The note has {len(text):,} characters, over the limit of {max_chars:,} (max_message_chars)."
        raise MessageTooLargeError(msg)
    if key is not None and (not isinstance(key, str) or not key.strip()):
        msg = f"key must be a non-empty string, got {key!r:.80}."
        raise InvalidArgumentError(msg)
    if key is not None:
        check_name("note key", key)
    if isinstance(session_id, str):
        check_name("session_id", session_id)
    check_utf8("The note's text", text, InvalidMessageError)
    extra = user_metadata(metadata)
    note_key = key if key is not None else "text:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    when = parse_timestamp(timestamp) if timestamp is not None else utcnow()
    return Record(
        id=note_id(user_id, note_key),
        text=text,
        metadata={
            **extra,
            "user_id": user_id,
            "session_id": session_id,
            "source_type": "note",
            "chunking": "note",
            "note_key": note_key,
            AUTHOR_KEY: author,
            "timestamp": when.isoformat(),
            "timestamp_epoch": when.timestamp(),
            "message_ids": json.dumps([]),
            "chunk_index": 0,
            "chunk_part": 0,
            "token_count": count(text),
            "skipped_blocks": 0,
            "embedding_model": model_id,
            "stored_epoch": time.time(),
        },
    )
