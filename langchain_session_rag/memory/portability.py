"""Export and import of one user's memories as JSON Lines."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_session_rag._checks import check_session_id
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.errors import (
    EncryptionKeyError,
    FileAccessError,
    IdentityConflictError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    InvalidTimestampError,
    MessageTooLargeError,
)
from langchain_session_rag.memory.reading import iter_lines, load_json
from langchain_session_rag.memory.worth import AUTHOR_KEY, AUTHORS, MODEL_AUTHOR
from langchain_session_rag.privacy.sealing import UserCipher, is_sealed
from langchain_session_rag.stores.base import Record, decode_message_ids
from langchain_session_rag.stores.limits import (
    MAX_NAME_CHARS,
    MAX_RECORD_KEYS,
    check_metadata_size,
    check_name,
)
from langchain_session_rag.stores.records import (
    RESERVED_KEYS,
    RESULT_KEYS,
    check_metadata_key,
    chunk_id,
    metadata_value,
)

DEFAULT_MAX_CHARS = 1_000_000
"""Longest text imported when no limit is given: the default ``max_message_chars``."""

_NAMES = ("session_id", "note_key", "source_name")
"""Names stored in an exported chunk's metadata, bounded as when they are first written."""


EXPORT_FIELD = "export"


def write_jsonl(records: list[Record], path: str | os.PathLike[str], *, cipher: UserCipher | None = None) -> int:
    """Write records, one JSON object a line: ``id``, ``text``, ``metadata``, ``embedding``, ``embedding_model``.

    With ``cipher`` (an encrypted store) each line is that JSON sealed under the user's data key.
    """
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
            text = json.dumps(line, ensure_ascii=False)
            fh.write((cipher.seal(text, EXPORT_FIELD) if cipher is not None else text) + "\n")
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


def _check_time(meta: dict[str, Any], path: object, lineno: int) -> None:
    """Normalise an exported chunk's ``timestamp`` (and its epoch) in place, or refuse a bad one."""
    if "timestamp" in meta:
        try:
            stamp = parse_timestamp(meta["timestamp"], what="timestamp")
        except InvalidTimestampError as exc:
            raise InvalidTimestampError(str(_fail(path, lineno, f"bad timestamp {meta['timestamp']!r}"))) from exc
        meta["timestamp"] = stamp.isoformat()
        meta["timestamp_epoch"] = stamp.timestamp()
    elif "timestamp_epoch" in meta and not isinstance(meta["timestamp_epoch"], int | float):
        raise _fail(path, lineno, f"bad timestamp_epoch {meta['timestamp_epoch']!r}")


def _checked_metadata(raw: dict[str, Any], path: object, lineno: int) -> dict[str, Any]:
    """Type-check and bound an exported chunk's metadata (keys, values, sizes, timestamp, chunk index)."""
    if len(raw) > MAX_RECORD_KEYS:  # before encoding anything
        raise _fail(path, lineno, f"metadata has {len(raw):,} keys, over the limit of {MAX_RECORD_KEYS}")
    try:
        meta = {check_metadata_key(k): metadata_value(v, k) for k, v in raw.items() if k not in RESULT_KEYS}
        check_metadata_size({k: v for k, v in meta.items() if k not in RESERVED_KEYS})  # the caller's own keys
        for name in _NAMES:
            value = meta.get(name)
            if isinstance(value, str):
                check_name(name, value)
    except InvalidMetadataError as exc:
        raise _fail(path, lineno, str(exc)) from exc
    try:  # a note saved in no session has ""
        check_session_id(meta.get("session_id", ""), empty_ok=True)
    except InvalidArgumentError as exc:
        msg = f"{path}:{lineno}: {exc} Nothing was imported."
        raise InvalidArgumentError(msg) from exc
    _check_time(meta, path, lineno)
    if AUTHOR_KEY in meta and meta[AUTHOR_KEY] not in AUTHORS:
        raise _fail(path, lineno, f"{AUTHOR_KEY} must be one of {', '.join(AUTHORS)}, got {meta[AUTHOR_KEY]!r:.60}")
    for key in ("chunk_index", "chunk_part", "token_count"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < -1):
            raise _fail(path, lineno, f"{key} must be an integer, got {value!r}")
    return meta


def _invalid_json(path: object, lineno: int) -> Callable[[json.JSONDecodeError], InvalidMessageError]:
    """What a line that is not JSON raises."""
    return lambda exc: _fail(path, lineno, f"not valid JSON ({exc.msg})")


def _check_sizes(item: dict[str, Any], path: object, lineno: int, max_chars: int) -> None:
    """Refuse a text longer than ``max_chars`` (as ``add_messages`` refuses a message) or an overlong id."""
    if len(item["text"]) > max_chars:
        msg = (
            f"{path}:{lineno}: the text has {len(item['text']):,} characters, over the limit of {max_chars:,} "
            "(max_message_chars); nothing was imported."
        )
        raise MessageTooLargeError(msg)
    if len(item["id"]) > MAX_NAME_CHARS:
        raise _fail(path, lineno, f"the id has {len(item['id']):,} characters, over the limit of {MAX_NAME_CHARS:,}")


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


