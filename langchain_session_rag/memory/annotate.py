"""Importance and topics of a stored chunk, computed at ingest without a model call.

**Importance** (a float in [0, 1]) starts at 0.2 and rises with what people look for again later: decisions
(+0.3: "we decided", "let's go with", "switched to"), fixes and errors (+0.25: "fixed", "error", "traceback",
"workaround"), action items (+0.2: "todo", "remind me", "deadline", "need to"), stated preferences (+0.25: "I
prefer", "my favourite", "I always/never"), and an explicit "remember that" / "don't forget" / "keep in mind"
(+0.35); capped at 1. A signal right after a negation ("not a bug", "no decision yet") does not count.
**Topics** are up to three normalised keywords: the most frequent content words (stemmed, no stop words, at least
three letters: ``api``, ``sql``, ``bug`` count), ties broken by first use.

A memory can score importance another way (a model call, say) with ``importance_scorer=``. Both keys are
reserved: a chunk carried over from an export keeps its values, every new chunk is scored on its own text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from langchain_session_rag.errors import InvalidMetadataError
from langchain_session_rag.memory.lexical import padded, tokenize
from langchain_session_rag.memory.worth import assess
from langchain_session_rag.stores.base import Record

BASE_IMPORTANCE = 0.2
SIGNALS: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    ("decision", 0.3, re.compile(
        r"\b(we|i) (decided|agreed|chose|settled on)\b|\blet'?s (go|stick) with\b|\b(going|go) with\b"
        r"|\bswitch(ed|ing)? to\b|\bdecision\b", re.IGNORECASE)),
    ("fix", 0.25, re.compile(
        r"\b(fix(ed|es)?|bug|error|exception|traceback|crash(ed|es)?|work-?around|root cause|resolved)\b",
        re.IGNORECASE)),
    ("action", 0.2, re.compile(
        r"\b(todo|to-do|action items?|remind me|deadline|due (on|by)|need to|have to|must)\b", re.IGNORECASE)),
    ("preference", 0.25, re.compile(
        r"\bi (really )?(prefer|like|love|hate|dislike|always|never|can'?t stand)\b|\bmy fav(ou)?rite\b"
        r"|\bi'?m (allergic|vegetarian|vegan)\b", re.IGNORECASE)),
    ("explicit", 0.35, re.compile(
        r"\bremember (that|this)\b|\bdon'?t forget\b|\bkeep in mind\b|\bnote that\b|\bfor the record\b",
        re.IGNORECASE)),
)  # fmt: skip
"""(name, weight, pattern): each signal found in a chunk adds its weight once."""
_NOT_TOPICS = frozenset(
    {"user", "assistant", "yeah", "thank", "thanks", "okay", "really", "also", "just", "like", "lik", "use", "every",
     "get", "got", "one", "two", "yes", "thing", "want", "know", "think", "make", "time", "day", "see", "said", "say",
     "good", "great", "lot", "way", "going", "go", "well", "much", "new", "sure", "let", "would", "could"}
)  # fmt: skip
_DIGITS = re.compile(r"^\d+$")


_NEGATION = re.compile(
    r"\b(not|no|never|without|isn'?t|wasn'?t|aren'?t|didn'?t|hasn'?t)\s+(\w+\s+){0,2}$", re.IGNORECASE
)


def _found(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` occurs in ``text`` other than negated ("not a bug", "no decision yet")."""
    return any(not _NEGATION.search(text[max(0, m.start() - 40) : m.start()]) for m in pattern.finditer(text))


def heuristic_importance(text: str) -> float:
    """Importance of a text in [0, 1] by the signals above (no model call); a negated signal does not count."""
    score = BASE_IMPORTANCE + sum(weight for _, weight, pattern in SIGNALS if _found(pattern, text))
    return round(min(1.0, score), 3)


def topics_of(text: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` normalised keywords of a text (stemmed content words, most frequent first)."""
    words = [w for w in tokenize(text) if len(w) >= 3 and w not in _NOT_TOPICS and not _DIGITS.match(w)]  # noqa: PLR2004
    counts = Counter(words)
    first = {w: n for n, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


def annotate(records: Iterable[Record], scorer: Callable[[str], float] | None = None) -> None:
    """Set ``importance`` and ``topics`` on records that lack them, and assess every record's worth.

    An imported chunk keeps its importance and topics; its worth is always computed again from its text
    (:func:`~langchain_session_rag.memory.worth.assess`).

    Raises:
        InvalidMetadataError: An importance outside [0, 1] (from the scorer or an import).
    """
    for record in records:
        meta: dict[str, Any] = record.metadata
        if meta.get("source_type") == "core":
            continue
        if "importance" in meta:
            value = meta["importance"]
        else:
            value = scorer(record.text) if scorer is not None else heuristic_importance(record.text)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            msg = f"importance must be a number in [0, 1], got {value!r} (chunk {record.id})."
            raise InvalidMetadataError(msg)
        meta["importance"] = float(value)
        if "topics" not in meta:
            meta["topics"] = padded(topics_of(record.text))
        assess(meta, record.text)


def decode_topics(value: object) -> list[str]:
    """Stored topics as a list (``[]`` for a chunk stored before topics existed)."""
    return str(value).split() if isinstance(value, str) else []
