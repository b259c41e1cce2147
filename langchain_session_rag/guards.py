"""Question analysis for the semantic cache: canonical form, near-miss guards, volatility, context dependence."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_session_rag.lexical import stem

__all__ = ["canonical", "guard_mismatch", "is_context_dependent", "is_volatile"]

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?")
_NEGATIONS = frozenset({"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot"})
_NUMBER_WORDS = frozenset(
    (
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
        "thousand million billion first second third fourth fifth sixth seventh eighth ninth tenth half "
        "double twice"
    ).split()
)
# Words that carry no topic: question scaffolding, auxiliaries, pronouns of the asker, politeness, filler.
_FILLER = frozenset(
    (
        "a an the and or but if of to in on at by for with about as is are was were be been being do does did "
        "done have has had having i me my mine myself we us our you your yours it its this that these those "
        "what which who whom whose when where why how can could would should will shall may might must please "
        "tell explain show give know let way best good proper correct right possible able get getting use "
        "using want need like some any just really actually exactly also again there here thing something "
        "anything someone somebody kind sort type one ones am s t d ll ve re m hi hello hey thanks thank ok "
        "okay so then than into from up out over"
    ).split()
)
# Pronouns and openers that point back into a conversation.
_DEICTIC = frozenset({"it", "its", "this", "that", "these", "those", "they", "them", "their", "he", "she", "him",
                      "her", "his", "hers", "there", "one", "ones", "same", "former", "latter", "above"})  # fmt: skip
_FOLLOW_UP = re.compile(r"^\s*(and|but|also|so|then|what about|how about|why not|what if|same|ok so)\b", re.IGNORECASE)
_VOLATILE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|now|right now|currently|current|latest|newest|recent|recently|"
    r"this (?:morning|afternoon|evening|week|weekend|month|quarter|year)|next (?:week|month|year)|"
    r"last (?:night|week|month|year)|at the moment|these days|so far|yet|live|weather|forecast|"
    r"stock price|price of|exchange rate|news|score)\b",
    re.IGNORECASE,
)


def _words(text: str) -> list[str]:
    return [w.lower().replace("n't", " not").replace("'s", "") for w in _WORD.findall(text.replace("’", "'"))]


def _flat(text: str) -> list[str]:
    out: list[str] = []
    for word in _words(text):
        out.extend(word.split())
    return out


def canonical(question: str) -> str:
    """The topic words of a question, stemmed, in order: what the cache embeds and compares.

    "How can I reset my password?" and "What's the way to reset the password?" both give
    ``"reset password"``; negations and numbers are kept.
    """
    tokens = [w for w in _flat(question) if w not in _FILLER or w in _NEGATIONS]
    return " ".join(stem(w) for w in tokens)


def _numbers(question: str) -> set[str]:
    found = set(re.findall(r"\d+(?:[.,]\d+)?", question))
    return found | {w for w in _flat(question) if w in _NUMBER_WORDS}


def _negated(question: str) -> bool:
    return sum(w in _NEGATIONS for w in _flat(question)) % 2 == 1


def _entities(question: str) -> set[str]:
    """Proper nouns and identifiers: capitalised words after the first, ALLCAPS, CamelCase, words with digits."""
    words = _WORD.findall(question)
    out = set()
    for i, word in enumerate(words):
        if word == "I":
            continue
        if (i > 0 and word[:1].isupper()) or (len(word) > 1 and word.isupper()) or re.search(r"[a-z][A-Z]", word):
            out.add(word.lower())
    return out


@dataclass(frozen=True)
class GuardResult:
    """Why two questions are not the same question (``None`` fields: no objection)."""

    reason: str | None
    detail: str = ""


def guard_mismatch(question: str, cached: str) -> GuardResult:
    """Compare a question with a cached one; return the first difference that makes them different questions.

    Checks, in order: numbers, negation, named entities, and topic words (the canonical forms must hold
    the same words: a substituted or added topic word makes another question).
    """
    if _numbers(question) != _numbers(cached):
        return GuardResult("number", f"{sorted(_numbers(question))} vs {sorted(_numbers(cached))}")
    if _negated(question) != _negated(cached):
        return GuardResult("negation")
    if _entities(question) != _entities(cached):
        return GuardResult("entity", f"{sorted(_entities(question))} vs {sorted(_entities(cached))}")
    a, b = set(canonical(question).split()), set(canonical(cached).split())
    if a != b:
        return GuardResult("topic_word", f"{sorted(a - b)} vs {sorted(b - a)}")
    return GuardResult(None)


def is_volatile(question: str) -> bool:
    """Whether the answer depends on when it is asked ("today", "latest", "current", "this week", ...)."""
    return bool(_VOLATILE.search(question))


def is_context_dependent(question: str, history: Sequence[str] = ()) -> bool:
    """Whether a question leans on earlier turns (only when there are earlier turns).

    Follow-up openers ("and", "what about"), pronouns pointing back ("it", "that", "they", "is there"), or
    fewer than two topic words make a question context-dependent in a multi-turn conversation.
    """
    if not history:
        return False
    if _FOLLOW_UP.search(question):
        return True
    words = _flat(question)
    if any(w in _DEICTIC for w in words):
        return True
    return len(canonical(question).split()) < 2  # noqa: PLR2004
