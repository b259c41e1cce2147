"""The text a reader sees: invisible characters dropped, look-alikes folded, with a map back to the original.

A secret can be written so that a pattern misses it and a reader (a model, a person) still reads it: a zero-width
space between its characters (which :func:`~langchain_session_rag.prompt.quoting.quote_data` drops before a
prompt, handing the model the exact key), fullwidth letters and colons (``ＡＫＩＡ…``, ``password：``),
mathematical letters, non-breaking spaces or en dashes between the groups of a card number, digits of another
script. Detection therefore runs on the *folded* text:

- the invisible characters quoting drops are dropped (:func:`invisible`: control, format, private-use and
  unassigned characters, variation selectors, invisible fillers; line breaks and tabs are kept);
- each other character is replaced by its NFKC compatibility form (fullwidth ``Ａ`` → ``A``, ``：`` → ``:``,
  ``𝐀`` → ``A``, a no-break space → a space), a decimal digit of any script by its ASCII digit, and a dash
  (hyphen, en dash, minus sign...) by ``-``.

The folded text is never stored: a finding's span is mapped back to the original text, and only that span is
replaced, so text around a secret (CJK, Arabic, accents, emoji with joiners) stays exactly as written, and every
character of the secret, the invisible ones inside it included, is gone.
"""

from __future__ import annotations

import functools
import re
import unicodedata

INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})
"""Control, format (bidi, tag, zero-width), private-use, surrogate and unassigned characters."""
FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u034f\u2800\u17b4\u17b5\u180b\u180c\u180d\u180f")
"""Characters that draw nothing although their category says otherwise (Hangul fillers, blank Braille...)."""
KEPT = frozenset("\n\t\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""Line breaks and tabs: control characters that quoting keeps (it quotes each line)."""
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f]")
_FOLDABLE = re.compile(r"[^\t-\r\x1c-\x1e -~]")
"""Characters folding may change: every non-ASCII character and the ASCII controls quoting drops."""
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\ufe58\ufe63\uff0d")


def invisible(ch: str) -> bool:
    """Whether ``ch`` draws nothing and is dropped by quoting (line breaks and tabs are not)."""
    if ch in KEPT:
        return False
    return (
        unicodedata.category(ch) in INVISIBLE_CATEGORIES
        or ch in FILLERS
        or 0xFE00 <= ord(ch) <= 0xFE0F  # noqa: PLR2004 - variation selectors
        or 0xE0100 <= ord(ch) <= 0xE01EF  # noqa: PLR2004 - variation selectors supplement
    )


def drop_invisible(text: str) -> str:
    """``text`` without its invisible characters (:func:`invisible`)."""
    if text.isascii():  # the common case, in C: only ASCII control characters can be invisible
        return _ASCII_CONTROL.sub("", text)
    return "".join(ch for ch in text if not invisible(ch))


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    if invisible(ch):
        return ""
    if ch in _DASHES:
        return "-"
    if unicodedata.category(ch) == "Nd":
        return str(unicodedata.digit(ch))
    return unicodedata.normalize("NFKC", ch)


def fold(text: str) -> tuple[str, list[int] | None]:
    """The folded text (see the module docstring) and, for each of its characters, its offset in ``text``.

    The offsets are ``None`` when nothing was folded (the folded text is ``text``).
    """
    if _FOLDABLE.search(text) is None:
        return text, None
    parts: list[str] = []
    offsets: list[int] = []
    position = 0
    for match in _FOLDABLE.finditer(text):
        start = match.start()
        parts.append(text[position:start])
        offsets.extend(range(position, start))
        folded = _fold_char(match.group())
        parts.append(folded)
        offsets.extend([start] * len(folded))
        position = start + 1
    parts.append(text[position:])
    offsets.extend(range(position, len(text)))
    return "".join(parts), offsets


def original_span(offsets: list[int] | None, start: int, end: int) -> tuple[int, int]:
    """The span of the original text that the folded span ``[start, end)`` was folded from (``end > start``)."""
    if offsets is None:
        return start, end
    return offsets[start], offsets[end - 1] + 1
