"""Consolidation: a session's exchange chunks replaced by topic segments (reusing the stored exchange vectors)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_session_rag._checks import check_session_id
from langchain_session_rag.chunking.segmenter import Segment
from langchain_session_rag.memory.chunk_index import SessionChunks, next_index
from langchain_session_rag.memory.commit import Committer
from langchain_session_rag.memory.topics import TopicRecords
from langchain_session_rag.stores.base import Record


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


def consolidation_input(chunks: SessionChunks, session_id: str) -> tuple[list[Record], list[Record]]:
    """The session's stored chunks and its exchange chunks in order, with vectors."""
    stored = chunks.stored(check_session_id(session_id), with_embeddings=True)
    exchanges = sorted(
        (r for r in stored if r.metadata.get("chunking", "exchange") == "exchange"),
        key=lambda r: (int(r.metadata.get("chunk_index", 0)), float(r.metadata.get("timestamp_epoch", 0))),
    )
    return stored, exchanges


def consolidation_output(
    topics: TopicRecords,
    commit: Committer,
    *,
    session_id: str,
    stored: list[Record],
    exchanges: list[Record],
    segments: list[Segment],
) -> Consolidation:
    """Store the segments and delete the exchanges they replace."""
    records = topics.records(segments, stored, next_index(stored))
    keep = {r.id for r in records}
    commit.store(records, [r.id for r in exchanges if r.id not in keep]).result()
    embedded = segments[0].texts_embedded if segments else 0
    return Consolidation(session_id, len(exchanges), len(segments), embedded)
