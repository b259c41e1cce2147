"""Question analysis for the semantic cache: near-miss guards, volatility, context dependence.

A semantic cache hit needs two questions that *mean the same*. Cosine similarity of sentence embeddings
cannot see the small words that reverse a question ("km to miles" / "miles to km", "log in" / "log out",
"my name" / "your name", "Alice owes Bob" / "Bob owes Alice"), so every candidate that passes the
similarity threshold is checked here, and any objection makes it a miss. The checks, in order:

``number``     the numbers (digits and number words) differ;
``negation``   one question is negated and the other is not;
``entity``     a name or identifier of one question (capitalised, ALLCAPS, CamelCase, with digits) is not a
               word of the other (case-insensitive, so "france" matches "France");
``person``     the people differ: "my" vs "your", "I" vs "you", "he" vs "she";
``opposite``   a word of an opposing pair is swapped for its partner: in/out, up/down, on/off, login/logout,
               enable/disable, buy/sell, before/after, import/export, ...;
``direction``  the same words in another order where order matters: around from/to/into/than/vs/owes/
               converts/migrates/..., or two names swapped ("Alice called Bob" / "Bob called Alice");
``content``    a topic word of one question has no counterpart in the other: the same stem, or (when the
               cache gives a word-similarity function) a word whose embedding is close enough.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from langchain_session_rag.cache import questions
from langchain_session_rag.cache import vocabulary as vocab
from langchain_session_rag.cache.questions import (
    MAX_QUESTION_CHARS,
)
from langchain_session_rag.memory.lexical import stem


def _persons_differ(a: set[str], b: set[str]) -> bool:
    """Other people or roles; a generic "how do I/you" subject only differs from another generic one."""
    generic_a, generic_b = {p for p in a if p.endswith(":generic")}, {p for p in b if p.endswith(":generic")}
    if a - generic_a != b - generic_b:
        return True
    return bool(generic_a and generic_b and generic_a != generic_b)


def _prefixed_opposite(only_a: set[str], only_b: set[str]) -> tuple[str, str] | None:
    """A word and its negated or reversed form: legal/illegal, overweight/underweight, increment/decrement.

    Each word of one side is turned into its partner forms and looked up in the other side (linear in the words).
    """
    for x in sorted(only_a):
        for p, q in vocab.PREFIX_PAIRS:
            if x.startswith(p) and len(x) > len(p) + 2 and q + x[len(p) :] in only_b:
                return x, q + x[len(p) :]
            if x.startswith(q) and len(x) - len(q) > 2 and p + x[len(q) :] in only_b:  # noqa: PLR2004
                return x, p + x[len(q) :]
    return None


def _opposite(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """A word of an opposing pair that one question has more of where the other has more of its partner."""
    prefixed = _prefixed_opposite(set(a) - set(b), set(b) - set(a))
    if prefixed is not None:
        return prefixed
    ca, cb = Counter(w for w in a if w in vocab.OPPOSITE_WORDS), Counter(w for w in b if w in vocab.OPPOSITE_WORDS)
    for x, y in vocab.OPPOSITES:
        if (ca[x] > cb[x] and cb[y] > ca[y]) or (ca[y] > cb[y] and cb[x] > ca[x]):
            return (x, y) if ca[x] > cb[x] else (y, x)
    return None


def _first_inversion(values: list[int]) -> tuple[int, int] | None:
    """The first ``(i, j)``, ``i < j``, with ``values[i] > values[j]`` (in ``(i, j)`` order), in linear time."""
    later_min = [0] * len(values)  # the smallest value after each position
    low = len(values) and max(values) + 1
    for k in range(len(values) - 1, -1, -1):
        later_min[k] = low
        low = min(low, values[k])
    for i, value in enumerate(values):
        if later_min[i] < value:
            return i, next(j for j in range(i + 1, len(values)) if values[j] < value)
    return None


def _inversion(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """Two words that appear in both sequences in opposite orders."""
    first_b: dict[str, int] = {}
    for i, w in enumerate(b):
        first_b.setdefault(w, i)
    shared = [w for w in dict.fromkeys(a) if w in first_b]
    found = _first_inversion([first_b[w] for w in shared])
    return None if found is None else (shared[found[0]], shared[found[1]])


@dataclass(frozen=True)
class GuardResult:
    """Why two questions are not the same question (``reason`` ``None``: no objection)."""

    reason: str | None
    detail: str = ""


MAX_UNALIGNED_WORDS = 32
"""Topic words left without a same-stem partner beyond which two questions differ (no word embeddings asked)."""
MAX_ORDER_WORDS = 200
"""Shared words beyond which any swapped pair counts as another order (the pairwise weighing is quadratic)."""

WordSimilarity = Callable[[Sequence[str], Sequence[str]], list[list[float]]]
"""Given two lists of words, the matrix of their similarities (rows: the first list)."""


def _leftover(words: list[str], other: list[str]) -> list[str]:
    """The words whose stem ``other`` does not hold (as often)."""
    remaining = Counter(stem(w) for w in other)
    out = []
    for word in words:
        if remaining[stem(word)] > 0:
            remaining[stem(word)] -= 1
        else:
            out.append(word)
    return out


def _unaligned(
    a: list[str], b: list[str], word_similarity: WordSimilarity | None, word_threshold: float
) -> tuple[list[str], list[str]]:
    """Topic words (as written) of each side without a counterpart: the same stem, or a similar word."""
    only_a, only_b = _leftover(a, b), _leftover(b, a)
    if word_similarity is None or not only_a or not only_b or max(len(only_a), len(only_b)) > MAX_UNALIGNED_WORDS:
        return only_a, only_b  # that many topic words without a same-stem partner: not the same question
    sims = word_similarity(only_a, only_b)
    left = [w for w, row in zip(only_a, sims, strict=True) if max(row) < word_threshold]
    right = [w for j, w in enumerate(only_b) if max(row[j] for row in sims) < word_threshold]
    return left, right


def guard_mismatch(  # noqa: PLR0911 - one return per check, in order
    question: str,
    cached: str,
    *,
    word_similarity: WordSimilarity | None = None,
    word_threshold: float = 0.8,
    max_chars: int = MAX_QUESTION_CHARS,
) -> GuardResult:
    """Compare a question with a cached one; return the first difference that makes them different questions.

    Args:
        question: The question asked now.
        cached: The question whose answer is cached.
        word_similarity: Similarities of words (for the ``content`` check); without it a topic word needs the
            same stem on the other side.
        word_threshold: The similarity at which two different topic words count as the same word.
        max_chars: The longest question compared (longer ones are never the same question).

    Returns:
        A :class:`GuardResult` whose ``reason`` is ``None`` when no check objects; ``"length"`` (nothing else
        read) when a question is longer than ``max_chars``, so the work of a comparison stays bounded.
    """
    longest = max(len(question), len(cached))
    if longest > max_chars:
        return GuardResult("length", f"{longest} characters > max_chars={max_chars}")
    if questions.numbers(question) != questions.numbers(cached):
        return GuardResult("number", f"{sorted(questions.numbers(question))} vs {sorted(questions.numbers(cached))}")
    if questions.negated(question) != questions.negated(cached):
        return GuardResult("negation")
    sa, sb = questions.symbols(question), questions.symbols(cached)
    if sa != sb:
        return GuardResult("symbol", f"{sorted(sa.elements())} vs {sorted(sb.elements())}")
    wa, wb = questions.joined(questions.split_words(question)), questions.joined(questions.split_words(cached))
    ea, eb = questions.entities(question), questions.entities(cached)
    missing = sorted((set(ea) - set(wb)) | (set(eb) - set(wa)))
    if missing:
        return GuardResult("entity", f"{missing} not in both")
    pa, pb = questions.persons(question), questions.persons(cached)
    if _persons_differ(pa, pb):
        return GuardResult("person", f"{sorted(pa)} vs {sorted(pb)}")
    swap = _opposite(wa, wb)
    if swap is not None:
        return GuardResult("opposite", f"{swap[0]!r} vs {swap[1]!r}")
    direction = _direction(wa, wb, ea, eb)
    if direction:
        return GuardResult("direction", direction)
    left, right = _unaligned(questions.content(question), questions.content(cached), word_similarity, word_threshold)
    if left or right:
        return GuardResult("content", f"{left} vs {right}")
    return GuardResult(None)


def _direction(wa: list[str], wb: list[str], ea: list[str], eb: list[str]) -> str:
    entity_swap = _inversion([e for e in ea if e in eb], [e for e in eb if e in ea])
    if entity_swap:
        return f"{entity_swap[0]!r} and {entity_swap[1]!r} swapped"
    # Two topic words in the other order, where order carries meaning: an order-sensitive word, a number or a
    # shared word (a verb: "landlord evicts tenant") between them, or a question of the form "is X a Y" /
    # "how many X in a Y".
    strict = any(vocab.ORDER_SENSITIVE_START.match(" ".join(words)) for words in (wa, wb))
    seq_a, seq_b = _ordered(wa), _ordered(wb)
    once = {w for w, n in Counter(w for w, _ in seq_a).items() if n == 1}
    once &= {w for w, n in Counter(w for w, _ in seq_b).items() if n == 1}
    pos_b = {word: i for i, (word, _) in enumerate(seq_b) if word in once}
    placed = [i for i, (word, _) in enumerate(seq_a) if word in pos_b]  # words in both, once each
    found = _first_inversion([pos_b[seq_a[i][0]] for i in placed])
    if found is not None and (strict or len(placed) > MAX_ORDER_WORDS):  # too many to weigh pair by pair: a miss
        return f"{seq_a[placed[found[0]]][0]!r} and {seq_a[placed[found[1]]][0]!r} in another order"
    words_a = {w for w, _ in seq_a}
    for n, i in enumerate(placed if found is not None else ()):  # only when some pair is swapped at all
        x = seq_a[i][0]
        for j in placed[n + 1 :]:
            y = seq_a[j][0]
            if pos_b[x] > pos_b[y] and (_pivot(seq_a, i, j, pos_b) or _pivot(seq_b, pos_b[y], pos_b[x], words_a)):
                return f"{x!r} and {y!r} in another order"
    # Same words in the same order, but the direction words differ: "migrate from X" vs "migrate to X".
    marks_a, marks_b = _direction_marks(wa), _direction_marks(wb)
    if marks_a != marks_b:
        return f"{marks_a} vs {marks_b}"
    return ""


def _pivot(seq: list[tuple[str, bool]], lo: int, hi: int, other: Container[str]) -> bool:
    """Between positions ``lo`` and ``hi`` of ``seq``: a marker, or a word that ``other`` also holds."""
    between = seq[lo + 1 : hi + 1]
    return any(marked for _, marked in between) or any(word in other for word, _ in between[:-1])


def _ordered(words: list[str]) -> list[tuple[str, bool]]:
    """Topic words (stemmed) in order, each flagged when an order-sensitive word stands right before it."""
    out: list[tuple[str, bool]] = []
    marked = False
    for i, word in enumerate(words):
        is_marker = _is_order_marker(word) and not (word == "to" and i > 0 and words[i - 1] in vocab.BEFORE_INFINITIVE)
        if is_marker:
            marked = True
            if word in vocab.FILLER or word == "->":
                continue
        if word in vocab.FILLER or word in vocab.PERSONS or word in vocab.NEGATIONS:
            continue
        out.append((stem(word), marked))
        marked = is_marker
    return out


def _is_order_marker(word: str) -> bool:
    """Order-sensitive words, and numbers: "10 km in miles" is not "10 miles in km"."""
    return word in vocab.ORDER_MARKERS or word.isdigit() or word in vocab.NUMBER_WORDS


def _direction_marks(words: list[str]) -> list[str]:
    """from/to/into/onto in order, without the "to" of an infinitive ("how to", "want to", "need to")."""
    return [
        vocab.SAME_DIRECTION.get(w, w)
        for i, w in enumerate(words)
        if w in vocab.DIRECTION_WORDS and not (w == "to" and i > 0 and words[i - 1] in vocab.BEFORE_INFINITIVE)
    ]
