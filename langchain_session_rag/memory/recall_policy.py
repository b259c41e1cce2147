"""How recall ranks a long-used memory: what a chunk is worth, repeats folded, corrections first, the user first.

The default of every :class:`~langchain_session_rag.SessionVectorMemory` (``recall_policy=RecallPolicy()``; ``None``
ranks by score alone, as before). It works on the candidates a query already found (its dense and BM25 tops, over
the similarity floor), after scoring, and changes only their order and what they say about themselves:

1. **Worth.** A chunk's score is multiplied by the weight of its worth (:mod:`.worth`): a person's statement 1,
   the assistant's claim 0.7, an unanswered question 0.5, filler 0.4 — so a question asked again with "I'm not
   sure" never displaces an exchange that answers it.
2. **Repeats fold.** Unanswered questions asking about the same words (overlap of their asked words ≥
   ``repeat_overlap``), and chunks with the same words, are one unit: the best-ranked stays, marked with how many
   times it was asked and when last (``asked_count``, ``last_asked``); the others leave the top-k.
3. **Corrections win.** Of two statements about the same subject, the newer ranks first and the older is marked
   superseded (``superseded_by``, ``superseded_on``; kept, shown with both dates). Same subject: most of the smaller
   one's words shared, or the newer is a correction ("changed to", "actually", "no longer") holding every word
   the older shares with the question. Applies to single exchanges and notes, not to topic segments.
4. **The user outranks the model.** A claim only the assistant made never ranks above a person's statement on the
   same subject (the statement takes its place).

Every candidate kept says why in ``metadata["why"]`` (shown per memory in the graph's budget report).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from langchain_session_rag._checks import check_unit_interval
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.lexical import tokenize
from langchain_session_rag.memory.worth import (
    ADDITION,
    USER_LABEL,
    WORTHS,
    Worth,
    chunk_turns,
    judge_turns,
    subject_phrases,
)
from langchain_session_rag.stores.base import Record

_TOPIC = "topic"
"""The ``chunking`` of a topic segment (``"exchange"`` for a single exchange)."""
_MAX_REORDERED = 300
_VERBS = frozenset({"am", "im", "is", "are", "was", "were", "be", "been"})
_PREFIX = 5
_ENDING = 2
_NAMING = frozenset({"nam"})
"""Letters two words share at the start to count as one ("allergy" / "allergic", "password" / "passwords")."""
_CODE = re.compile(r"[=;{}()\[\]<>]|\b\w+_\w+\b")
_CODE_SIGNS = 4
"""Signs of code (``=``, ``;``, brackets, snake_case names) past which a text corrects nothing."""
_REACH = 0.5
"""A statement that may be about a claim or question moves above it when it scores at least this share of it (or
is similar enough to the query to be recalled on its own: ``DEFAULT_SCORE_THRESHOLD``)."""
_NAMED = 1
"""Words a correction shares with an older statement to be about it ("not mustard", "moved from 12 Rosewood Lane"),
when neither names a different subject."""
DEFAULT_SCORE_THRESHOLD = 0.1
"""The similarity floor of the graph and the command line when neither they nor the memory set one. Low on purpose:
it drops what is plainly unrelated (0.03-0.05 for "What is my cat called?" against a turn about an editor, with the
bundled model), not a relevant memory the small model scores low ("Which editor do I use?" / "Alice writes code in
Helix.": 0.14). On the long-use benchmark's tuning split 0.3 dropped the user's own statement from 4.2 % of asks and
0.2 from 0.9 %."""


@dataclass(frozen=True)
class RecallPolicy:
    """Ranking by worth, with repeats folded, corrections first and the user's statements above the model's claims.

    Args:
        weights: Score multiplier per worth (``statement``, ``claim``, ``question``, ``filler``), each in [0, 1].
        fold_repeats: Fold repeated unanswered questions and same-worded chunks into one unit.
        newest_first: Rank the newest of statements about the same subject first; mark the older superseded.
        user_over_model: Never rank the assistant's claim above a person's statement on the same subject.
        repeat_overlap: Share of asked words two questions share to be one question (Jaccard, in (0, 1]).
        subject_overlap: Share of the smaller statement's words two statements share to be about one subject.
    """

    weights: dict[str, float] = field(
        default_factory=lambda: {"statement": 1.0, "claim": 0.7, "question": 0.5, "filler": 0.4}
    )
    fold_repeats: bool = True
    newest_first: bool = True
    user_over_model: bool = True
    repeat_overlap: float = 0.5
    subject_overlap: float = 0.5

    def __post_init__(self) -> None:
        """Refuse weights for unknown worths and values out of range.

        Raises:
            InvalidArgumentError: A bad weight or overlap.
        """
        if not isinstance(self.weights, dict) or set(self.weights) - set(WORTHS):
            msg = f"weights must map some of {list(WORTHS)} to numbers in [0, 1], got {self.weights!r}."
            raise InvalidArgumentError(msg)
        for name, value in (*self.weights.items(), ("repeat_overlap", self.repeat_overlap),
                            ("subject_overlap", self.subject_overlap)):  # fmt: skip
            check_unit_interval(f"RecallPolicy {name}", value)

    def weight(self, worth: Worth | None) -> float:
        """The score multiplier of a worth (1 for documents and anything not assessed)."""
        return 1.0 if worth is None else float(self.weights.get(worth, 1.0))


@dataclass
class Candidate:
    """A scored chunk while the policy orders the candidates."""

    score: float
    record: Record
    similarity: float
    extra: dict[str, Any]
    epoch: float | None
    worth: Worth | None = None
    asks: frozenset[str] = frozenset()
    correction: bool = False
    words: frozenset[str] = frozenset()
    subject: tuple[tuple[str, ...], ...] = ()
    adds: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The chunk's id."""
        return self.record.id

    @property
    def meta(self) -> dict[str, Any]:
        """The chunk's stored metadata."""
        return self.record.metadata

    @property
    def text(self) -> str:
        """The chunk's text."""
        return self.record.text

    @property
    def single(self) -> bool:
        """A single exchange or a note (topic segments hold many turns: no subject of their own)."""
        return self.meta.get("chunking") != _TOPIC


def assess_candidate(c: Candidate) -> None:
    """Read the chunk's worth, asked words and correction flag (stored at ingest, or from its text)."""
    meta = c.meta
    turns = chunk_turns(meta, c.text)
    if turns is None:
        return
    stored = meta.get("worth")
    if stored in WORTHS:
        c.worth, c.correction = stored, meta.get("correction") is True
        c.asks = frozenset(str(meta.get("asks") or "").split())
    else:  # stored before worth existed (or with a value this version does not know)
        worth, asks, c.correction = judge_turns(meta, turns)
        c.worth, c.asks = worth, frozenset(asks)
    model = " ".join(t for label, t in turns if label not in {USER_LABEL, ""})
    person = " ".join(t for label, t in turns if label in {USER_LABEL, ""})
    said = model if c.worth == "claim" else person
    c.words = _content(said) - (c.asks if c.worth != "claim" else frozenset())
    about = {"statement": said, "question": person, "claim": f"{person}\n{model}"}.get(c.worth or "", said)
    c.subject = tuple(subject_phrases(about))  # a claim is about what the user raised too ("my sister's birthday is")
    c.adds = bool(ADDITION.search(said)) or len(_CODE.findall(said)) >= _CODE_SIGNS  # code states no fact


def _content(text: str) -> frozenset[str]:
    """Content words of a text: stemmed, no stop words, no one-letter pieces ("I'm" → nothing)."""
    return frozenset(w for w in tokenize(text) if (len(w) > 1 or w.isdigit()) and w not in _VERBS)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _day(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).date().isoformat() if epoch is not None else "unknown date"


def _differ(a: Candidate, b: Candidate) -> bool:
    """Both name what they are about and no word of it is shared: "my cat" / "my dog"."""
    words_a = {w for p in a.subject for w in p}
    words_b = {w for p in b.subject for w in p}
    return bool(words_a) and bool(words_b) and not _common(words_a, words_b)


def _common(a: Iterable[str], b: Iterable[str]) -> frozenset[str]:
    """Words of ``a`` also in ``b``, or one word with another ending.

    "allergy" / "allergic"; not "grandmother" / "grandfather", not "accountant" / "account": the shared start (five
    letters or more) leaves at most two letters of either.
    """
    exact = set(b)
    return frozenset(w for w in a if w in exact or any(_one_word(w, v) for v in exact))


def _one_word(a: str, b: str) -> bool:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n >= _PREFIX and len(a) - n <= _ENDING and len(b) - n <= _ENDING


def _related(a: Candidate, b: Candidate) -> bool:
    """One names what the other names: two subjects end in the same word, and one's words are all the other's.

    "the dog" / "our dog", "my laptop password" / "the login password of my work laptop", "my sister's name" / "my
    sister" (a trailing "name" is left out); not "my car" / "my car insurance", not "my brother's birthday" / "my
    sister's birthday".
    """
    phrases_a, phrases_b = _heads(a), _heads(b)
    words_a = {w for p in phrases_a for w in p}
    words_b = {w for p in phrases_b for w in p}
    return any(p[-1] == q[-1] and (set(p) <= words_b or set(q) <= words_a) for p in phrases_a for q in phrases_b)


def _heads(c: Candidate) -> list[tuple[str, ...]]:
    return [p[:-1] if len(p) > 1 and p[-1] in _NAMING else p for p in c.subject]


def _same_subject(older: Candidate, newer: Candidate, query: frozenset[str], policy: RecallPolicy) -> bool:
    """Whether ``newer`` restates or corrects ``older``.

    Never when the newer adds ("also", "too") or is code, or when they name different subjects. Yes when most of
    their words are shared (the same sentence with a new value), or when the newer is a correction ("changed to",
    "actually", "no longer", "now") that names the same subject, repeats a word of the older that the question does
    not ask about ("not mustard", "moved from 12 Rosewood Lane"), or holds every word the older shares with the
    question.
    """
    if newer.adds or _differ(older, newer):
        return False
    shared = _common(older.words, newer.words)
    if older.words and newer.words and len(shared) / max(len(older.words), len(newer.words)) >= policy.subject_overlap:
        return True
    asked = _common(older.words, query)
    return newer.correction and (_related(older, newer) or bool(shared - asked) or (bool(asked) and asked <= shared))


def _about(statement: Candidate, other: Candidate, policy: RecallPolicy) -> bool | None:
    """Whether a statement is about what a claim or question is about.

    ``True`` surely (a shared subject, the asked words all in the statement, most words shared), ``None`` maybe (a
    word shared), ``False`` not.
    """
    if _differ(statement, other):
        return False
    if (
        _related(statement, other)
        or (other.asks and _common(other.asks, statement.words) == other.asks)
        or _overlap(statement.words, other.words) >= policy.subject_overlap
    ):
        return True
    return None if _common(statement.words, other.words | other.asks) else False


def _fold(ordered: list[Candidate], policy: RecallPolicy) -> list[Candidate]:
    kept: list[Candidate] = []
    for c in ordered:
        same = next((k for k in kept if _repeat(k, c, policy)), None)
        if same is None:
            kept.append(c)
            continue
        same.extra["asked_count"] = same.extra.get("asked_count", 1) + 1
        same.extra["folded"] = [*same.extra.get("folded", []), c.id]
        times = [e for e in (same.extra.get("last_asked_epoch"), same.epoch, c.epoch) if e is not None]
        same.extra["last_asked_epoch"] = max(times, default=None)
    for k in kept:
        if "asked_count" in k.extra:
            k.extra["last_asked"] = _day(k.extra.pop("last_asked_epoch"))
            verb = "asked" if k.worth == "question" else "said"
            k.reasons.append(f"{verb} {k.extra['asked_count']} times, last on {k.extra['last_asked']}")
    return kept


def _repeat(kept: Candidate, c: Candidate, policy: RecallPolicy) -> bool:
    if kept.worth == c.worth == "question":
        return _jaccard(kept.asks, c.asks) >= policy.repeat_overlap
    return kept.worth == c.worth and bool(kept.words) and kept.words == c.words and kept.asks == c.asks


def _move_above(ordered: list[Candidate], winner: Candidate, loser: Candidate) -> bool:
    """Put ``winner`` where ``loser`` is and ``loser`` right after it, when ``loser`` ranks higher; whether it moved."""
    i, j = ordered.index(loser), ordered.index(winner)
    if j > i:
        ordered.pop(j)
        ordered.insert(i, winner)
    return j > i


def _reason(c: Candidate, text: str) -> None:
    if text not in c.reasons:
        c.reasons.append(text)


def _corrections(ordered: list[Candidate], query: frozenset[str], policy: RecallPolicy) -> None:
    statements = [c for c in ordered if c.worth == "statement" and c.single and c.epoch is not None]
    for older in sorted(statements, key=lambda c: c.epoch or 0.0):
        newer = [n for n in statements if (n.epoch or 0.0) > (older.epoch or 0.0) and _same_subject(
            older, n, query, policy)]  # fmt: skip
        if not newer:
            continue
        newest = max(newer, key=lambda n: n.epoch or 0.0)
        _move_above(ordered, newest, older)
        older.extra["superseded_by"] = newest.id
        older.extra["superseded_on"] = _day(newest.epoch)
        _reason(older, f"superseded on {older.extra['superseded_on']}")
        _reason(newest, "the newest statement on its subject")


def _user_first(ordered: list[Candidate], policy: RecallPolicy) -> None:
    """A person's statement ranks above the assistant's claims and the unanswered questions about its subject."""
    statements = [c for c in ordered if c.worth == "statement"]
    for other in [c for c in ordered if c.worth in {"claim", "question"}]:
        for statement in statements:
            about = _about(statement, other, policy)
            near = statement.similarity >= DEFAULT_SCORE_THRESHOLD or statement.score >= _REACH * other.score
            if (about or (about is None and near)) and _move_above(ordered, statement, other):
                _reason(statement, f"the user's statement above {_LABELS[other.worth or 'claim']}")


def arrange(candidates: list[Candidate], query: str, policy: RecallPolicy, *, k: int = 4) -> list[Candidate]:
    """Order scored candidates by the policy (best first); folded repeats leave the list.

    Corrections and the user-first rule reorder the best ``max(3 k, 30)`` candidates after folding (at most 300):
    what could reach the top ``k``; the rest stay in score order behind them.
    """
    for c in candidates:
        assess_candidate(c)
        weight = policy.weight(c.worth)
        c.score *= weight
        if c.worth is not None:
            c.extra["worth"] = c.worth
            c.reasons.append(f"{_LABELS[c.worth]}, weight {weight:g}")
    ordered = sorted(candidates, key=lambda c: (-c.score, c.id))
    words = _content(query)
    if policy.fold_repeats:
        ordered = _fold(ordered, policy)
    head, tail = ordered[: min(max(3 * k, 30), _MAX_REORDERED)], ordered[min(max(3 * k, 30), _MAX_REORDERED) :]
    if policy.newest_first:
        _corrections(head, words, policy)
    if policy.user_over_model:
        _user_first(head, policy)
    return head + tail


_LABELS: dict[str, str] = {
    "statement": "stated by the user",
    "claim": "the assistant's claim",
    "question": "an unanswered question",
    "filler": "small talk",
}
