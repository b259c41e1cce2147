"""Reference documents as records: validated, split at paragraphs, named, with ids derived from name and text."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from langchain_session_rag._checks import check_session_id
from langchain_session_rag._time import parse_timestamp, utcnow
from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.errors import InvalidMessageError, InvalidMetadataError
from langchain_session_rag.memory.annotate import decode_topics
from langchain_session_rag.prompt.quoting import marker
from langchain_session_rag.stores.base import MemoryBackend, Record, decode_message_ids
from langchain_session_rag.stores.limits import check_name, check_utf8
from langchain_session_rag.stores.records import RESERVED_KEYS, session_record, user_metadata


def document_records(
    documents: Sequence[Document],
    session_id: str,
    *,
    backend: MemoryBackend,
    user_id: str,
    model_id: str,
    chunker: ExchangeChunker,
) -> tuple[list[str], list[Record]]:
    """Validate reference documents and build the records not stored yet; return every chunk's id and them."""
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
        for part, piece in enumerate(chunker.split_text(doc.page_content)):
            record = session_record(
                user_id=user_id,
                session_id=session_id,
                kind="document",
                text=piece,
                message_ids=[str(raw_name), digest],
                timestamp=ts,
                token_count=chunker.count(piece),
                model_id=model_id,
                part=part,
                extra=extra,
            )
            record.metadata.update(
                {"source_type": "document", "source_name": name, "message_ids": "[]", "chunk_index": part}
            )
            records.append(record)
    ids = [r.id for r in records]
    stored = backend.existing_ids(user_id, ids)
    return ids, [r for r in records if r.id not in stored]


def stored_document(record: Record, *, with_marker: bool = False) -> Document:
    """A stored record as a document: ``message_ids`` and ``topics`` decoded, and its ``marker`` when asked."""
    meta = record.metadata
    extra: dict[str, Any] = {
        "message_ids": decode_message_ids(meta.get("message_ids")),
        "topics": decode_topics(meta.get("topics")),
    }
    if "speakers" in meta:
        extra["speakers"] = decode_message_ids(meta["speakers"])
    if with_marker:
        ts = parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else None
        extra["marker"] = marker(str(meta.get("source_type", "session")), timestamp=ts, name=meta.get("source_name"))
    return Document(page_content=record.text, metadata={**meta, **extra}, id=record.id)


def marker_of(meta: dict[str, Any]) -> str:
    """A retrieved chunk's marker with what the recall policy found: the assistant's claim, superseded, asked again."""
    ts = parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else None
    notes = {"claim": "said by the assistant", "question": "unanswered question"}
    note = notes.get(str(meta.get("worth")), "")
    if meta.get("superseded_on"):
        note = f"superseded on {meta['superseded_on']}"
    elif meta.get("asked_count"):
        note = f"asked {meta['asked_count']} times without an answer" if meta.get("worth") == "question" else note
    return marker(str(meta.get("source_type", "session")), timestamp=ts, name=meta.get("source_name"), note=note)
