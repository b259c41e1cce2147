"""Bounded reads of one user's records from a Chroma collection, and the user's change token.

Chroma answers a read of many records with one SQL statement holding a variable per record, and fails past
about 32,766 (``too many SQL variables``); a read by ids that also names a ``where`` filter costs time growing
with the product of the ids and the collection (10 s for 200 ids among 40,000 records). So every read here first
lists the user's ids (an ids-only ``where`` read, cheap), then reads the records by ids alone in pages of
``PAGE`` and checks their owner in Python. Vectors come back from Chroma as one numpy array per page.

The change token: a record per user in the store's manifest collection whose value every write of the user's
records through this package replaces (after the write). A process that saw the same token earlier has seen
every change since; reading it is one lookup by id, whatever the user's size.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_session_rag.stores.base import Record, RecordPage, fingerprint

if TYPE_CHECKING:
    from chromadb import Collection

__all__ = ["PAGE", "bump_token", "read_pages", "read_token", "user_ids"]

PAGE = 1_000
"""Records per read: far under Chroma's SQL variable limit; 1,000 halves the peak memory of 5,000 at equal speed."""
TOKEN_KEY = "token"  # noqa: S105 - a metadata key, not a secret


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
        vectors = None
        if embeddings:
            raw = res.get("embeddings")
            vectors = _as_array(raw, keep)
        yield RecordPage(records, vectors)


def _as_array(raw: Any, keep: list[int]) -> Any:
    """The kept rows of Chroma's embeddings as one float32 array (no per-float Python objects)."""
    import numpy as np  # noqa: PLC0415 - chromadb needs numpy anyway; imported where used

    if raw is None or len(raw) == 0 or not keep:
        return np.zeros((0, 0), dtype=np.float32)
    if isinstance(raw, np.ndarray):
        return np.asarray(raw[keep], dtype=np.float32)
    return np.asarray([np.asarray(raw[n], dtype=np.float32) for n in keep], dtype=np.float32)


def listing(col: Collection, user_id: str) -> dict[str, str]:
    """Id → :func:`~langchain_session_rag.stores.base.fingerprint` of every record of the user."""
    ids = user_ids(col, user_id)
    return {
        record.id: fingerprint(record.metadata)
        for page in read_pages(col, user_id, ids, documents=False)
        for record in page.records
    }


def _token_id(user_id: str) -> str:
    return "rev-" + hashlib.sha256(user_id.encode()).hexdigest()[:32]


def read_token(manifest: Collection, user_id: str) -> str:
    """The user's change token ("" before the first write that kept one)."""
    got: Any = manifest.get(ids=[_token_id(user_id)], include=["metadatas"])
    metas = got["metadatas"] or []
    return str((metas[0] or {}).get(TOKEN_KEY, "")) if metas else ""


def bump_token(manifest: Collection, user_id: str) -> None:
    """Give the user's change token a new value (after a write of the user's records has landed)."""
    vector: Any = [[1.0]]
    manifest.upsert(ids=[_token_id(user_id)], metadatas=[{TOKEN_KEY: uuid.uuid4().hex}], embeddings=vector)
