r"""The text a reader sees: invisible characters dropped, look-alikes folded, with a map back to the original.

A secret can be written so that a pattern misses it and a reader (a model, a person) still reads it: a zero-width
space between its characters (which :func:`~langchain_session_rag.prompt.quoting.quote_data` drops before a
prompt, handing the model the exact key), fullwidth letters and colons (``ＡＫＩＡ…``, ``password：``),
mathematical letters, non-breaking spaces or en dashes between the groups of a card number, digits of another
script. Detection therefore runs on the *folded* text:

- the invisible characters quoting drops are dropped (:func:`invisible`: control, format, private-use and
  unassigned characters, variation selectors, invisible fillers; line breaks and tabs are kept);
- a JSON / Python ``\uXXXX`` escape is read as the character it writes (a serialised value, a cached answer:
  ``A\u200bK\u200b...`` hides a key from a scan of the JSON text, not from whoever decodes it);
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
_FOLDABLE = re.compile(r"\\u[0-9a-fA-F]{4}|[^\t-\r\x1c-\x1e -~]")
"""What folding may change: a ``\\uXXXX`` escape, every non-ASCII character and the ASCII controls quoting drops."""
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")
"""A JSON / Python escape of one character."""
_ESCAPE_LENGTH = 6
_TABLE_LIMIT = 65_536
Spans = tuple[list[int], list[int]]
"""For each folded character, the start and the end of the piece of the original text it came from."""
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


def blank(text: str) -> bool:
    """Whether ``text`` draws nothing: only whitespace and invisible characters (:func:`invisible`)."""
    return not drop_invisible(text).strip()


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    if invisible(ch):
        return ""
    if ch in _DASHES:
        return "-"
    if unicodedata.category(ch) == "Nd":
        return str(unicodedata.digit(ch))
    return unicodedata.normalize("NFKC", ch)


class _FoldTable(dict[int, str]):
    """``str.translate``'s table of folds, filled on first sight of a character (then read in C).

    ``changing`` keeps the characters whose fold is not themselves, for the pattern that finds them in a text.
    """

    def __init__(self) -> None:
        super().__init__()
        self.changing: set[str] = set()
        self._pattern: tuple[int, re.Pattern[str]] = (0, _ESCAPE)

    def __missing__(self, code: int) -> str:
        if len(self) >= _TABLE_LIMIT:  # a text of every code point: the table stays bounded
            self.clear()
        ch = chr(code)
        folded = _fold_char(ch)
        self[code] = folded
        if folded != ch:
            self.changing.add(ch)
        return folded

    def pattern(self) -> re.Pattern[str]:
        """What folding changes: an escape, or one of the changing characters seen so far."""
        size, pattern = self._pattern
        if size != len(self.changing):
            if len(self.changing) > _TABLE_LIMIT:
                return _FOLDABLE
            chars = "".join(map(re.escape, sorted(self.changing)))
            pattern = re.compile(rf"{_ESCAPE.pattern}|[{chars}]")
            self._pattern = (len(self.changing), pattern)
        return pattern


_TABLE = _FoldTable()


def fold(text: str) -> tuple[str, Spans | None]:
    """The folded text (see the module docstring) and, for each of its characters, the span of ``text`` it came from.

    The spans are ``None`` when nothing was folded (the folded text is ``text``). Characters that fold to
    themselves (most of any script) cost one C lookup each; only the others are visited in Python.
    """
    if text.isascii() and _ASCII_CONTROL.search(text) is None and "\\u" not in text:
        return text, None
    if text.translate(_TABLE) == text and "\\u" not in text:
        return text, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for match in _TABLE.pattern().finditer(text):
        start, end = match.span()
        piece = match.group()
        code = int.from_bytes(bytes.fromhex(piece[2:])) if len(piece) == _ESCAPE_LENGTH else ord(piece)
        folded = _TABLE[code]
        if folded == piece:
            continue  # a character that folds to itself (the generic pattern's)
        parts.append(text[position:start])
        starts.extend(range(position, start))
        ends.extend(range(position + 1, start + 1))
        parts.append(folded)
        starts.extend([start] * len(folded))
        ends.extend([end] * len(folded))
        position = end
    parts.append(text[position:])
    starts.extend(range(position, len(text)))
    ends.extend(range(position + 1, len(text) + 1))
    return "".join(parts), (starts, ends)


def original_span(spans: Spans | None, start: int, end: int) -> tuple[int, int]:
    """The span of the original text that the folded span ``[start, end)`` was folded from (``end > start``)."""
    if spans is None:
        return start, end
    return spans[0][start], spans[1][end - 1]
