"""Retrieval requests: option validation into store conditions, and ranking of the hits."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.documents import Document

from langchain_session_rag._checks import check_unit_interval
from langchain_session_rag._faults import fault_point
from langchain_session_rag._time import TimestampLike, parse_timestamp, utcnow
from langchain_session_rag.errors import InvalidArgumentError, UnknownOptionError
from langchain_session_rag.memory.annotate import BASE_IMPORTANCE, decode_topics
from langchain_session_rag.memory.documents import marker_of, stored_document
from langchain_session_rag.memory.lexical import stem
from langchain_session_rag.memory.ranking import SECONDS_PER_DAY, decayed_score, fused_score
from langchain_session_rag.memory.recall_policy import Candidate, RecallPolicy, arrange
from langchain_session_rag.memory.relational import entity_candidates
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.memory.timewindow import TimeWindow, time_boost, time_span, window_hits, window_option
from langchain_session_rag.models.similarity import cosine
from langchain_session_rag.stores.base import MemoryBackend, Record, Where, decode_message_ids

OPTIONS = frozenset(
    {
        "k",
        "session_ids",
        "exclude_session_ids",
        "since",
        "until",
        "source_type",
        "filter",
        "score_threshold",
        "half_life_days",
        "recency_weight",
        "lexical_weight",
        "now",
        "min_importance",
        "topics",
        "importance_weight",
        "all_if_fits",
        "exclude_message_ids",
        "time_window",
        "time_boost",
        "recall_policy",
        "entity_weight",
    }
)
"""Keyword options accepted by ``invoke`` / ``ainvoke`` (defaults are the memory's fields)."""


@dataclass
class RetrievalQuery:
    """A validated retrieval request."""

    k: int
    fetch: int
    where: Where
    threshold: float | None
    half_life_days: float | None
    recency_weight: float
    lexical_weight: float
    now: datetime
    topics: frozenset[str] | None = None
    """Keep chunks with any of these topics (normalised as stored)."""
    importance_weight: float = 0.0
    """Share of the score given by importance: ``score × ((1 − w) + w × importance)``."""
    min_importance: float | None = None
    """Keep chunks at least this important (a chunk stored without a score counts as ``BASE_IMPORTANCE``)."""
    exclude_messages: frozenset[str] | None = None
    """Skip chunks whose messages are all among these (the turns already in the prompt's history)."""
    all_if_fits: int | None = None
    """Token allowance of the long-context shortcut: every matching chunk, in time order, when they all fit."""
    time_window: TimeWindow | None = None
    """Chunks stamped in it are candidates and score ``+ time_boost`` (the options of the same names)."""
    time_boost: float = 0.5
    entity_weight: float = 0.0
    """Added to a chunk's relevance times the share of the question's entities it names (see ``relational``)."""
    policy: RecallPolicy | None = None
    """How candidates are ordered by worth, repeats, corrections and speaker (``None``: by score alone)."""
    text: str = ""
    """The query text (the recall policy compares it with the candidates' words)."""


def _ids(name: str, value: Any) -> list[str]:
    """A list of non-empty strings (a bare string is refused: "ab" is not the sessions "a" and "b")."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        msg = f"{name} must be a list of strings, got {value!r}."
        raise InvalidArgumentError(msg)
    if not all(isinstance(v, str) and v.strip() and "\x00" not in v for v in value):
        msg = f"{name} must hold non-empty strings, got {list(value)!r}."
        raise InvalidArgumentError(msg)
    return list(value)


def _session_conditions(sessions: Any, excluded: Any) -> dict[str, Any]:
    cond: dict[str, Any] = {}
    if sessions is not None:
        cond["$in"] = _ids("session_ids", sessions)
    if excluded:
        cond["$nin"] = _ids("exclude_session_ids", excluded)
    return cond


def _filter(value: Any) -> dict[str, Any]:
    """A metadata equality filter: string keys (no operators), scalar values or ``{"$in": [...]}``-style ranges."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        msg = f"filter must be a dict of metadata equalities, got {value!r}."
        raise InvalidArgumentError(msg)
    for key, cond in value.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            msg = f"filter keys must be metadata names, got {key!r} (operators such as $and/$or are not supported)."
            raise InvalidArgumentError(msg)
        if isinstance(cond, dict):
            bad = sorted(set(cond) - _OPERATORS)
            if bad:
                msg = f"filter[{key!r}] uses unsupported operator(s) {bad}; supported: {sorted(_OPERATORS)}."
                raise InvalidArgumentError(msg)
        elif not isinstance(cond, str | int | float | bool) or (isinstance(cond, float) and not math.isfinite(cond)):
            msg = f"filter[{key!r}] must be a string, number or boolean, got {cond!r}."
            raise InvalidArgumentError(msg)
    return dict(value)


_OPERATORS = frozenset({"$in", "$nin", "$gte", "$lte", "$gt", "$lt", "$ne", "$eq"})


def check_search_kwargs(options: dict[str, Any]) -> None:
    """Refuse standing retrieval options that no call could use (unknown names, bad values).

    Raises:
        UnknownOptionError: An unknown option.
        InvalidArgumentError: A value out of range, or a filter naming ``user_id``.
    """
    if not isinstance(options, dict):
        msg = f"search_kwargs must be a dict of retrieval options, got {type(options).__name__}."
        raise InvalidArgumentError(msg)
    build_query(dict(options), {"k": 4}, fetch_k=4)


def build_query(options: dict[str, Any], defaults: dict[str, Any], *, fetch_k: int, text: str = "") -> RetrievalQuery:
    """Turn per-call options (over the memory's defaults) into a :class:`RetrievalQuery` (of the query ``text``).

    Raises:
        TypeError: An unknown option.
        ValueError: A value out of range, or a filter naming ``user_id``.
    """
    unknown = set(options) - OPTIONS
    if unknown:
        msg = f"Unknown retrieval option(s) {sorted(unknown)}; known: {sorted(OPTIONS)}."
        raise UnknownOptionError(msg)
    opt = {**defaults, **options}
    k = opt["k"]
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        msg = f"k must be a positive integer, got {k!r}."
        raise InvalidArgumentError(msg)
    filt = _filter(opt.get("filter"))
    if "user_id" in filt:
        msg = "filter may not name user_id: a memory is bound to its user; use memory.for_user(...)."
        raise InvalidArgumentError(msg)
    threshold = opt.get("score_threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not -1 <= threshold <= 1
    ):
        msg = f"score_threshold is a cosine similarity: a number in [-1, 1] or None, got {threshold!r}."
        raise InvalidArgumentError(msg)
    now = parse_timestamp(opt["now"], what="now") if opt.get("now") is not None else utcnow()
    where: Where = filt
    sessions = _session_conditions(opt.get("session_ids"), opt.get("exclude_session_ids"))
    if sessions:
        where["session_id"] = sessions
    where.update(time_conditions(opt.get("since"), opt.get("until"), now=now))
    source_type = opt.get("source_type")
    if source_type is not None:
        where["source_type"] = source_condition(source_type)
    half_life = opt.get("half_life_days")
    if half_life is not None and (
        isinstance(half_life, bool) or not isinstance(half_life, int | float) or not 0 < half_life < math.inf
    ):
        msg = f"half_life_days must be a finite number of days > 0 (or None), got {half_life!r}."
        raise InvalidArgumentError(msg)
    weight = _unit("recency_weight", opt.get("recency_weight", 0.5))
    lexical = _unit("lexical_weight", opt.get("lexical_weight", 0.0))
    window, boost = window_option(opt.get("time_window"), opt.get("time_boost", 0.5), text=text, now=now)
    floor = None if opt.get("min_importance") is None else _unit("min_importance", opt["min_importance"])
    prior = _unit("importance_weight", opt.get("importance_weight", 0.0))
    policy = opt.get("recall_policy")
    if policy is not None and not isinstance(policy, RecallPolicy):
        msg = f"recall_policy must be a RecallPolicy or None, got {type(policy).__name__}."
        raise InvalidArgumentError(msg)
    return RetrievalQuery(
        policy=policy,
        text=text,
        all_if_fits=_allowance(opt.get("all_if_fits")),
        exclude_messages=_message_ids(opt.get("exclude_message_ids")),
        min_importance=floor,
        topics=_topics(opt.get("topics")),
        importance_weight=prior,
        k=k,
        fetch=max(k, fetch_k) if half_life is not None or lexical > 0 or window is not None else k,
        lexical_weight=lexical,
        where=where,
        threshold=threshold,
        half_life_days=half_life,
        recency_weight=weight,
        now=now,
        time_window=window,
        time_boost=boost,
        entity_weight=_unit("entity_weight", opt.get("entity_weight", 0.0)),
    )


def time_conditions(since: TimestampLike | None, until: TimestampLike | None, *, now: datetime | None = None) -> Where:
    """The store condition of ``since`` / ``until`` (on ``timestamp_epoch``; empty without either).

    Phrases ("last tuesday") are read against ``now`` (default: the current time); see :func:`.timewindow.time_span`.

    Raises:
        InvalidTimestampError: A time that cannot be parsed.
    """
    span = time_span(since, until, now=now or utcnow())
    return {"timestamp_epoch": span} if span else {}


SOURCE_TYPES = ("session", "document", "note")


def source_condition(value: object) -> str | dict[str, list[str]]:
    """The store condition of a ``source_type`` option: one type, or a list of types.

    Raises:
        InvalidArgumentError: A type other than ``"session"``, ``"document"`` and ``"note"``.
    """
    kinds = list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
    if not kinds or any(k not in SOURCE_TYPES for k in kinds):
        msg = f"source_type must be 'session', 'document', 'note' or a list of them, got {value!r}."
        raise InvalidArgumentError(msg)
    return str(kinds[0]) if len(kinds) == 1 else {"$in": sorted(set(map(str, kinds)))}


def _message_ids(value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        msg = f"exclude_message_ids must be a list of message ids, got {value!r}."
        raise InvalidArgumentError(msg)
    return frozenset(str(v) for v in value)


def _allowance(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        msg = f"all_if_fits must be a positive token count, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def _unit(name: str, value: object) -> float:
    return float(check_unit_interval(name, value))  # the one [0, 1] check


def _topics(value: object) -> frozenset[str] | None:
    """The ``topics`` option: a list of words, normalised as stored topics are (lower case, stemmed)."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset) or not value:
        msg = f"topics must be a non-empty list of words, got {value!r}."
        raise InvalidArgumentError(msg)
    if not all(isinstance(v, str) and _WORDS.findall(v.lower()) for v in value):
        msg = f"topics must hold words (e.g. ['api', 'deploy']), got {value!r}."
        raise InvalidArgumentError(msg)
    return frozenset(stem(w) for v in value for w in _WORDS.findall(v.lower()))


_WORDS = re.compile(r"[a-z0-9]+")
_PREFIX_MIN = 4


def _same_topic(wanted: str, stored: str) -> bool:
    """Equal, or one a prefix of the other when both have four letters or more (``deployment`` ~ ``deploy``)."""
    if wanted == stored:
        return True
    return min(len(wanted), len(stored)) >= _PREFIX_MIN and (wanted.startswith(stored) or stored.startswith(wanted))


def passes(meta: dict[str, Any], q: RetrievalQuery) -> bool:
    """Whether a chunk passes the ``topics``, ``min_importance`` and ``exclude_message_ids`` options."""
    if q.min_importance is not None and float(meta.get("importance", BASE_IMPORTANCE)) < q.min_importance:
        return False
    if q.exclude_messages:
        covered = decode_message_ids(meta.get("message_ids"))
        if covered and set(covered) <= q.exclude_messages:
            return False
    if q.topics is None:
        return True
    stored = decode_topics(meta.get("topics"))
    return any(_same_topic(t, s) for t in q.topics for s in stored)


def chunk_epoch(meta: dict[str, Any]) -> float | None:
    """A chunk's time in epoch seconds (stored as ``timestamp_epoch``; parsed from ``timestamp`` otherwise)."""
    epoch = meta.get("timestamp_epoch")
    if isinstance(epoch, int | float):
        return float(epoch)
    return parse_timestamp(meta["timestamp"]).timestamp() if meta.get("timestamp") else None


def rank(
    query: RetrievalQuery,
    hits: list[tuple[Record, float]],
    *,
    user_id: str,
    lexical: dict[str, float] | None = None,
    entities: dict[str, float] | None = None,
) -> list[Document]:
    """Drop other users' and sub-threshold hits, fuse lexical scores, apply decay, return the top ``k``.

    ``lexical`` maps record ids to BM25 scores; they are divided by the best one of the query.
    """
    best = max(lexical.values(), default=0.0) if lexical else 0.0
    now = query.now.timestamp()
    scored: list[Candidate] = []
    for record, similarity in hits:
        meta = record.metadata
        if meta.get("user_id") != user_id:  # fail closed, whatever the store did
            continue
        if query.threshold is not None and similarity < query.threshold:
            continue
        if not passes(meta, query):
            continue
        epoch = chunk_epoch(meta)
        age = (now - epoch) / SECONDS_PER_DAY if epoch is not None else 0.0
        relevance = similarity
        extra: dict[str, Any] = {}
        if query.lexical_weight > 0:
            lex = (lexical or {}).get(record.id, 0.0) / best if best > 0 else 0.0
            relevance = fused_score(similarity, lex, lexical_weight=query.lexical_weight)
            extra["lexical"] = lex
        if entities and entities.get(record.id):
            relevance += query.entity_weight * entities[record.id]
            extra["entities"] = entities[record.id]
        score = decayed_score(
            relevance, age_days=age, half_life_days=query.half_life_days, recency_weight=query.recency_weight
        )
        if query.importance_weight > 0:
            importance = float(meta.get("importance", BASE_IMPORTANCE))
            score *= (1 - query.importance_weight) + query.importance_weight * importance
        score = time_boost(score, epoch, query.time_window, query.time_boost, extra)
        scored.append(Candidate(score, record, similarity, extra, epoch))
    if query.policy is None:
        ordered = sorted(scored, key=lambda c: (-c.score, c.id))
    else:
        ordered = arrange(scored, query.text, query.policy, k=query.k)
    return [_document(c, with_reasons=query.policy is not None) for c in ordered[: query.k]]


POLICY_KEYS = frozenset({"superseded_by", "superseded_on", "asked_count", "last_asked", "folded", "why"})
"""What the recall policy adds to a returned document (result keys: never stored)."""


def _document(c: Candidate, *, with_reasons: bool) -> Document:
    doc = stored_document(c.record, with_marker=not with_reasons)  # the policy's marker is set below
    for key in POLICY_KEYS - c.extra.keys():  # only what the policy found here, never a stored value
        doc.metadata.pop(key, None)
    doc.metadata.update({"similarity": c.similarity, **c.extra, "score": c.score})
    if with_reasons:
        doc.metadata["why"] = "; ".join([f"similarity {c.similarity:.2f}", *c.reasons])
        doc.metadata["marker"] = marker_of(doc.metadata)
    return doc


def replica_search(
    replica: UserReplica, user_id: str, query: str, vector: Sequence[float], q: RetrievalQuery
) -> list[Document]:
    """Exact hybrid search over a user's synced replica: dense top ``fetch`` plus BM25 top ``fetch``, ranked."""
    only = replica.select(q.where) if q.where else None  # evaluate the filter once per chunk
    if q.topics is not None or q.min_importance is not None or q.exclude_messages:
        fault_point("search:selected")
        only = replica.matching(lambda meta: passes(meta, q), among=only)
    hits = replica.dense(vector, q.fetch, only=only)
    if q.policy is not None:  # repeats of a question must not push every statement out of the candidates
        told, known = replica.select({"worth": {"$in": ["statement", "claim"]}}), {r.id for r, _ in hits}
        told = told & only if only is not None else told
        hits += [h for h in replica.dense(vector, q.fetch, only=told) if h[0].id not in known]
    lexical: dict[str, float] | None = None
    if q.lexical_weight > 0:
        top = replica.lexical_top(query, q.fetch, only=only)
        known = {r.id for r, _ in hits}
        hits.extend(replica.scored([doc_id for doc_id, _ in top if doc_id not in known], vector))
        lexical = dict(top)
    if q.time_window is not None:  # the window's best chunks are candidates, however far the dense top reaches
        hits.extend(window_hits(replica, vector, q.time_window.within(q.where), q.fetch, only=only, hits=hits))
    named = entity_candidates(replica, query, vector, hits, fetch=q.fetch, only=only) if q.entity_weight > 0 else None
    return rank(q, hits, user_id=user_id, lexical=lexical, entities=named)


def lexical_candidates(  # noqa: PLR0917 - one argument per input of the search
    backend: MemoryBackend,
    replica: UserReplica,
    user_id: str,
    query: str,
    vector: list[float] | None,
    q: RetrievalQuery,
    hits: list[tuple[Record, float]],
) -> dict[str, float]:
    """BM25 scores of the query's best chunks; those the store's search missed join ``hits`` with their similarity.

    For stores whose vectors the replica does not hold (stores that embed themselves); ``replica`` is synced.
    """
    top = replica.lexical_top(query, q.fetch, only=replica.select(q.where) if q.where else None)
    known = {r.id for r, _ in hits}
    missing = [doc_id for doc_id, _ in top if doc_id not in known]
    if missing:
        for record in backend.fetch(user_id, missing, with_embeddings=vector is not None):
            similarity = cosine(vector, record.embedding) if vector is not None and record.embedding else 0.0
            record.embedding = None
            hits.append((record, similarity))
    return dict(top)
