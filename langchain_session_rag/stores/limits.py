"""Bounds on what callers may put in a store's metadata, checked before anything is written.

One record can break a Chroma collection for everyone in it: a record with about 5,460 metadata keys makes
Chroma's compaction fail (``Failed to apply logs to the metadata segment``, measured with chromadb 1.5.9 embedded
and as a server: 5,400 keys pass, 5,461 fail), and from then on no other user of that collection (a memory's
hash shard) can write, nor, after a restart, read. Deeply nested values overflow Python's recursion while being
encoded, and huge values cost every later read of the shard. So every input that reaches a store's metadata is
bounded here, far below what Chroma tolerates, and refused whole with :class:`InvalidMetadataError` (a message
naming the value and the limit) before anything is stored.

The limits are fixed, not settings: raising them would let one user break a collection shared with others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_session_rag._checks import first_surrogate
from langchain_session_rag.errors import InvalidMetadataError

MAX_METADATA_KEYS = 64
"""Most metadata keys a caller may give one write (the memory's own keys come on top)."""

MAX_RECORD_KEYS = 128
"""Most metadata keys of one stored record, the memory's own included (Chroma's compaction fails at ~5,460)."""

MAX_KEY_CHARS = 128
"""Longest metadata key, in characters."""

MAX_VALUE_BYTES = 32_768
"""Largest metadata value (32 KiB of UTF-8; a list or dict counts as its JSON text)."""

MAX_METADATA_BYTES = 65_536
"""Largest caller metadata of one write: keys and values together (64 KiB of UTF-8)."""

MAX_NESTING_DEPTH = 32
"""Deepest nesting of lists and dicts inside one metadata value."""

MAX_NAME_CHARS = 1_024
"""Longest name stored as metadata: a session id, a message id, a speaker name, a note key, a source name."""


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (lone surrogates counted as three bytes, as they would be written)."""
    return len(text.encode("utf-8", "surrogatepass"))


def check_utf8(what: str, text: str, error: type[Exception] = InvalidMetadataError) -> str:
    """Refuse text that UTF-8 cannot encode (a lone surrogate such as U+D800: valid JSON, not storable text).

    Raises:
        InvalidMetadataError: Or ``error``, naming ``what`` and the position of the first surrogate.
    """
    at = first_surrogate(text)
    if at is not None:
        msg = (
            f"{what} {_shown(text)} holds a lone surrogate (U+{ord(text[at]):04X}) at character {at}: "
            "it is not valid Unicode text and cannot be stored; fix or drop that character."
        )
        raise error(msg)
    return text


def _shown(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."  # noqa: PLR2004 - a key in a message stays short


def check_depth(value: object, key: object) -> None:
    """Refuse a value nested deeper than :data:`MAX_NESTING_DEPTH` (or holding itself), without recursion.

    Raises:
        InvalidMetadataError: Too deep (a cycle is infinitely deep).
    """
    level: list[tuple[object, int]] = [(value, 0)]
    while level:
        item, depth = level.pop()
        if not isinstance(item, Mapping | list | tuple | set | frozenset):
            continue
        if depth >= MAX_NESTING_DEPTH:
            msg = (
                f"metadata {_shown(key)} is nested more than {MAX_NESTING_DEPTH} levels deep "
                f"(MAX_NESTING_DEPTH); flatten it."
            )
            raise InvalidMetadataError(msg)
        children = item.values() if isinstance(item, Mapping) else item
        level.extend((child, depth + 1) for child in children)


def check_metadata_size(metadata: Mapping[str, Any]) -> None:
    """Refuse caller metadata (already encoded) over the key-count, key-length, value or total size limit.

    Raises:
        InvalidMetadataError: Naming the first key over a limit, its size and the limit.
    """
    if len(metadata) > MAX_METADATA_KEYS:
        msg = f"metadata has {len(metadata):,} keys, over the limit of {MAX_METADATA_KEYS} (MAX_METADATA_KEYS)."
        raise InvalidMetadataError(msg)
    total = 0
    for key, value in metadata.items():
        if len(key) > MAX_KEY_CHARS:
            msg = f"metadata key {_shown(key)} has {len(key):,} characters, over the limit of {MAX_KEY_CHARS}."
            raise InvalidMetadataError(msg)
        check_utf8("metadata key", key)
        size = utf8_size(check_utf8(f"metadata {_shown(key)}", value)) if isinstance(value, str) else 8
        if size > MAX_VALUE_BYTES:
            msg = (
                f"metadata {_shown(key)} is {size:,} bytes, over the limit of {MAX_VALUE_BYTES:,} (MAX_VALUE_BYTES); "
                "store large content as a note or document text instead."
            )
            raise InvalidMetadataError(msg)
        total += utf8_size(key) + size
    if total > MAX_METADATA_BYTES:
        msg = f"metadata totals {total:,} bytes, over the limit of {MAX_METADATA_BYTES:,} (MAX_METADATA_BYTES)."
        raise InvalidMetadataError(msg)


def check_name(what: str, value: str) -> str:
    """Refuse a name (session id, message id, note key, ...) longer than :data:`MAX_NAME_CHARS`.

    Raises:
        InvalidMetadataError: Too long.
    """
    if len(value) > MAX_NAME_CHARS:
        msg = f"{what} {value[:40]!r}... has {len(value):,} characters, over the limit of {MAX_NAME_CHARS:,}."
        raise InvalidMetadataError(msg)
    return check_utf8(what, value)


def check_record_keys(record_id: str, metadata: Mapping[str, Any]) -> None:
    """The last check before a record is written: its whole metadata's key count, keys and text values, and its id.

    Raises:
        InvalidMetadataError: Over :data:`MAX_RECORD_KEYS` keys, a key over :data:`MAX_KEY_CHARS`, an id over
            :data:`MAX_NAME_CHARS`, a key, text value or id UTF-8 cannot encode.
    """
    check_name("record id", record_id)
    if len(metadata) > MAX_RECORD_KEYS:
        msg = (
            f"record {record_id[:40]!r} has {len(metadata):,} metadata keys, over the limit of {MAX_RECORD_KEYS} "
            "(MAX_RECORD_KEYS); nothing was stored."
        )
        raise InvalidMetadataError(msg)
    long_key = next((k for k in metadata if not isinstance(k, str) or len(k) > MAX_KEY_CHARS), None)
    if long_key is not None:
        msg = f"record {record_id[:40]!r} has metadata key {_shown(long_key)}: keys are {MAX_KEY_CHARS} chars or less."
        raise InvalidMetadataError(msg)
    for key, value in metadata.items():
        check_utf8("metadata key", key)
        if isinstance(value, str):
            check_utf8(f"metadata {_shown(key)}", value)
