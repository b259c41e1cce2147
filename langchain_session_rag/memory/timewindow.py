"""Time expressions → time windows: "last Tuesday", "two weeks ago", "on March 5" as the span of time they name.

A window covers the whole day, week, month or year the phrase names, half-open: ``start <= t < end``. Calendar
days are those of ``now``'s timezone (UTC for a naive ``now``); weeks start on Monday (ISO 8601). Phrases are
parsed by `dateparser <https://dateparser.readthedocs.io>`_ in English, relative to ``now`` and preferring the
past ("March" is the most recent March that began before ``now``; "Tuesday" and "last Tuesday" the most recent
Tuesday before today; numeric dates read month first, as in "3/5/2026"). dateparser is imported on first use
only, and :func:`find_time_window` loads it only for questions holding a date word.

:func:`find_time_window` looks for an expression inside a question and fires only on a date word: a weekday,
"today" / "yesterday", a number of days / weeks / months / years "ago", "last" / "this" / "past" / "previous"
with "week", "month", "year" or a weekday, a month name after "in", "on", "since", ... or next to a day number
("in March", "March 5th"; not "my March playlist", "may I ask", "the march of progress"), a year after such a
preposition ("in 2025"; not "version 2024.1") and a full date ("2026-03-05", "3/5/2026"). Times of day alone
("at 5 pm"), "now", "a second", "the last step", "next week" (memories are past) and spans such as "in the last
two weeks" do not fire. The question must also refer to the past: a past-tense cue ("did", "was", "said", "ago",
"last", ...) or an explicit date; a weekday needs "last" / "on" / "this" / "since" / "past" before it and must end
its clause ("a good sunday brunch", "every Monday", "Should it run on Sunday?" do not fire); in a question about
code ("python", "regex", "cron", ...) "ago" and numeric dates are not times. A window after ``now`` ("Friday the
13th") and a range ("from 1990 to 2000") give ``None``, and only the first 500 characters of a question are read
(the rules are in ``_timecues``).

Usage:
    .. code-block:: python

        from datetime import datetime, timezone

        from langchain_session_rag.memory.timewindow import find_time_window

        now = datetime(2026, 3, 11, 15, 0, tzinfo=timezone.utc)  # a Wednesday
        window = find_time_window("What did we discuss last Tuesday?", now=now)
        print(window.start, window.end)
        # 2026-03-10 00:00:00+00:00 2026-03-11 00:00:00+00:00
        assert window.as_metadata() == ["2026-03-10T00:00:00+00:00", "2026-03-11T00:00:00+00:00"]
        assert find_time_window("may I ask a second question?", now=now) is None
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from langchain_session_rag._time import TimestampLike, parse_timestamp
from langchain_session_rag.errors import InvalidArgumentError, InvalidTimestampError
from langchain_session_rag.memory._timecues import MAX_MATCHES, MAX_QUERY_CHARS, could_fire, fires, is_range
from langchain_session_rag.stores.base import Record, Where

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_session_rag.memory.replica import UserReplica

EXAMPLE_PHRASES = ("'yesterday'", "'last tuesday'", "'two weeks ago'", "'last month'", "'in March'", "'2026-03-05'")
"""Phrases to quote in error messages."""


@dataclass(frozen=True)
class TimeWindow:
    """The span of time a phrase names: ``start <= t < end`` (aware datetimes in the timezone of ``now``)."""

    start: datetime
    end: datetime
    phrase: str
    """The text the window was read from."""

    def holds(self, epoch: float | None) -> bool:
        """Whether a time in epoch seconds lies in the window (``None``, an unknown time, never does)."""
        return epoch is not None and self.start.timestamp() <= epoch < self.end.timestamp()

    def within(self, where: Where) -> Where:
        """The store condition ``where`` narrowed to the window (on ``timestamp_epoch``)."""
        span: dict[str, Any] = dict(where.get("timestamp_epoch") or {})
        span["$gte"] = max(float(span.get("$gte", -math.inf)), self.start.timestamp())
        span["$lt"] = min(float(span.get("$lt", math.inf)), self.end.timestamp())
        return {**where, "timestamp_epoch": span}

    def as_metadata(self) -> list[str]:
        """``[start, end]`` in ISO 8601, as recorded on the documents the window boosted."""
        return [self.start.isoformat(), self.end.isoformat()]


_TOKEN = re.compile(r"[a-z]+|\d+")
_PERIODS = ("day", "week", "month", "year")


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


def _settings(now: datetime) -> dict[str, Any]:
    """The dateparser settings: ``now``'s wall clock as the base, so days are counted in ``now``'s timezone."""
    return {
        "RELATIVE_BASE": now.replace(tzinfo=None),
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
        "TIMEZONE": "UTC",  # never the machine's: the wall clock above is taken as is
    }


def _midnight(now: datetime, day: date) -> datetime:
    return now.replace(year=day.year, month=day.month, day=day.day, hour=0, minute=0, second=0, microsecond=0)


def _window(when: datetime, period: str, phrase: str, now: datetime) -> TimeWindow:
    """The whole ``period`` (day, week, month or year) holding the wall-clock date ``when``."""
    day = when.date()
    if period == "year":
        first, after = date(day.year, 1, 1), date(day.year + 1, 1, 1)
    elif period == "month":
        first = date(day.year, day.month, 1)
        after = date(day.year + day.month // 12, day.month % 12 + 1, 1)
    elif period == "week":
        first = day - timedelta(days=day.weekday())
        after = first + timedelta(days=7)
    else:
        first, after = day, day + timedelta(days=1)
    return TimeWindow(start=_midnight(now, first), end=_midnight(now, after), phrase=phrase)


def _parse(phrase: str, now: datetime, parser: Any = None) -> TimeWindow | None:
    from dateparser.date import DateDataParser  # noqa: PLC0415 - lazy: dateparser takes ~0.2 s to import

    parser = parser or DateDataParser(languages=["en"], settings=_settings(now))
    data = parser.get_date_data(phrase)
    if data.date_obj is None:
        return None
    period = data.period if data.period in _PERIODS else "day"  # "time" (at 5 pm yesterday) → its day
    try:
        return _window(data.date_obj, period, phrase, now)
    except (OverflowError, ValueError):  # the window of year 9999 ends past datetime.max
        msg = f"Invalid time phrase {phrase!r}: {_OUT_OF_RANGE}."
        raise InvalidTimestampError(msg) from None


_OUT_OF_RANGE = "it names a time out of range (the calendar ends in the year 9999)"
_DAY_ALONE = re.compile(
    r"(?:(?:on|in|at|since|until|from|by)\s+)?(?:the\s+)?(?:[+-]\d+|\d{1,3}|\d{5,}|\d+[.,]\d+|\d+(?:st|nd|rd|th))\.?"
)
"""A bare number ("1", "-1", "1.5"; not a year such as "2025") or a day without its month ("the 5th"): dateparser
reads a month or a day of some month into them, never what the user meant."""


def resolve_time_phrase(text: str, *, now: datetime) -> TimeWindow | None:
    """The window a time phrase names, relative to ``now``; ``None`` when it names no time.

    Args:
        text: The phrase alone: "yesterday", "last Tuesday", "two weeks ago", "in March", "on March 5",
            "March 5th", "2026-03-05", "last week", "this week", "3 days ago", "last month", "last year", "in 2025".
        now: The present (aware; a naive one is taken as UTC). Its timezone decides where days begin.

    Returns:
        The whole day, week (Monday to Monday), month or year named, half-open; ``None`` also for a bare number
        ("1", "-1") and a day without its month ("on the 5th").

    Raises:
        InvalidTimestampError: A phrase naming a time past the year 9999 ("in 9999").
    """
    if not isinstance(text, str) or not text.strip() or _DAY_ALONE.fullmatch(text.strip().lower()):
        return None
    return _parse(text.strip(), _aware(now))


def find_time_window(query: str, *, now: datetime) -> TimeWindow | None:
    """The window of the first time expression in a question ("What did we discuss last Tuesday?").

    Returns ``None`` for a question without one; words that only look like dates ("may I ask", "a second
    question", "since the last update", "3 retries", "at 5 pm") are not expressions (see the module docstring).

    Args:
        query: The question.
        now: The present (aware; a naive one is taken as UTC).
    """
    if not isinstance(query, str):
        return None
    head = query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS].rsplit(maxsplit=1)[0]
    lowered = head.lower()
    tokens = list(_TOKEN.finditer(lowered))
    words = [token.group() for token in tokens]
    if not could_fire(words):
        return None
    from dateparser.date import DateDataParser  # noqa: PLC0415 - lazy: dateparser takes ~0.2 s to import
    from dateparser.search import search_dates  # noqa: PLC0415

    now = _aware(now)
    settings = _settings(now)
    gaps = [lowered[a.end() : b.start()] for a, b in pairwise(tokens)]
    found = search_dates(head, languages=["en"], settings=settings) or []
    parser = DateDataParser(languages=["en"], settings=settings)
    cursor = 0
    for text, _ in found[:MAX_MATCHES]:
        match = re.compile(rf"(?<![a-z0-9]){re.escape(text.lower())}(?![a-z0-9])").search(lowered, cursor)
        if match is None:
            continue
        at, cursor = match.start(), match.end()
        index = sum(token.start() < at for token in tokens)
        end = sum(token.start() < cursor for token in tokens)
        if not fires(words, gaps, index, end):
            continue
        if is_range(words, index, end):
            return None
        try:
            window = _parse(text.strip(), now, parser)
        except InvalidTimestampError:  # past the year 9999
            continue
        if window is not None:
            return window if window.start <= now else None  # a future day names no memory
    return None


def time_bound(value: TimestampLike, *, what: str, now: datetime, end: bool) -> dict[str, float]:
    """The ``timestamp_epoch`` condition of a ``since`` (``end=False``) or ``until`` (``end=True``) value.

    ISO 8601 text, datetimes, dates and epoch seconds are the instant they name (``$gte`` / ``$lte``); a phrase
    ("last tuesday", "yesterday") gives the start of its window for ``since`` and for ``until`` its end, the whole
    day (week, ...) included (``$lt`` the next one).

    Raises:
        InvalidTimestampError: A value that is neither a time nor a phrase naming one (a bare number such as "1",
            a day without its month such as "on the 5th"), or a phrase past the year 9999.
    """
    try:
        at = parse_timestamp(value, what=what)
    except InvalidTimestampError:
        if not isinstance(value, str):
            raise
        expected = (
            "expected ISO 8601 such as '2026-02-06' or '2026-02-06T10:00:00+01:00', a datetime, epoch seconds, "
            f"or a phrase such as {', '.join(EXAMPLE_PHRASES)}"
        )
        try:
            window = resolve_time_phrase(value, now=now)
        except InvalidTimestampError:
            msg = f"Invalid {what} {value!r}: {_OUT_OF_RANGE}; {expected}."
            raise InvalidTimestampError(msg) from None
        if window is None:
            msg = f"Invalid {what} {value!r}: {expected}."
            raise InvalidTimestampError(msg) from None
        return {"$lt": window.end.timestamp()} if end else {"$gte": window.start.timestamp()}
    return {"$lte" if end else "$gte": at.timestamp()}


def time_span(since: TimestampLike | None, until: TimestampLike | None, *, now: datetime) -> dict[str, float]:
    """The ``timestamp_epoch`` operators of ``since`` and ``until`` (see :func:`time_bound`); empty without either.

    Raises:
        InvalidTimestampError: A value that is neither a time nor a phrase naming one.
        InvalidArgumentError: ``since`` after ``until`` (or a ``since`` window starting where ``until``'s ends).
    """
    span: dict[str, float] = {}
    if since is not None:
        span.update(time_bound(since, what="since", now=now, end=False))
    if until is not None:
        span.update(time_bound(until, what="until", now=now, end=True))
    start = span.get("$gte", -math.inf)
    if start > span.get("$lte", math.inf) or start >= span.get("$lt", math.inf):
        msg = f"since {since!r} is after until {until!r}: nothing lies between them; swap them or drop one."
        raise InvalidArgumentError(msg)
    return span


def window_option(value: object, boost: object, *, text: str, now: datetime) -> tuple[TimeWindow | None, float]:
    """The window of a ``time_window`` option and its ``time_boost``.

    ``"auto"`` finds one in ``text`` (the query) with :func:`find_time_window`; a phrase names it; ``None`` is off.

    Raises:
        InvalidArgumentError: Another value, a phrase past the year 9999, or a ``time_boost`` that is not a number >= 0.
        InvalidTimestampError: A phrase that names no time.
    """
    if isinstance(boost, bool) or not isinstance(boost, int | float) or not 0 <= boost < math.inf:
        msg = f"time_boost must be a number >= 0 (added to the scores of in-window memories), got {boost!r}."
        raise InvalidArgumentError(msg)
    if value is None or isinstance(value, TimeWindow):
        return value, float(boost)
    if not isinstance(value, str):
        msg = f"time_window must be 'auto', a phrase such as {', '.join(EXAMPLE_PHRASES)} or None, got {value!r}."
        raise InvalidArgumentError(msg)
    if value == "auto":
        return (find_time_window(text, now=now) if text else None), float(boost)
    try:
        window = resolve_time_phrase(value, now=now)
    except InvalidTimestampError:
        msg = (
            f"time_window {value!r} names a time out of range (the calendar ends in the year 9999): "
            f"use 'auto', None or a phrase such as {', '.join(EXAMPLE_PHRASES)}."
        )
        raise InvalidArgumentError(msg) from None
    if window is None:
        msg = f"time_window {value!r} names no time: use 'auto', None or a phrase such as {', '.join(EXAMPLE_PHRASES)}."
        raise InvalidTimestampError(msg)
    return window, float(boost)


def time_boost(
    score: float, epoch: float | None, window: TimeWindow | None, boost: float, extra: dict[str, Any]
) -> float:
    """A chunk's score plus ``boost`` when its time lies in ``window``.

    A boost, not a filter: a question may name the wrong day, and other memories stay reachable. It is added, not
    multiplied: "What did we discuss last Tuesday?" says little besides its date, so Tuesday's chunks score about as
    low as any (0.05 to 0.15 with all-MiniLM-L6-v2) and a factor would leave them behind any chunk that merely says
    "discuss". With ``boost=0.5`` an outside memory still ranks first when it is more relevant by over 0.5 (on the
    cosine scale). A boosted chunk's ``extra`` (its document's metadata) records ``time_window = [start, end]`` in
    ISO 8601, so users see why it ranked where it did.
    """
    if window is None or not window.holds(epoch):
        return score
    extra["time_window"] = window.as_metadata()
    return score + boost


def window_hits(
    replica: UserReplica,
    vector: Sequence[float],
    where: Where,
    fetch: int,
    *,
    only: set[str] | None,
    hits: list[tuple[Record, float]],
) -> list[tuple[Record, float]]:
    """The ``fetch`` chunks matching ``where`` (a window's condition) most similar to ``vector``, not yet in ``hits``.

    ``only`` is the search's candidate set when it has one (other options' filters): kept to it.
    """
    inside = replica.select(where)
    known = {record.id for record, _ in hits}
    found = replica.dense(vector, fetch, only=inside & only if only is not None else inside)
    return [(record, similarity) for record, similarity in found if record.id not in known]
