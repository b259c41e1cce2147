"""Writing sessions and documents: records, ids, supersession, topic segmentation, consolidation.

The pure preparation shared by the sync and async methods of
:class:`~langchain_session_rag.SessionVectorMemory` lives here; the memory only embeds and awaits.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document

from langchain_session_rag._checks import check_session_id
from langchain_session_rag._time import TimestampLike, parse_timestamp, utcnow
from langchain_session_rag.chunking.exchanges import Chunk, ExchangeChunker
from langchain_session_rag.chunking.messages import MessageLike, Turn, normalize_messages
from langchain_session_rag.chunking.segmenter import Segment, TopicSegmenter
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    UnsupportedOperationError,
)
from langchain_session_rag.memory.annotate import annotate
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.memory.writes import WriteQueue
from langchain_session_rag.stores.base import MemoryBackend, Record, decode_message_ids
from langchain_session_rag.stores.limits import check_name, check_record_keys, check_utf8
from langchain_session_rag.stores.records import RESERVED_KEYS, chunk_id, session_record, stamp, user_metadata

__all__ = ["Batch", "Chunking", "Consolidation", "SessionWriter"]

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


def segment_part(segment: Segment) -> int:
    """The part number of a segment's first exchange chunk.

    Segments that cover parts of one long message (the same message ids) so get distinct ids.
    """
    return int(segment.document.metadata.get("chunk_part", 0))


_INDEX_LOCK = threading.Lock()


@dataclass
class Consolidation:
    """What :meth:`SessionVectorMemory.consolidate` did."""

    session_id: str
    exchanges: int
    """Exchange chunks replaced."""
    segments: int
    """Topic segments now covering them."""
    texts_embedded: int
    """Texts embedded (only segments of several exchanges; exchange vectors are reused)."""


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


@dataclass
class SessionWriter:
    """Prepares and stores one user's writes; holds no state of its own."""

    backend: MemoryBackend
    user_id: str
    model_id: str
    chunker: ExchangeChunker
    segmenter: TopicSegmenter
    queue: WriteQueue
    replica: UserReplica | None = None
    """The user's in-process replica, already synced with the store (``None`` when the store has none)."""
    max_message_chars: int | None = None
    """Longest message accepted (``MessageTooLargeError`` above it)."""
    scorer: Callable[[str], float] | None = None
    """Scores a chunk's importance (default: the heuristics of :mod:`~langchain_session_rag.memory.annotate`)."""

    def stored_session(self, session_id: str, *, with_embeddings: bool = False) -> list[Record]:
        """The session chunks already stored for the user (empty for stores that cannot list)."""
        where = {"session_id": session_id, "source_type": "session"}
        try:
            return self.backend.get(self.user_id, where, with_embeddings=with_embeddings)
        except UnsupportedOperationError:
            return []

    def session_view(self, session_id: str, messages: set[str]) -> tuple[list[Record], int]:
        """The session's stored chunks sharing a message with ``messages``, and the next free ``chunk_index``.

        Served by the replica in time independent of the session's length; read from the store otherwise.
        """
        if self.replica is not None:
            return self.replica.session_view(session_id, messages)
        stored = self.stored_session(session_id)
        start = self.next_index(stored)
        touching = [r for r in stored if messages & set(decode_message_ids(r.metadata.get("message_ids")))]
        return touching, start

    def exchange_records(self, chunks: Sequence[Chunk], session_id: str, extra: dict[str, Any]) -> list[Record]:
        """Records of exchange chunks (``chunk_index`` still unset; ``exchange_count`` from the chunker)."""
        records = [
            session_record(
                user_id=self.user_id,
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

    def prepare_session(
        self, messages: Sequence[MessageLike], session_id: str, metadata: dict[str, Any] | None, chunking: Chunking
    ) -> Batch:
        """Validate a batch and plan its write (nothing is written here)."""
        check_session_id(session_id)
        if chunking not in ("exchange", "topic"):
            msg = f"chunking must be 'exchange' or 'topic', got {chunking!r}."
            raise InvalidArgumentError(msg)
        extra = user_metadata(metadata)
        turns = normalize_messages(messages, session_id=session_id, max_chars=self.max_message_chars)
        now = utcnow()
        exchanges = self.exchange_records(self.chunker.chunk(turns, default_timestamp=now), session_id, extra)
        batch_ids = {t.id for t in turns}
        stored, start = self.session_view(session_id, batch_ids)
        said = {m: r.text for r in stored for m in decode_message_ids(r.metadata.get("message_ids"))}
        fresh = [t for t in turns if t.id not in said or not _says(said[t.id], f"{t.label}: {t.text}")]
        edits = [t.id for t in fresh if t.id in said]
        # A lone exchange cannot be segmented yet: it is stored as an exchange, for consolidate() to group.
        if chunking == "topic" and len(exchanges) > 1:
            stored_cover = {mid for r in stored for mid in decode_message_ids(r.metadata.get("message_ids"))}
            if batch_ids <= stored_cover and self.unchanged(exchanges, stored):  # nothing to embed or store
                ids = [r.id for r in stored if batch_ids & set(decode_message_ids(r.metadata.get("message_ids")))]
                return Batch(ids, [], [], [], turns=fresh, default_timestamp=now, edits=edits)
            superseded = self.superseded(stored, batch_ids)
            return Batch([], [], superseded, exchanges, turns=fresh, default_timestamp=now, edits=edits)
        stored_by_id = {r.id: r for r in stored}
        new = [r for r in exchanges if r.id not in stored_by_id]
        edited = [r for r in exchanges if r.id in stored_by_id and stored_by_id[r.id].text != r.text]
        for record in edited:  # an edited message: the chunk is rewritten in place, keeping its position
            record.metadata["chunk_index"] = int(stored_by_id[record.id].metadata.get("chunk_index", 0))
        self.index(new, start)
        new_ids = {r.id for r in exchanges}
        superseded = [i for i in self.superseded(stored, batch_ids) if i not in new_ids]
        ids = [r.id for r in exchanges]
        return Batch(ids, edited + new, superseded, [], turns=fresh, default_timestamp=now, edits=edits)

    @staticmethod
    def unchanged(exchanges: Sequence[Record], stored: Sequence[Record]) -> bool:
        """Whether every exchange's text is already stored (in a chunk covering its messages)."""
        for exchange in exchanges:
            ids = set(decode_message_ids(exchange.metadata.get("message_ids")))
            covering = [r.text for r in stored if ids & set(decode_message_ids(r.metadata.get("message_ids")))]
            if not any(_says(text, exchange.text) for text in covering):
                return False
        return True

    @staticmethod
    def superseded(stored: Sequence[Record], covered: set[str]) -> list[str]:
        """Stored session chunks whose messages are all covered again by the new batch."""
        return [r.id for r in stored if set(decode_message_ids(r.metadata.get("message_ids"))) <= covered]

    @staticmethod
    def next_index(stored: Sequence[Record]) -> int:
        """The ``chunk_index`` after the highest of ``stored`` (0 for none)."""
        return 1 + max((int(r.metadata.get("chunk_index", -1)) for r in stored), default=-1)

    @staticmethod
    def index(records: Sequence[Record], start: int) -> None:
        """Number new chunks from ``start`` (after the session's stored ones)."""
        for n, record in enumerate(records):
            record.metadata["chunk_index"] = start + n

    def segment_records(self, segments: Sequence[Segment], stored: Sequence[Record], start: int) -> list[Record]:
        """Records of topic segments not stored yet (numbered after the stored ones) or stored with another text."""
        records = []
        for segment in segments:
            meta = segment.document.metadata
            first = dict(meta)
            record = session_record(
                user_id=self.user_id,
                session_id=str(meta["session_id"]),
                kind="topic",
                text=segment.document.page_content,
                message_ids=list(meta["message_ids"]),
                timestamp=parse_timestamp(first["timestamp"]),
                token_count=int(meta["token_count"]),
                model_id=self.model_id,
                part=segment_part(segment),
                stored_epoch=float(meta["stored_epoch"]) if "stored_epoch" in meta else None,
                skipped_blocks=int(meta.get("skipped_blocks", 0)),
                extra={k: v for k, v in meta.items() if k not in RESERVED_KEYS},
                vector=segment.vector,
                speakers=decode_message_ids(meta.get("speakers")),
            )
            record.metadata["topic_index"] = int(meta["topic_index"])
            record.metadata["exchange_count"] = int(meta["exchange_count"])
            if segment.boundary_similarity is not None:
                record.metadata["boundary_similarity"] = float(segment.boundary_similarity)
            for key in ("segmentation", "boundary", "boundary_depth"):
                if meta.get(key) is not None:
                    record.metadata[key] = meta[key]
            records.append(record)
        stored_by_id = {r.id: r for r in stored}
        new = [r for r in records if r.id not in stored_by_id]
        edited = [r for r in records if r.id in stored_by_id and stored_by_id[r.id].text != r.text]
        for record in edited:  # an edited message: the segment is rewritten in place, keeping its position
            record.metadata["chunk_index"] = int(stored_by_id[record.id].metadata.get("chunk_index", 0))
        self.index(new, start)
        return edited + new

    @staticmethod
    def as_documents(records: Sequence[Record]) -> list[Document]:
        """Stored records as documents (``message_ids`` decoded), the segmenter's input."""
        return [
            Document(
                page_content=r.text,
                metadata={**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))},
            )
            for r in records
        ]

    def finish_topics(self, batch: Batch, segments: list[Segment], session_id: str) -> None:
        """Complete a topic-mode batch with its segments."""
        covered = {m for s in segments for m in s.document.metadata["message_ids"]}
        stored, start = self.session_view(session_id, covered)
        records = self.segment_records(segments, stored, start)
        all_ids = [
            chunk_id(self.user_id, session_id, "topic", list(s.document.metadata["message_ids"]), segment_part(s))
            for s in segments
        ]
        batch.ids = all_ids
        batch.records = records
        batch.superseded = [i for i in batch.superseded if i not in set(all_ids)]

    def check_vectors(self, records: Sequence[Record]) -> None:
        """Refuse vectors of another dimension than the store holds."""
        vector = next((r.embedding for r in records if r.embedding is not None), None)
        if vector is not None:
            self.backend.check_model(self.model_id, len(vector))

    def store(self, records: list[Record], superseded: list[str], *, wait: bool = True) -> Future[None]:
        """Send records, then the deletion of what they replace, to the store (so a crash never loses coverage).

        The replica holds the change at once. With ``wait=False`` a failure is raised by the next write or
        ``flush()`` instead of through the returned future.
        """
        self.queue.raise_failures()
        for record in records:  # the last check before the store: one record must not break a shared shard
            check_record_keys(record.id, record.metadata)
        self.check_vectors(records)
        annotate(records, self.scorer)
        stamp(records)  # a new revision per write: other processes' replicas see edits under the same id
        if not records and not superseded:
            done: Future[None] = Future()
            done.set_result(None)
            return done
        replica = self.replica
        added = [r.id for r in records]
        on_done = None
        if replica is not None:
            with _INDEX_LOCK:  # numbering and publishing are one step: concurrent writers never share an index
                self.renumber(replica, records)
                replica.begin(added, superseded)
                replica.put(records)
                replica.drop([i for i in superseded if i not in set(added)])

            def on_done(error: BaseException | None) -> None:
                replica.settle(added, superseded)
                if error is not None:  # the store did not change as the replica did: reload from the store
                    replica.invalidate()

        return self.queue.submit(self.user_id, records, superseded, detached=not wait, on_done=on_done)

    @staticmethod
    def renumber(replica: UserReplica, records: Sequence[Record]) -> None:
        """Give the new session chunks of each session the next free ``chunk_index`` as the replica holds it now.

        A batch was numbered when it was planned; another writer of the same session may have published chunks
        since. Chunks already held (edits) keep their index.
        """
        by_session: dict[str, list[Record]] = {}
        for record in records:
            meta = record.metadata
            if meta.get("source_type") == "session" and not replica.has(record.id):
                by_session.setdefault(str(meta.get("session_id")), []).append(record)
        for session_id, new in by_session.items():
            _, start = replica.session_view(session_id, set())
            SessionWriter.index(sorted(new, key=lambda r: int(r.metadata.get("chunk_index", 0))), start)

    def pending(self, records: list[Record]) -> list[Record]:
        """Records still needing a vector (none when the store embeds itself)."""
        if self.backend.embeds_itself:
            return []
        return [r for r in records if r.embedding is None]

    def consolidation_input(self, session_id: str) -> tuple[list[Record], list[Record]]:
        """The session's stored chunks and its exchange chunks in order, with vectors."""
        stored = self.stored_session(check_session_id(session_id), with_embeddings=True)
        exchanges = sorted(
            (r for r in stored if r.metadata.get("chunking", "exchange") == "exchange"),
            key=lambda r: (int(r.metadata.get("chunk_index", 0)), float(r.metadata.get("timestamp_epoch", 0))),
        )
        return stored, exchanges

    def consolidation_output(
        self, session_id: str, stored: list[Record], exchanges: list[Record], segments: list[Segment]
    ) -> Consolidation:
        """Store the segments and delete the exchanges they replace."""
        records = self.segment_records(segments, stored, self.next_index(stored))
        keep = {r.id for r in records}
        self.store(records, [r.id for r in exchanges if r.id not in keep]).result()
        embedded = segments[0].texts_embedded if segments else 0
        return Consolidation(session_id, len(exchanges), len(segments), embedded)

    @staticmethod
    def vectors_of(records: Sequence[Record]) -> list[list[float]] | None:
        """The stored vectors of records, or ``None`` when the store did not return them all."""
        vectors = [r.embedding for r in records]
        if any(v is None for v in vectors):
            return None  # a store that does not return vectors: the segmenter embeds
        return [v for v in vectors if v is not None]

    def prepare_documents(self, documents: Sequence[Document], session_id: str) -> tuple[list[str], list[Record]]:
        """Validate reference documents and build their records (not stored yet)."""
        check_session_id(session_id, empty_ok=True)
        now = utcnow()
        records: list[Record] = []
        for n, doc in enumerate(documents):
            if not isinstance(doc, Document) or not doc.page_content.strip():
                msg = f"documents[{n}] must be a Document with text, got {doc!r:.80}."
                raise InvalidMessageError(msg)
            check_utf8(f"documents[{n}] text", doc.page_content, InvalidMessageError)
            meta = doc.metadata
            raw_name = meta.get("name") or meta.get("source") or meta.get("title") or f"document-{n}"
            check_name(f"documents[{n}] name", str(raw_name))
            name = Path(str(raw_name)).name or str(raw_name)
            ts = parse_timestamp(meta["timestamp"]) if "timestamp" in meta else now
            clash = sorted(RESERVED_KEYS & {k for k in meta if isinstance(k, str)} - {"timestamp"})
            if clash:
                msg = f"documents[{n}] metadata keys {clash} are reserved by SessionVectorMemory; rename them."
                raise InvalidMetadataError(msg)
            extra = user_metadata({k: v for k, v in meta.items() if k != "timestamp"})  # the chunk's own time
            digest = hashlib.sha256(doc.page_content.encode()).hexdigest()[:16]
            for part, piece in enumerate(self.chunker.split_text(doc.page_content)):
                record = session_record(
                    user_id=self.user_id,
                    session_id=session_id,
                    kind="document",
                    text=piece,
                    message_ids=[str(raw_name), digest],
                    timestamp=ts,
                    token_count=self.chunker.count(piece),
                    model_id=self.model_id,
                    part=part,
                    extra=extra,
                )
                record.metadata.update(
                    {"source_type": "document", "source_name": name, "message_ids": "[]", "chunk_index": part}
                )
                records.append(record)
        ids = [r.id for r in records]
        stored = self.backend.existing_ids(self.user_id, ids)
        return ids, [r for r in records if r.id not in stored]

    def forget_targets(
        self, session_id: str | None, before: TimestampLike | None, ids: Sequence[str] | None
    ) -> list[Record]:
        """The user's chunks matching every given criterion (with their metadata, without vectors)."""
        where: dict[str, Any] = {}
        if session_id is not None:
            where["session_id"] = session_id
        if before is not None:
            where["timestamp_epoch"] = {"$lt": parse_timestamp(before, what="before").timestamp()}
        if ids is not None and not where:
            return sorted(self.backend.fetch(self.user_id, list(dict.fromkeys(ids))), key=lambda r: r.id)
        wanted = set(ids) if ids is not None else None
        return [r for r in self.backend.get(self.user_id, where) if wanted is None or r.id in wanted]
