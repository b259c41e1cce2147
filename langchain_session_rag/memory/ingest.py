"""Planning a session write: validate a batch, cut it into exchange records, and find what it replaces.

The pure preparation shared by the sync and async methods of
:class:`~langchain_session_rag.SessionVectorMemory` lives here; nothing is written (see
:mod:`~langchain_session_rag.memory.commit`), and topic segments are built by
:mod:`~langchain_session_rag.memory.topics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from langchain_session_rag._checks import check_session_id
from langchain_session_rag._time import utcnow
from langchain_session_rag.chunking.exchanges import Chunk, ExchangeChunker
from langchain_session_rag.chunking.messages import MessageLike, Turn, normalize_messages
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.chunk_index import SessionChunks, place
from langchain_session_rag.privacy.redaction import redact_nested, redact_secrets, refuse_secret
from langchain_session_rag.stores.base import Record, decode_message_ids
from langchain_session_rag.stores.records import session_record, user_metadata

Chunking = Literal["exchange", "topic"]


def _says(chunk_text: str, line: str) -> bool:
    """Whether a stored chunk holds exactly ``line`` (a message's ``Label: text``, or an exchange's text).

    ``line`` must sit between line boundaries: a shortened edit ("first q" → "first") is not the stored text.
    """
    return (
        chunk_text == line
        or chunk_text.startswith(line + "\n")
        or chunk_text.endswith("\n" + line)
        or f"\n{line}\n" in chunk_text
    )


def unchanged(exchanges: Sequence[Record], stored: Sequence[Record]) -> bool:
    """Whether every exchange's text is already stored (in a chunk covering its messages)."""
    for exchange in exchanges:
        ids = set(decode_message_ids(exchange.metadata.get("message_ids")))
        covering = [r.text for r in stored if ids & set(decode_message_ids(r.metadata.get("message_ids")))]
        if not any(_says(text, exchange.text) for text in covering):
            return False
    return True


def superseded(stored: Sequence[Record], covered: set[str]) -> list[str]:
    """Stored session chunks whose messages are all covered again by the new batch."""
    return [r.id for r in stored if set(decode_message_ids(r.metadata.get("message_ids"))) <= covered]


@dataclass
class Batch:
    """A prepared write: records to store (vectors possibly pending) and stored ids it replaces."""

    ids: list[str]
    records: list[Record]
    superseded: list[str]
    exchanges: list[Record]
    """Topic mode: the exchange records still to segment."""
    turns: list[Turn] = field(default_factory=list)
    """The batch's messages that are new: not stored before, or stored with another text (an edit)."""
    default_timestamp: datetime | None = None
    """The time given to messages without a timestamp."""
    edits: list[str] = field(default_factory=list)
    """Ids of the batch's messages stored before with another text (their old text leaves every tier)."""


@dataclass(frozen=True)
class SessionPlanner:
    """Plans one user's session writes against the session's stored chunks; holds no state of its own."""

    chunks: SessionChunks
    model_id: str
    chunker: ExchangeChunker
    max_message_chars: int | None = None
    """Longest message accepted (``MessageTooLargeError`` above it)."""
    redact: bool = False
    """Replace secrets in messages by ``[secret:KIND]`` before anything is chunked, embedded or stored."""

    def exchange_records(self, chunks: Sequence[Chunk], session_id: str, extra: dict[str, Any]) -> list[Record]:
        """Records of exchange chunks (``chunk_index`` still unset; ``exchange_count`` from the chunker)."""
        records = [
            session_record(
                user_id=self.chunks.user_id,
                session_id=session_id,
                kind="exchange",
                text=c.text,
                message_ids=c.message_ids,
                timestamp=c.timestamp,
                token_count=c.token_count,
                model_id=self.model_id,
                part=c.part,
                skipped_blocks=c.skipped_blocks,
                extra=extra,
                speakers=c.speakers,
            )
            for c in chunks
        ]
        for record, chunk in zip(records, chunks, strict=True):
            record.metadata["exchange_count"] = chunk.exchanges
        return records

    def prepare(
        self, messages: Sequence[MessageLike], session_id: str, metadata: dict[str, Any] | None, chunking: Chunking
    ) -> Batch:
        """Validate a batch and plan its write (nothing is written here)."""
        if self.redact and isinstance(session_id, str):  # before the fit check, whose message shows the id
            refuse_secret("session_id", session_id)  # an id is matched exactly: never redacted, refused
        check_session_id(session_id)
        if chunking not in ("exchange", "topic"):
            msg = f"chunking must be 'exchange' or 'topic', got {chunking!r}."
            raise InvalidArgumentError(msg)
        extra = user_metadata(metadata)
        if self.redact:
            extra = {k: redact_nested(v) for k, v in extra.items()}
        turns = normalize_messages(messages, session_id=session_id, max_chars=self.max_message_chars)
        if self.redact:
            turns = [dataclasses.replace(t, text=redact_secrets(t.text).text) for t in turns]
        now = utcnow()
        exchanges = self.exchange_records(self.chunker.chunk(turns, default_timestamp=now), session_id, extra)
        batch_ids = {t.id for t in turns}
        stored, start = self.chunks.view(session_id, batch_ids)
        said = {m: r.text for r in stored for m in decode_message_ids(r.metadata.get("message_ids"))}
        fresh = [t for t in turns if t.id not in said or not _says(said[t.id], t.line)]
        edits = [t.id for t in fresh if t.id in said]
        # A lone exchange cannot be segmented yet: it is stored as an exchange, for consolidate() to group.
        if chunking == "topic" and len(exchanges) > 1:
            stored_cover = {mid for r in stored for mid in decode_message_ids(r.metadata.get("message_ids"))}
            if batch_ids <= stored_cover and unchanged(exchanges, stored):  # nothing to embed or store
                ids = [r.id for r in stored if batch_ids & set(decode_message_ids(r.metadata.get("message_ids")))]
                return Batch(ids, [], [], [], turns=fresh, default_timestamp=now, edits=edits)
            replaced = superseded(stored, batch_ids)
            return Batch([], [], replaced, exchanges, turns=fresh, default_timestamp=now, edits=edits)
        edited, new = place(exchanges, stored, start)  # an edited message's chunk keeps its position
        new_ids = {r.id for r in exchanges}
        replaced = [i for i in superseded(stored, batch_ids) if i not in new_ids]
        ids = [r.id for r in exchanges]
        return Batch(ids, edited + new, replaced, [], turns=fresh, default_timestamp=now, edits=edits)
