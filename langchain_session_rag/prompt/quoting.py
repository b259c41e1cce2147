"""Data in prompts: quoting (no tag can be opened or closed, no line unquoted) and citation markers."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime

from langchain_session_rag.privacy._folding import FILLERS, INVISIBLE_CATEGORIES, drop_invisible

_LESS = "<\uff1c\u2039\u3008\u27e8\u2329\u1438\u02c2\ufe64\u276e\u29fc\u300a\u27ea\u276c\u2770\u227a\u2989\u22d6\u2aa1"
_LESS += "\u226a\u22d8\u25c1\u2af7\u2e28"
_MORE = ">\uff1e\u203a\u3009\u27e9\u232a\u1433\u02c3\ufe65\u276f\u29fd\u300b\u27eb\u276d\u2771\u227b\u298a\u22d7\u2aa2"
_MORE += "\u226b\u22d9\u25b7\u2af8\u2e29"
_ANGLES = str.maketrans(
    dict.fromkeys(_LESS, "&lt;") | dict.fromkeys(_MORE, "&gt;") | dict.fromkeys("\u00ab\u00bb", '"')
)
"""Angle brackets and their look-alikes (a tag cannot be written with them); guillemets become plain quotes."""
_MARKER = re.compile(r"\[S: (?:\d{4}-\d{2}-\d{2}|unknown date)(?:, [a-z0-9 -]{1,60})?\]|\[D: [^\[\]]{1,120}\]")
_MAX_MARKER = 120
_UNSAFE = str.maketrans({"[": "(", "]": ")", "<": "(", ">": ")"})
_BARE = re.compile(r"[A-Za-z0-9_.:@/+=#~-]{1,128}")
"""A field shown as it is: ASCII letters, digits and a few signs, no space, no quote, no bracket."""
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
_ESCAPED_SIGNS = frozenset(_LESS + _MORE + "[]\u00ab\u00bb")
"""Characters that could open a tag or a citation marker: escaped in a quoted field."""
_MAX_FIELD = 512
_HIDDEN_CATEGORIES = INVISIBLE_CATEGORIES | {"Zl", "Zp"}
_SELECTORS = frozenset(map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]))
_SPECIAL = frozenset(_SHORT_ESCAPES) | _ESCAPED_SIGNS | FILLERS | _SELECTORS
"""Printable characters a quoted field still escapes (with every character that is not printable)."""


def quote_data(text: str) -> str:
    """Quote text that is data (a memory, a document, a note, a summary) for a prompt.

    Angle brackets and their look-alikes become ``&lt;`` / ``&gt;`` (no tag can be opened or closed), invisible
    and control characters are dropped, and every line (any Unicode line break) starts with ``"> "``.
    """
    safe = drop_invisible(text.translate(_ANGLES).replace("\r\n", "\n"))
    return "\n".join(f"> {line}" for line in safe.splitlines() or [""])


def _escaped(ch: str) -> str:
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    code = ord(ch)
    if code > 0xFFFF:  # noqa: PLR2004 - JSON writes an astral character as its surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        return f"\\u{high:04x}\\u{low:04x}"
    return f"\\u{code:04x}"


def _needs_escape(ch: str) -> bool:
    return ch in _SPECIAL or unicodedata.category(ch) in _HIDDEN_CATEGORIES


def quote_field(value: object, *, max_chars: int = _MAX_FIELD) -> str:
    r"""A short field (a session id, a title, a note key, a name, an id, a date) fit for one line of a prompt.

    A plain token (ASCII letters, digits and ``_.:@/+=#~-``, at most 128 characters) is shown as it is:
    ``s1``, ``2b54ef6a``. Anything else is a JSON string: in double quotes, with ``"`` and ``\`` escaped and every
    character that could start a line, hide, or open a tag or a citation marker written as an escape (``\n``,
    ``\u2028``, ``\u005b``). The result is one line; its only unescaped double quotes are its two ends, so no
    stored field can start a line, forge a role or a marker, or close its quotes. Past ``max_chars`` characters
    the field is cut, and the cut is said after the closing quote.
    """
    text = str(value)
    if _BARE.fullmatch(text):
        return text
    cut = len(text) - max_chars
    shown = text[:max_chars] if cut > 0 else text
    if shown.isprintable() and _SPECIAL.isdisjoint(shown):  # the common case, in C: nothing to escape
        body = shown
    else:
        body = "".join(_escaped(ch) if _needs_escape(ch) else ch for ch in shown)
    return f'"{body}"' + (f" (+{cut:,} characters)" if cut > 0 else "")


def safe_marker(value: object) -> str:
    """A citation marker fit for a prompt: one line, no angle brackets, at most 120 characters.

    A well-formed marker (``[S: 2026-02-06]``, ``[D: readme.md]``) is kept as it is; anything else (a
    ``metadata["source"]`` of a foreign retriever, a hostile file name) becomes ``[D: …]`` around its cleaned text.
    """
    text = " ".join(drop_invisible(str(value).translate(_ANGLES)).split())
    if _MARKER.fullmatch(text):
        return text
    inner = text.replace("[", "(").replace("]", ")")[:_MAX_MARKER] or "record"
    return f"[D: {inner}]"


def marker(
    source_type: str, *, timestamp: datetime | None = None, name: str | None = None, note: str | None = None
) -> str:
    """Return the citation marker of a chunk: ``[S: 2026-02-06]`` or ``[D: readme.md]``.

    A document name is folded to one line without square or angle brackets, at most 120 characters. A session
    marker may carry a short note of lower-case words, digits and hyphens (``[S: 2026-02-06, said by the
    assistant]``, ``[S: 2026-01-10, superseded on 2026-03-02]``).
    """
    if source_type == "document":
        clean = " ".join(str(name or "").split()).translate(_UNSAFE)[:120]
        return f"[D: {clean or 'document'}]"
    day = timestamp.date().isoformat() if timestamp else "unknown date"
    clean_note = re.sub(r"[^a-z0-9 -]", "", (note or "").lower())[:60].strip()
    return f"[S: {day}, {clean_note}]" if clean_note else f"[S: {day}]"
