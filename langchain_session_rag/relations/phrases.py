"""The text pieces the patterns work on: speaker turns, clauses, and the noun phrase before or after a verb."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from langchain_session_rag.relations.vocabulary import TECHNOLOGIES

_LABEL = re.compile(r"^([A-Za-z][\w .'-]{0,39}):\s*(.*)$")
ASSISTANTS: Final = frozenset({"assistant", "ai", "bot", "model", "system", "chatgpt", "claude", "tool"})
_SELF: Final = frozenset({"user", "human", "me", "you", "customer"})
_CLAUSE = re.compile(r"(?<=[.!?])\s+|\n+|;\s+|\s+-{1,2}\s+|\s+—\s+|:\s+(?=\S)")
WORD = re.compile(r"\.?[^\W_][\w.+#/@&'’-]*[\w+#]|[^\W_]|[,;:!?()\"\[\]<>{}]")

STOP_AFTER: Final = frozenset(
    "and or but for because since so to from with in on at by as which that who whom when where while now last "
    "next this yesterday today tomorrow instead again too also anymore already these every after before until "
    "into over under about than then if is are was were be been being has have had will would can could should "
    "it its they them there here we i you he she via through without during per across only mostly both".split()
)  # fmt: skip
"""Words that end a noun phrase read after a verb."""
STOP_BEFORE: Final = frozenset(
    "and or but so because since then that which who when where while if after before until as to from with for "
    "on at by of is are was were has have had will would can could should did does do than also".split()
)  # fmt: skip
"""Words that end a noun phrase read backwards from a verb."""
ADVERBS: Final = frozenset(
    "finally just recently also now already eventually actually officially still currently basically completely "
    "totally fully mostly originally initially really even then quickly silently apparently".split()
)  # fmt: skip
"""Words skipped between a subject and its verb ("we finally moved")."""


def turns(text: str) -> Iterator[tuple[str | None, str]]:
    """``(speaker label or None, text)`` of each turn of a chunk ("User: ...", "Caroline: ...").

    Unlabelled lines continue the turn before them (a text without labels is one turn of no speaker).
    """
    speaker: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        match = _LABEL.match(line)
        if match and len(match.group(1).split()) <= 3:  # noqa: PLR2004 - a label is a short name
            if lines:
                yield speaker, "\n".join(lines)
            speaker, lines = match.group(1).strip(), [match.group(2)]
        else:
            lines.append(line)
    if lines:
        yield speaker, "\n".join(lines)


def speaker_name(label: str | None, default: str) -> str | None:
    """Who "I" is in a turn: ``default`` for the user's labels, the label for a person, ``None`` for the assistant.

    The assistant's statements are not taken as relations.
    """
    if label is None or label.lower() in _SELF:
        return default
    if label.lower() in ASSISTANTS:
        return None
    return label


MAX_CLAUSE = 400
"""Characters of a clause the patterns read at once: a longer run without punctuation is read in windows of this
size cut at spaces (the patterns stay linear in the text, whatever a note holds)."""


def clauses(text: str) -> list[str]:
    """The sentences and clauses of a turn (a very long one cut in windows of ``MAX_CLAUSE``)."""
    out = []
    for whole in (c.strip() for c in _CLAUSE.split(text) if c and c.strip()):
        rest = whole
        while len(rest) > MAX_CLAUSE:
            cut = rest.rfind(" ", 0, MAX_CLAUSE)
            cut = cut if cut > 0 else MAX_CLAUSE
            out.append(rest[:cut])
            rest = rest[cut:].strip()
        if rest:
            out.append(rest)
    return out


def _trim_word(word: str) -> str:
    return word.rstrip(".'’-")


def phrase_after(text: str, start: int, *, max_words: int = 5, stop: frozenset[str] = STOP_AFTER) -> tuple[str, int]:
    """The noun phrase starting at ``start``, and where it ends.

    Up to ``max_words`` words, ended by punctuation or a stop word (a leading article is kept: ``clean_name`` drops it).
    """
    out: list[str] = []
    end = start
    for match in WORD.finditer(text[start:]):
        word = match.group()
        low = word.lower()
        if not word[0].isalnum():
            break
        allowed_of = low in {"of", "de", "du", "la"} and out and out[-1][:1].isupper()
        if out and low in stop and not allowed_of:
            break
        if not out and low in stop - {"the", "a", "an", "this", "these"}:
            break
        out.append(_trim_word(word))
        end = start + match.end()
        if len(out) >= max_words or word.endswith("."):
            break
    while out and out[-1].lower() in {"of", "de", "du", "la"}:
        out.pop()
    return " ".join(out), end


def clause_after(text: str, start: int, *, max_words: int = 10) -> str:
    """The rest of a clause from ``start`` (a decision, a cause), ended by punctuation or "because"/"since"/"so"."""
    out: list[str] = []
    for match in WORD.finditer(text[start:]):
        word = match.group()
        if not word[0].isalnum() or word.lower() in {"because", "since", "so", "but", "which", "although"}:
            break
        out.append(_trim_word(word))
        if len(out) >= max_words or word.endswith("."):
            break
    return " ".join(out)


def phrase_before(text: str, end: int, *, max_words: int = 5) -> str:
    """The noun phrase ending at ``end`` (the verb's subject), read backwards; adverbs just before the verb skipped."""
    words = [m.group() for m in WORD.finditer(text[:end])]
    out: list[str] = []
    for n, word in zip(range(len(words) - 1, -1, -1), reversed(words), strict=True):
        low = word.lower()
        if not word[0].isalnum():
            break
        if not out and low in ADVERBS:
            continue
        if low in STOP_BEFORE and not (n > 0 and word[0].isupper()):  # "My friend Will": a name, not "will"
            break
        out.append(_trim_word(word))
        if low in {"the", "my", "our", "his", "her", "their", "a", "an", "i", "we"} or len(out) >= max_words:
            break
    return " ".join(reversed(out))


def is_item(text: str) -> bool:
    """Whether a list goes on with ``text`` (a name, not a new verb: "Go and uses Redis" ends at "Go")."""
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    return bool(first) and (first[0].isupper() or first[0].isdigit() or first.lower().rstrip(",.") in TECHNOLOGIES)


def split_list(text: str, start: int, *, max_items: int = 4) -> list[str]:
    """The noun phrases of a list from ``start`` ("Go, Postgres and Redis")."""
    items: list[str] = []
    pos = start
    while len(items) < max_items:
        phrase, end = phrase_after(text, pos)
        if not phrase:
            break
        items.append(phrase)
        tail = re.match(r"\s+for\s+[^,;]*?(?=,|\s+and\s+|$)", text[end:])  # "Sentry for errors and Datadog"
        end += tail.end() if tail else 0
        more = re.match(r"\s*(?:,\s*(?:and\s+|&\s+)?|\s+and\s+|\s*&\s*|\s+plus\s+)", text[end:])
        if not more or not is_item(text[end + more.end() :]):
            break
        pos = end + more.end()
    return items
