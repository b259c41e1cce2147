"""Counting tokens as a GGUF chat model does, from the vocabulary stored in its own file.

A prompt budget counted with another tokenizer (tiktoken's ``cl100k_base``) can be far off for a small model:
SmolLM2 splits every digit and most CJK characters, so 4,000 digits are 1,339 tiktoken tokens but 4,189 of the
model's. The GGUF file holds the model's byte-level BPE (``tokenizer.ggml.tokens`` and ``.merges``) and names its
pre-tokenizer (``tokenizer.ggml.pre``); this module reads only that metadata (no tensors) and rebuilds the
tokenizer with the ``tokenizers`` library, for the pre-tokenizers it knows (``smollm``, ``gpt2``). Loaded once
per file; :func:`token_counter` returns ``None`` for a file it cannot read, and the caller keeps its own counter.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

_MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_WANTED = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.merges")
_MAX_ITEMS = 1 << 22
"""More items than any vocabulary has: a header claiming more is not read (a damaged or hostile file)."""


class _UnreadableError(Exception):
    """The file is not a GGUF file this reader understands."""


def _read(file: BinaryIO, size: int) -> bytes:
    data = file.read(size)
    if len(data) != size:
        raise _UnreadableError
    return data


def _string(file: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", _read(file, 8))
    if size > 1 << 20:
        raise _UnreadableError
    return _read(file, size).decode("utf-8", errors="replace")


def _value(file: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(file, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(file)
    if kind == _ARRAY:
        (item_kind,) = struct.unpack("<I", _read(file, 4))
        (count,) = struct.unpack("<Q", _read(file, 8))
        if count > _MAX_ITEMS:
            raise _UnreadableError
        if item_kind in _SCALARS and not keep:
            file.seek(count * struct.calcsize(_SCALARS[item_kind]), 1)
            return None
        items = [_value(file, item_kind, keep) for _ in range(count)]
        return items if keep else None
    raise _UnreadableError


def _entries(file: BinaryIO) -> int:
    """Check the header; the number of metadata entries that follow it."""
    if _read(file, 4) != _MAGIC:
        raise _UnreadableError
    version, _tensors, entries = struct.unpack("<IQQ", _read(file, 20))
    if version not in {2, 3} or entries > 1 << 16:
        raise _UnreadableError
    return int(entries)


def read_vocabulary(path: str | Path) -> dict[str, Any] | None:
    """The tokenizer metadata of a GGUF file (model, pre-tokenizer, tokens, merges); ``None`` if unreadable."""
    found: dict[str, Any] = {}
    try:
        with Path(path).open("rb") as file:
            for _ in range(_entries(file)):
                key = _string(file)
                (kind,) = struct.unpack("<I", _read(file, 4))
                value = _value(file, kind, keep=key in _WANTED)
                if key in _WANTED:
                    found[key] = value
                if len(found) == len(_WANTED):
                    break
    except (_UnreadableError, struct.error, OSError):
        return None
    return found


@functools.cache
def token_counter(path: str) -> Callable[[str], int] | None:
    """Counts a text's tokens as the GGUF model at ``path`` does; ``None`` when its tokenizer is not one known here.

    Known: byte-level BPE (``tokenizer.ggml.model == "gpt2"``) with the ``smollm`` pre-tokenizer (digits one by
    one, then GPT-2's split) or GPT-2's own (``gpt2``, ``default``).
    """
    meta = read_vocabulary(path)
    if meta is None:
        return None
    pre = meta.get("tokenizer.ggml.pre", "default")
    if meta.get("tokenizer.ggml.model") != "gpt2" or pre not in {"smollm", "gpt2", "default"}:
        return None
    from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: PLC0415 - only for a local GGUF model

    tokens, merges = meta.get("tokenizer.ggml.tokens") or [], meta.get("tokenizer.ggml.merges") or []
    vocab = {token: index for index, token in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges if " " in m]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    digits = pre_tokenizers.Digits(individual_digits=True)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([digits, split]) if pre == "smollm" else split

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count
