"""Topic segments as stored records: building them from the segmenter's output and completing a topic batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.chunking.segmenter import Segment
from langchain_session_rag.memory.chunk_index import SessionChunks, place
from langchain_session_rag.memory.ingest import Batch
from langchain_session_rag.stores.base import Record, decode_message_ids
from langchain_session_rag.stores.records import RESERVED_KEYS, chunk_id, session_record


def segment_part(segment: Segment) -> int:
    """The part number of a segment's first exchange chunk.

    Segments that cover parts of one long message (the same message ids) so get distinct ids.
    """
    return int(segment.document.metadata.get("chunk_part", 0))


def as_documents(records: Sequence[Record]) -> list[Document]:
    """Stored records as documents (``message_ids`` decoded), the segmenter's input."""
    return [
        Document(
            page_content=r.text,
            metadata={**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))},
        )
        for r in records
    ]


def vectors_of(records: Sequence[Record]) -> list[list[float]] | None:
    """The stored vectors of records, or ``None`` when the store did not return them all."""
    vectors = [r.embedding for r in records]
    if any(v is None for v in vectors):
        return None  # a store that does not return vectors: the segmenter embeds
    return [v for v in vectors if v is not None]


@dataclass(frozen=True)
class TopicRecords:
    """Turns one user's topic segments into records numbered after the session's stored chunks."""

    chunks: SessionChunks
    model_id: str

    def records(self, segments: Sequence[Segment], stored: Sequence[Record], start: int) -> list[Record]:
        """Records of segments not stored yet (numbered from ``start``) or stored with another text."""
        edited, new = place([self._record(segment) for segment in segments], stored, start)
        return edited + new

    def _record(self, segment: Segment) -> Record:
        meta = segment.document.metadata
        record = session_record(
            user_id=self.chunks.user_id,
            session_id=str(meta["session_id"]),
            kind="topic",
            text=segment.document.page_content,
            message_ids=list(meta["message_ids"]),
            timestamp=parse_timestamp(meta["timestamp"]),
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
        return record

    def finish(self, batch: Batch, segments: list[Segment], session_id: str) -> None:
        """Complete a topic-mode batch with its segments."""
        covered = {m for s in segments for m in s.document.metadata["message_ids"]}
        stored, start = self.chunks.view(session_id, covered)
        user_id = self.chunks.user_id
        all_ids = [
            chunk_id(user_id, session_id, "topic", list(s.document.metadata["message_ids"]), segment_part(s))
            for s in segments
        ]
        batch.ids = all_ids
        batch.records = self.records(segments, stored, start)
        batch.superseded = [i for i in batch.superseded if i not in set(all_ids)]
