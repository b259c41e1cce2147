"""Export and import of one user's memories as JSON Lines."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.errors import (
    FileAccessError,
    IdentityConflictError,
    InvalidMessageError,
    InvalidMetadataError,
    InvalidTimestampError,
)
from langchain_session_rag.stores.base import Record, decode_message_ids
from langchain_session_rag.stores.records import RESULT_KEYS, check_metadata_key, metadata_value

__all__ = ["read_jsonl", "write_jsonl"]


def write_jsonl(records: list[Record], path: str | os.PathLike[str]) -> int:
    """Write records, one JSON object a line: ``id``, ``text``, ``metadata``, ``embedding``, ``embedding_model``."""
    ordered = sorted(
        records,
        key=lambda r: (str(r.metadata.get("session_id")), float(r.metadata.get("timestamp_epoch", 0)), r.id),
    )
    try:
        out = Path(path).open("w", encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        msg = f"Cannot write {str(path)!r}: {exc.strerror or exc}."
        raise FileAccessError(msg) from exc
    with out as fh:
        for r in ordered:
            meta = {**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))}
            line = {
                "id": r.id,
                "text": r.text,
                "metadata": meta,
                "embedding": r.embedding,
                "embedding_model": meta.get("embedding_model"),
            }
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(ordered)


def _valid(item: object) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("id"), str)
        and isinstance(item.get("text"), str)
        and isinstance(item.get("metadata"), dict)
    )


def _fail(path: object, lineno: int, problem: str) -> InvalidMessageError:
    return InvalidMessageError(f"{path}:{lineno}: {problem}; nothing was imported.")


def _checked_metadata(raw: dict[str, Any], path: object, lineno: int) -> dict[str, Any]:
    """Type-check an exported chunk's metadata (keys, values, timestamp, chunk index)."""
    try:
        meta = {check_metadata_key(k): metadata_value(v, k) for k, v in raw.items() if k not in RESULT_KEYS}
    except InvalidMetadataError as exc:
        raise _fail(path, lineno, str(exc)) from exc
    if "timestamp" in meta:
        try:
            stamp = parse_timestamp(meta["timestamp"], what="timestamp")
        except InvalidTimestampError as exc:
            raise _fail(path, lineno, f"bad timestamp {meta['timestamp']!r}") from exc
        meta["timestamp"] = stamp.isoformat()
        meta["timestamp_epoch"] = stamp.timestamp()
    elif "timestamp_epoch" in meta and not isinstance(meta["timestamp_epoch"], int | float):
        raise _fail(path, lineno, f"bad timestamp_epoch {meta['timestamp_epoch']!r}")
    for key in ("chunk_index", "chunk_part", "token_count"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < -1):
            raise _fail(path, lineno, f"{key} must be an integer, got {value!r}")
    return meta


def _checked_vector(raw: object, path: object, lineno: int) -> list[float]:
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw)
    ):
        raise _fail(path, lineno, "'embedding' must be a non-empty list of numbers")
    vector = [float(x) for x in raw]
    if not all(math.isfinite(x) for x in vector):
        raise _fail(path, lineno, "'embedding' holds NaN or an infinite number")
    return vector


def _check_owner(meta: dict[str, Any], user_id: str, path: object, lineno: int, *, reassign: bool) -> None:
    """Refuse a record of another user (its ``metadata["user_id"]``) unless it is being reassigned."""
    owner = meta.get("user_id", user_id)
    if owner != user_id and not reassign:
        msg = (
            f"{path}:{lineno}: the export holds memories of user {owner!r}, not of {user_id!r}; nothing was "
            f"imported. Import it as {owner!r}, or pass reassign=True (CLI: --reassign-user) to make them "
            f"{user_id!r}'s."
        )
        raise IdentityConflictError(msg)


def read_jsonl(path: str | os.PathLike[str], *, user_id: str, model_id: str, reassign: bool = False) -> list[Record]:
    """Read and validate a whole export for ``user_id``; vectors are kept only if ``model_id`` wrote them.

    Every line is checked before anything is written: JSON, UTF-8, the fields' types, unique ids, metadata
    keys and values, timestamps, chunk indexes, finite vectors of one dimension, and the user: a record whose
    ``metadata["user_id"]`` names another user is refused unless ``reassign`` (it then becomes ``user_id``'s).

    Raises:
        IdentityConflictError: A record of another user, without ``reassign`` (the file is rejected whole).
        InvalidMessageError: A malformed line (the file is rejected whole).
        FileAccessError: The file is missing or cannot be read.
    """
    records: list[Record] = []
    seen: dict[str, int] = {}
    dimension: int | None = None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        msg = f"Cannot read {str(path)!r}: {exc.strerror or exc}; nothing was imported."
        raise FileAccessError(msg) from exc
    except UnicodeDecodeError as exc:
        msg = f"{path}: not UTF-8 text (byte {exc.start}); nothing was imported."
        raise InvalidMessageError(msg) from exc
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(path, lineno, f"not valid JSON ({exc.msg})") from exc
        if not _valid(item) or not item["id"].strip():
            raise _fail(path, lineno, "each line needs a non-empty string 'id', string 'text' and object 'metadata'")
        _check_owner(item["metadata"], user_id, path, lineno, reassign=reassign)
        if item["id"] in seen:
            raise _fail(path, lineno, f"id {item['id']!r} repeats line {seen[item['id']]}")
        seen[item["id"]] = lineno
        meta = _checked_metadata(item["metadata"], path, lineno)
        meta["message_ids"] = json.dumps(decode_message_ids(item["metadata"].get("message_ids")))
        meta["user_id"] = user_id
        same_model = item.get("embedding_model") == model_id and item.get("embedding") is not None
        vector = _checked_vector(item["embedding"], path, lineno) if same_model else None
        if vector is not None:
            if dimension is not None and len(vector) != dimension:
                raise _fail(path, lineno, f"a {len(vector)}-dimensional vector among {dimension}-dimensional ones")
            dimension = len(vector)
        meta["embedding_model"] = model_id
        meta["stored_epoch"] = time.time()  # stored now, whatever the conversation's own time
        records.append(Record(id=item["id"], text=item["text"], metadata=meta, embedding=vector))
    return records
