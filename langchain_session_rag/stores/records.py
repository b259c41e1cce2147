"""Building stored records: ids, reserved metadata keys, metadata encoding."""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_session_rag.errors import InvalidMetadataError
from langchain_session_rag.stores.base import REVISION_KEY, Record
from langchain_session_rag.stores.limits import (
    MAX_KEY_CHARS,
    MAX_METADATA_KEYS,
    check_depth,
    check_metadata_size,
    check_utf8,
)

RESERVED_KEYS = frozenset(
    {
        "user_id",
        "session_id",
        "timestamp",
        "timestamp_epoch",
        "message_ids",
        "source_type",
        "chunking",
        "chunk_index",
        "chunk_part",
        "token_count",
        "embedding_model",
        "source_name",
        "skipped_blocks",
        "topic_index",
        "exchange_count",
        "boundary_similarity",
        "stored_epoch",
        "note_key",
        "importance",
        "topics",
        "facts",
        "speakers",
        "segmentation",
        "boundary",
        "boundary_depth",
        "worth",
        "asks",
        "correction",
        "author",
        REVISION_KEY,
    }
)
"""Metadata keys the memory writes itself; user metadata may not use them."""

RESULT_KEYS = frozenset(
    {"score", "similarity", "lexical", "marker", "why", "superseded_by", "superseded_on", "asked_count", "last_asked",
     "folded"}
)  # fmt: skip
"""Keys added to returned documents, never stored."""


def chunk_id(user_id: str, session_id: str, kind: str, key: Sequence[str], part: int) -> str:
    """Deterministic id of a chunk: the same content key always gives the same id."""
    raw = "\x1f".join([user_id, session_id, kind, "\x1e".join(key), str(part)])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def stamp(records: Sequence[Record], *, keep: bool = False) -> None:
    """Give records a new revision (one per write): other processes' replicas see the change by it.

    With ``keep``, records that have one keep it (the memory's writer stamped them already).
    """
    revision = uuid.uuid4().hex
    for record in records:
        if not (keep and record.metadata.get(REVISION_KEY)):
            record.metadata[REVISION_KEY] = revision


MAX_SAFE_INT = 2**53
"""Integers beyond this are not kept exactly by stores that hold numbers as floats."""


def metadata_value(value: Any, key: str = "") -> str | int | float | bool:
    """A value a vector store accepts as metadata: scalars as they are, others as JSON text.

    Raises:
        InvalidMetadataError: NaN or an infinite number, an integer beyond 2**53 (not kept exactly), a value
            nested deeper than ``MAX_NESTING_DEPTH`` or that JSON cannot encode.
    """
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INT:
            msg = f"metadata {key!r} is {value}, beyond 2**53: stores keep it as a float; pass it as a string."
            raise InvalidMetadataError(msg)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"metadata {key!r} is {value!r}: not a finite number."
            raise InvalidMetadataError(msg)
        return value
    check_depth(value, key)
    try:
        return json.dumps(value, default=str, sort_keys=True)
    except (TypeError, ValueError) as exc:  # keys of mixed types cannot be sorted
        msg = f"metadata {key!r} cannot be stored as JSON ({exc}); use text keys and plain values."
        raise InvalidMetadataError(msg) from exc


def check_metadata_key(key: object) -> str:
    """A metadata key a store can filter on: a non-empty string of at most ``MAX_KEY_CHARS``, no ``$``, no result key.

    Raises:
        InvalidMetadataError: Otherwise, or a key UTF-8 cannot encode (a lone surrogate).
    """
    if not isinstance(key, str) or not key.strip() or key.startswith("$"):
        msg = f"metadata key {key!r:.80} is not allowed: use a non-empty string that does not start with '$'."
        raise InvalidMetadataError(msg)
    if len(key) > MAX_KEY_CHARS:
        msg = f"metadata key {key[:40]!r}... has {len(key):,} characters, over the limit of {MAX_KEY_CHARS}."
        raise InvalidMetadataError(msg)
    if key in RESULT_KEYS:
        msg = f"metadata key {key!r} is added to every result by the memory; rename it."
        raise InvalidMetadataError(msg)
    return check_utf8("metadata key", key)


def user_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Validate, bound and encode caller metadata (see :mod:`~langchain_session_rag.stores.limits`).

    Raises:
        InvalidMetadataError: A reserved, empty or operator key, a result key, NaN, a huge integer; more than
            ``MAX_METADATA_KEYS`` keys, a key, value or total over its size limit, nesting too deep.
    """
    if not metadata:
        return {}
    if not isinstance(metadata, dict):
        msg = f"metadata must be a dict, got {type(metadata).__name__}."
        raise InvalidMetadataError(msg)
    if len(metadata) > MAX_METADATA_KEYS:  # before encoding anything
        msg = f"metadata has {len(metadata):,} keys, over the limit of {MAX_METADATA_KEYS} (MAX_METADATA_KEYS)."
        raise InvalidMetadataError(msg)
    clash = sorted(RESERVED_KEYS & {k for k in metadata if isinstance(k, str)})
    if clash:
        msg = f"metadata keys {clash} are reserved by SessionVectorMemory; rename them."
        raise InvalidMetadataError(msg)
    encoded = {check_metadata_key(k): metadata_value(v, k) for k, v in metadata.items()}
    check_metadata_size(encoded)
    return encoded


def session_record(
    *,
    user_id: str,
    session_id: str,
    kind: str,
    text: str,
    message_ids: list[str],
    timestamp: datetime,
    token_count: int,
    model_id: str,
    part: int = 0,
    skipped_blocks: int = 0,
    extra: dict[str, Any] | None = None,
    vector: list[float] | None = None,
    stored_epoch: float | None = None,
    speakers: Sequence[str] = (),
) -> Record:
    """A session chunk (``kind`` ``"exchange"`` or ``"topic"``); ``chunk_index`` is set by the caller.

    ``speakers`` (the chunk's speaker labels) is stored as JSON text, as ``message_ids`` is, when there are any.
    """
    record = Record(
        id=chunk_id(user_id, session_id, kind, message_ids, part),
        text=text,
        metadata={
            **(extra or {}),
            "user_id": user_id,
            "session_id": session_id,
            "source_type": "session",
            "chunking": kind,
            "timestamp": timestamp.isoformat(),
            "timestamp_epoch": timestamp.timestamp(),
            "message_ids": json.dumps(message_ids),
            "chunk_index": -1,
            "chunk_part": part,
            "token_count": token_count,
            "skipped_blocks": skipped_blocks,
            "embedding_model": model_id,
            "stored_epoch": time.time() if stored_epoch is None else stored_epoch,
        },
        embedding=vector,
    )
    if speakers:
        record.metadata["speakers"] = json.dumps(list(speakers))
    return record
