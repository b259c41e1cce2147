"""Entity spans in a text without a model: known technologies, capitalised names, code identifiers."""

from __future__ import annotations

import re
from typing import Final

from langchain_session_rag.relations.model import Mention
from langchain_session_rag.relations.vocabulary import TECHNOLOGIES, technology

_OPENERS: Final = frozenset(
    "i we the a an my our it this that these those yes no so well oh hey hi hello thanks thank sure also and but "
    "just actually last yesterday today tomorrow then now ok okay great nice cool wow yeah yep what why how when "
    "where who which can could should would will do does did is are was were have has had let lets let's please "
    "maybe anyway btw honestly finally still after before since because if in on at for with from by to of as "
    "you he she they there here good glad sorry sounds that's it's i'm i've we're we've don't didn't not one two "
    "some any all every each both most many more much very really lol haha hmm sadly luckily hopefully".split()
)  # fmt: skip
"""Words that begin a sentence in capitals without being a name."""
_CALENDAR: Final = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december mon tue wed thu fri sat sun jan feb mar apr jun jul aug sep sept oct nov "
    "dec christmas easter".split()
)  # fmt: skip
_CAPS = re.compile(
    r"(?<![\w.@/-])((?:[A-Z][\w.&'’+-]*[\w+]|[A-Z])(?:\s+(?:of|de|du|la|von|van)\s+[A-Z][\w.&'’-]*"
    r"|\s+[A-Z][\w.&'’+-]*[\w+]|\s+[A-Z]\b|\s+\d+\b)*)"
)
_CODE = re.compile(
    r"`([^`\n]{2,60})`|(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+[a-z0-9]*(?:[A-Z][a-z0-9]+)+"
    r"|[a-zA-Z_][\w-]*(?:\.[a-zA-Z_][\w-]*)+\(?\)?)(?![\w])"
)
_SENTENCE_START = re.compile(r"(?:^\s*|[.!?]\s+|\n\s*|:\s+|\"\s*)$")
"""The few characters before a word that make it a sentence's first (read in a window of 8: linear in the text)."""
_POSSESSIVE = re.compile(r"(?:'s|’s)$")


def _technologies(text: str) -> list[Mention]:
    found: list[Mention] = []
    words = re.findall(r"[A-Za-z0-9][\w.+#/-]*[\w+#]|[A-Za-z]", text)
    taken: set[int] = set()
    for size in (3, 2, 1):
        for start in range(len(words) - size + 1):
            span = " ".join(words[start : start + size])
            if span.lower() in TECHNOLOGIES and not taken & set(range(start, start + size)):
                name = technology(span, cased=span != span.lower())
                if name:
                    found.append(Mention(name, "technology"))
                    taken.update(range(start, start + size))
    return found


def _capitalised(text: str) -> list[Mention]:
    found: list[Mention] = []
    for match in _CAPS.finditer(text):
        span = _POSSESSIVE.sub("", match.group(1)).rstrip(".")
        words = span.split()
        first = bool(_SENTENCE_START.search(text[max(0, match.start() - 8) : match.start()]))
        while words and words[0].lower() in _OPENERS:
            words, first = words[1:], False
        if first and len(words) == 1:
            continue  # a sentence's first word, capitalised as every first word is
        while words and words[-1].lower() in {"of", "de", "and", "&", "the"}:
            words.pop()
        name = " ".join(words)
        if not name or name.lower() in _CALENDAR or len(name) < 2 or name.isdigit():  # noqa: PLR2004
            continue
        if name.lower() in TECHNOLOGIES:
            continue  # the gazetteer names it, canonically
        found.append(Mention(name, "thing"))
    return found


def _code(text: str) -> list[Mention]:
    found = []
    for match in _CODE.finditer(text):
        name = (match.group(1) or match.group(2)).strip()
        if name and not re.fullmatch(r"(?:e\.g|i\.e|etc|vs|a\.m|p\.m)\.?", name, re.IGNORECASE):
            found.append(Mention(name, "thing"))
    return found


def mentions_in(text: str) -> list[Mention]:
    """Entity mentions in ``text``: technologies of the gazetteer, capitalised names, code identifiers."""
    return _technologies(text) + _capitalised(text) + _code(text)
