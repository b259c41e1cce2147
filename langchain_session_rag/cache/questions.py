"""Reading a question for the cache: its normal form, words, numbers, names, persons; volatility and context."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from langchain_session_rag.cache import vocabulary as vocab

MAX_QUESTION_CHARS = 4096
"""The longest question a semantic cache looks up or stores, by default (``SemanticCache.max_question_chars``).

Reading a question is linear in its length, but comparing two costs more, and a question this long is all but
never asked twice: a longer one is a miss (``too_long``) and is not stored."""


def normalise_question(question: str) -> str:
    """The form of a question that the cache embeds: lower-cased, white space folded, arrows spelled out."""
    text = vocab.ARROW.sub(" to ", question.replace("’", "'"))
    return " ".join(text.lower().split())


def split_words(text: str) -> list[str]:
    """The words of a text, lower-cased, contractions split (``don't`` → ``do``, ``not``), arrows kept."""
    text = vocab.FRAME.sub("", vocab.ARROW.sub(" -> ", text.replace("’", "'")).strip())
    out: list[str] = []
    for raw in vocab.WORD.findall(text):
        word = raw.lower()
        if word.endswith("n't"):
            out.extend([word[:-3] if word[:-3] not in {"ca", "wo"} else {"ca": "can", "wo": "will"}[word[:-3]], "not"])
        elif word.endswith("'s"):
            out.append(word[:-2])
        elif "'" in word:
            out.append(word.split("'")[0])
        else:
            out.append(word)
    if "->" in text:
        out.append("->")
    return out


def joined(words: list[str]) -> list[str]:
    """Words with phrasal compounds joined: "log in" → "login", "sign up" → "signup"."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in {"log", "sign"} and word in {"in", "out", "up", "on", "off"}:
            out[-1] = out[-1] + ("in" if word == "on" else word)
            if out[-1] == "logoff":
                out[-1] = "logout"
            continue
        out.append(word)
    return out


def content(question: str) -> list[str]:
    """The words of a question that carry its topic, unstemmed (no filler, persons, negations or arrows)."""
    words = joined(split_words(question))
    return [
        w for w in words if w not in vocab.FILLER and w not in vocab.PERSONS and w not in vocab.NEGATIONS and w != "->"
    ]


def numbers(question: str) -> set[str]:
    """The numbers of a question, in digits or words (``1,000`` → ``1000``)."""
    found = {n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", question)}
    return found | {w for w in split_words(question) if w in vocab.NUMBER_WORDS}


def symbols(question: str) -> Counter[str]:
    """Signs that change meaning: operators, currency and unit signs, fractions (C++ / C#, x > 5 / x < 5, -3)."""
    text = vocab.FRAME.sub("", question.strip())
    signs = Counter(ch for ch in text if not ch.isascii() or ch in vocab.SIGNS if not ch.isalpha() and not ch.isspace())
    signs.update("-" for _ in re.finditer(r"(?<![\w-])-(?=\d)", text))  # a minus sign before a number
    for quote in "’‘“”«»":
        signs.pop(quote, None)
    return signs


def negated(question: str) -> bool:
    """Whether a question holds an odd number of negations."""
    return sum(w in vocab.NEGATIONS for w in split_words(question)) % 2 == 1


def entities(question: str) -> list[str]:
    """Names and identifiers, lower-cased, in order.

    Capitalised words after the first, ALLCAPS, CamelCase, words with digits.
    """
    words = vocab.WORD.findall(vocab.FRAME.sub("", question.replace("’", "'").strip()))
    out: list[str] = []
    for i, raw in enumerate(words):
        word = raw.split("'")[0]
        if word in {"I", ""} or (word.lower() in vocab.PERSONS and not (len(word) > 1 and word.isupper())):
            continue
        if (
            (i > 0 and word[:1].isupper())
            or (len(word) > 1 and word.isupper())
            or re.search(r"[a-z][A-Z]", word)
            or (re.search(r"\d", word) and re.search(r"[A-Za-z]", word))
        ):
            out.append(word.lower())
    return out


def persons(question: str) -> set[str]:
    """The people a question is about, with their roles; the generic subject of "how do I/you/we" is none."""
    words = split_words(question)
    return {
        vocab.PERSONS[w].split(":")[0] + ":generic"
        if w in vocab.GENERIC_SUBJECTS and i > 1 and words[i - 1] in vocab.AUXILIARIES and words[i - 2] in vocab.WH
        else vocab.PERSONS[w]
        for i, w in enumerate(words)
        if w in vocab.PERSONS
    }


def is_volatile(question: str) -> bool:
    """Whether the answer depends on when it is asked.

    "today", "latest", prices, rates, scores, weather, schedules, a currency pair such as "USD to EUR", ...
    """
    if vocab.TIMELESS.search(question):  # time words in questions that do not change: dates in code, history
        return False
    if vocab.VOLATILE.search(question):
        return True
    codes = {w.lower() for w in re.findall(r"\b[A-Za-z]{3}\b", question) if w.lower() in vocab.CURRENCIES}
    return len(codes) >= 2  # noqa: PLR2004 - a currency pair: a rate


def is_context_dependent(question: str, history: Sequence[str] = ()) -> bool:
    """Whether a question leans on earlier turns (only when there are earlier turns).

    Follow-up openers ("and", "what about"), pronouns pointing back ("it", "that", "they", "is there"), or
    fewer than two topic words make a question context-dependent in a multi-turn conversation.
    """
    if not history:
        return False
    if vocab.FOLLOW_UP.search(question):
        return True
    if any(w in vocab.DEICTIC for w in split_words(question)):
        return True
    return len(content(question)) < 2  # noqa: PLR2004