def _own_id(item: dict[str, Any], user_id: str, path: object, lineno: int, *, reassign: bool) -> str:
    """The id the record is stored under for ``user_id``: its own, or, reassigned from another user, one of theirs.

    Ids are digests of their owner and content; a reassigned record keeps none of the other user's, so it can
    never meet their records (in any shard, or after they write the same content). The same file imported twice
    gives the same ids.

    Raises:
        IdentityConflictError: A record of another user (its ``metadata["user_id"]``) without ``reassign``.
    """
    owner = item["metadata"].get("user_id", user_id)
    if owner == user_id:
        return str(item["id"])
    if not reassign:
        msg = (
            f"{path}:{lineno}: the export holds memories of user {owner!r}, not of {user_id!r}; nothing was "
            f"imported. Import it as {owner!r}, or pass reassign=True (CLI: --reassign-user) to make them "
            f"{user_id!r}'s."
        )
        raise IdentityConflictError(msg)
    return chunk_id(user_id, "", "import", [str(owner), str(item["id"])], 0)


def _lines(path: str | os.PathLike[str], max_bytes: int | None) -> list[str]:
    """The file's lines, read within the limits of :func:`~langchain_session_rag.memory.reading.iter_lines`."""
    raw = b"".join(iter_lines(path, max_bytes=max_bytes))
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        msg = f"{path}: not UTF-8 text (byte {exc.start}); nothing was imported."
        raise InvalidMessageError(msg) from exc


def _opened(raw: str, cipher: UserCipher | None, path: object, lineno: int) -> str:
    """A line of an export, decrypted when it is sealed.

    Raises:
        EncryptionKeyError: A sealed line and no key to open it (another store's export, or a forgotten user's).
    """
    if not is_sealed(raw.strip()):
        return raw
    opened = cipher.open(raw.strip(), EXPORT_FIELD) if cipher is not None else None
    if opened is None:
        msg = (
            f"{path}:{lineno} is encrypted under a data key this keyring does not hold: destroyed since (the user "
            "was forgotten, or their key renewed by `keys reencrypt`), or another store's keyring. Nothing was "
            "imported."
        )
        raise EncryptionKeyError(msg)
    return opened


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    user_id: str,
    model_id: str,
    max_chars: int | None = None,
    max_bytes: int | None = None,
    reassign: bool = False,
    cipher: UserCipher | None = None,
    trust_provenance: bool = False,
) -> list[Record]:
    """Read and validate a whole export for ``user_id``; vectors are kept only if ``model_id`` wrote them.

    Every line is checked before anything is written: JSON, UTF-8, the fields' types, unique ids, metadata
    keys and values (and their limits, see :mod:`~langchain_session_rag.stores.limits`), timestamps, chunk
    indexes, finite vectors of one dimension, the user (a record whose ``metadata["user_id"]`` names another
    user is refused unless ``reassign``: it then becomes ``user_id``'s, under an id of theirs), texts of at
    most ``max_chars`` characters (as ``add_messages`` refuses a longer message; default: the default
    ``max_message_chars``). Only a regular file is read, at most ``max_bytes`` (default 256 MiB, or the
    ``SESSION_RAG_MAX_FILE_BYTES`` environment variable), each line at most 16 MiB and nested at most 256 levels.

    Who said what (a note's author, a chunk's ``exchange_count``) is taken from the file only with
    ``trust_provenance`` (see ``SessionVectorMemory.import_jsonl``).

    Raises:
        IdentityConflictError: A record of another user, without ``reassign`` (the file is rejected whole).
        InvalidMessageError: A malformed line (the file is rejected whole).
        MessageTooLargeError: A text longer than ``max_chars`` (the file is rejected whole).
        ImportLimitError: The file or a line over a limit (an ``InvalidMessageError`` too).
        FileAccessError: The file is missing or cannot be read, or is not a regular file.
    """
    records: list[Record] = []
    seen: dict[str, int] = {}
    dimension: int | None = None
    lines = _lines(path, max_bytes)
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        item = load_json(_opened(raw, cipher, path, lineno), f"{path}:{lineno}", _invalid_json(path, lineno))
        if not _valid(item) or not item["id"].strip():
            raise _fail(path, lineno, "each line needs a non-empty string 'id', string 'text' and object 'metadata'")
        record_id = _own_id(item, user_id, path, lineno, reassign=reassign)
        if item["id"] in seen:
            raise _fail(path, lineno, f"id {item['id']!r} repeats line {seen[item['id']]}")
        seen[item["id"]] = lineno
        _check_sizes(item, path, lineno, DEFAULT_MAX_CHARS if max_chars is None else max_chars)
        meta = _checked_metadata(item["metadata"], path, lineno)
        if not trust_provenance:
            meta.pop("exchange_count", None)
            if meta.get("source_type") == "note":
                meta[AUTHOR_KEY] = MODEL_AUTHOR
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
        records.append(Record(id=record_id, text=item["text"], metadata=meta, embedding=vector))
    return records
