"""Bounded reads of one user's records from a Chroma collection.

Chroma answers a read of many records with one SQL statement holding a variable per record, and fails past
about 32,766 (``too many SQL variables``); a read by ids that also names a ``where`` filter costs time growing
with the product of the ids and the collection (10 s for 200 ids among 40,000 records). So every read here first
lists the user's ids (an ids-only ``where`` read, cheap), then reads the records by ids alone in pages of
``PAGE`` and checks their owner in Python. Vectors come back from Chroma as one numpy array per page.

"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_session_rag.stores.base import Record, RecordPage, fingerprint

if TYPE_CHECKING:
    from chromadb import Collection

PAGE = 1_000
"""Records per read: far under Chroma's SQL variable limit; 1,000 halves the peak memory of 5,000 at equal speed."""


def user_ids(col: Collection, user_id: str, where: dict[str, Any] | None = None) -> list[str]:
    """Ids of the user's records (matching the Chroma ``where`` when given): an ids-only read."""
    return list(col.get(where=where or {"user_id": user_id}, include=[])["ids"])


def read_pages(
    col: Collection, user_id: str, ids: Sequence[str], *, documents: bool = True, embeddings: bool = False
) -> Iterator[RecordPage]:
    """The user's records among ``ids``, ``PAGE`` at a time (records of other users are skipped).

    Without ``documents`` the records' texts are empty (a metadata-only read).
    """
    include: Any = ["metadatas", *(["documents"] if documents else []), *(["embeddings"] if embeddings else [])]
    for start in range(0, len(ids), PAGE):
        res: Any = col.get(ids=list(ids[start : start + PAGE]), include=include)
        metas = res["metadatas"] or []
        keep = [n for n, meta in enumerate(metas) if (meta or {}).get("user_id") == user_id]
        docs = res.get("documents") if documents else None
        records = [
            Record(id=res["ids"][n], text=(docs[n] or "") if docs is not None else "", metadata=dict(metas[n]))
            for n in keep
        ]
        yield RecordPage(records, _as_array(res.get("embeddings"), keep) if embeddings else None)


def _as_array(raw: Any, keep: list[int]) -> Any:
    """The kept rows of Chroma's embeddings (one numpy array from chromadb 1.x) as one float32 array."""
    import numpy as np  # noqa: PLC0415 - chromadb needs numpy anyway; imported where used

    if raw is None or len(raw) == 0 or not keep:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(raw[keep], dtype=np.float32)


def listing(col: Collection, user_id: str) -> dict[str, str]:
    """Id → :func:`~langchain_session_rag.stores.base.fingerprint` of every record of the user."""
    ids = user_ids(col, user_id)
    return {
        record.id: fingerprint(record.metadata)
        for page in read_pages(col, user_id, ids, documents=False)
        for record in page.records
    }


def as_records(pages: Iterator[RecordPage]) -> list[Record]:
    """Pages as a list of records, each vector as a list of floats (for callers that keep records whole)."""
    out: list[Record] = []
    for page in pages:
        if page.vectors is not None and len(page.vectors):
            for record, row in zip(page.records, page.vectors.tolist(), strict=True):
                record.embedding = row
        out.extend(page.records)
    return out


def user_counts(collections: Iterable[Collection], page: int) -> dict[str, int]:
    """Every user of the collections and how many records each has (reads every record's metadata, in pages)."""
    counts: dict[str, int] = {}
    for col in collections:
        for offset in range(0, col.count(), page):
            got = col.get(include=["metadatas"], limit=page, offset=offset)
            for meta in got["metadatas"] or []:
                user = str((meta or {}).get("user_id"))
                counts[user] = counts.get(user, 0) + 1
    return counts
