"""Time expressions as windows, and time-aware retrieval ("What did we discuss last Tuesday?")."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import click
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.cli.store_commands import _PERIOD
from langchain_session_rag.errors import InvalidArgumentError, InvalidTimestampError
from langchain_session_rag.memory.retrieval import build_query, time_conditions
from langchain_session_rag.memory.timewindow import find_time_window, resolve_time_phrase

Factory = Callable[..., SessionVectorMemory]
UTC = timezone.utc
WEDNESDAY = datetime(2026, 3, 11, 15, 0, tzinfo=UTC)
NEW_YEAR = datetime(2026, 1, 2, 9, 0, tzinfo=UTC)  # a Friday


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def span(now: datetime, phrase: str) -> tuple[datetime, datetime]:
    window = resolve_time_phrase(phrase, now=now)
    assert window is not None, phrase
    return window.start, window.end


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("yesterday", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("today", utc(2026, 3, 11), utc(2026, 3, 12)),
        ("last Tuesday", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("last monday", utc(2026, 3, 9), utc(2026, 3, 10)),
        ("Thursday", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("two weeks ago", utc(2026, 2, 23), utc(2026, 3, 2)),  # the week (Monday to Monday) holding Feb 25
        ("3 days ago", utc(2026, 3, 8), utc(2026, 3, 9)),
        ("in March", utc(2026, 3, 1), utc(2026, 4, 1)),  # the current March: it began before now
        ("in May", utc(2025, 5, 1), utc(2025, 6, 1)),  # the most recent May
        ("on March 5", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("March 5th", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("March 12", utc(2025, 3, 12), utc(2025, 3, 13)),  # tomorrow's date: last year's
        ("2026-03-05", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("3/5/2026", utc(2026, 3, 5), utc(2026, 3, 6)),  # month first
        ("last week", utc(2026, 3, 2), utc(2026, 3, 9)),
        ("this week", utc(2026, 3, 9), utc(2026, 3, 16)),
        ("last month", utc(2026, 2, 1), utc(2026, 3, 1)),
        ("last year", utc(2025, 1, 1), utc(2026, 1, 1)),
        ("in 2025", utc(2025, 1, 1), utc(2026, 1, 1)),
    ],
)
def test_a_phrase_is_the_whole_day_week_month_or_year_it_names(phrase: str, start: datetime, end: datetime) -> None:
    assert span(WEDNESDAY, phrase) == (start, end)


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("yesterday", utc(2026, 1, 1), utc(2026, 1, 2)),
        ("3 days ago", utc(2025, 12, 30), utc(2025, 12, 31)),
        ("last week", utc(2025, 12, 22), utc(2025, 12, 29)),
        ("this week", utc(2025, 12, 29), utc(2026, 1, 5)),  # across the new year
        ("last month", utc(2025, 12, 1), utc(2026, 1, 1)),
        ("last year", utc(2025, 1, 1), utc(2026, 1, 1)),
        ("in December", utc(2025, 12, 1), utc(2026, 1, 1)),
        ("in March", utc(2025, 3, 1), utc(2025, 4, 1)),  # the most recent March not after now
        ("December 31", utc(2025, 12, 31), utc(2026, 1, 1)),
    ],
)
def test_phrases_across_a_year_boundary(phrase: str, start: datetime, end: datetime) -> None:
    assert span(NEW_YEAR, phrase) == (start, end)


def test_days_are_those_of_nows_timezone() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    just_after_midnight = datetime(2026, 3, 11, 0, 30, tzinfo=tokyo)  # still March 10 in UTC
    assert span(just_after_midnight, "yesterday") == (
        datetime(2026, 3, 10, tzinfo=tokyo),
        datetime(2026, 3, 11, tzinfo=tokyo),
    )
    assert span(just_after_midnight.astimezone(UTC), "yesterday") == (utc(2026, 3, 9), utc(2026, 3, 10))
    new_york = ZoneInfo("America/New_York")  # clocks went forward on Sunday 2026-03-08: a 23-hour day
    start, end = span(datetime(2026, 3, 9, 10, 0, tzinfo=new_york), "yesterday")
    assert (start.isoformat(), end.isoformat()) == ("2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00")
    assert end.timestamp() - start.timestamp() == timedelta(hours=23).total_seconds()
    naive = datetime(2026, 3, 11, 15, 0)  # noqa: DTZ001 - taken as UTC
    assert span(naive, "last tuesday") == (utc(2026, 3, 10), utc(2026, 3, 11))


def test_the_window_moves_with_now() -> None:
    tuesday = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    assert span(tuesday, "last tuesday") == (utc(2026, 3, 3), utc(2026, 3, 4))  # not today
    assert span(WEDNESDAY, "last tuesday") == (utc(2026, 3, 10), utc(2026, 3, 11))
    assert span(tuesday, "last tuesday") == (utc(2026, 3, 3), utc(2026, 3, 4))  # nothing kept from the call above


@pytest.mark.parametrize("phrase", ["", "   ", "blue moon", "the quarterly report"])
def test_a_phrase_naming_no_time_is_none(phrase: str) -> None:
    assert resolve_time_phrase(phrase, now=WEDNESDAY) is None


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did we discuss last Tuesday?", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("What did I say on March 5?", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("what happened two weeks ago with the deploy", utc(2026, 2, 23), utc(2026, 3, 2)),
        ("What did we decide yesterday about the API?", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("tell me what we planned last month", utc(2026, 2, 1), utc(2026, 3, 1)),
        ("However we met in May, right?", utc(2025, 5, 1), utc(2025, 6, 1)),  # "we" is not Wednesday
        ("anything from 2026-03-05?", utc(2026, 3, 5), utc(2026, 3, 6)),
        ("what did we plan in 2025", utc(2025, 1, 1), utc(2026, 1, 1)),
        ("I ran 5 km on Sunday, remember?", utc(2026, 3, 8), utc(2026, 3, 9)),
    ],
)
def test_a_time_expression_is_found_inside_a_question(question: str, start: datetime, end: datetime) -> None:
    window = find_time_window(question, now=WEDNESDAY)
    assert window is not None
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline go to the support group?",
        "What changed since the last update?",
        "What was the last step of the migration?",
        "may I ask about the deploy?",
        "a second question about Postgres",
        "summarise it in one sentence",
        "what is on my March playlist?",  # a bare month name is a name, not a time
        "the march of progress",
        "it failed after 3 retries",
        "upgrade to version 2.5",
        "upgrade to version 2024.1",
        "we meet at 5 pm",
        "what now?",
        "we rate it 10/10",
        "is port 8080 open?",
        "what is planned for next week?",  # memories are past
        "what is planned for next Tuesday?",
        "I sat down with Sam",
        "give me a day",
        "a few years of data",
    ],
)
def test_words_that_only_look_like_dates_find_nothing(question: str) -> None:
    assert find_time_window(question, now=WEDNESDAY) is None


def test_dateparser_is_loaded_only_for_a_question_with_a_date_word() -> None:
    script = (
        "import sys, datetime as d; import langchain_session_rag\n"
        "from langchain_session_rag.memory.timewindow import find_time_window\n"
        "now = d.datetime(2026, 3, 11, tzinfo=d.timezone.utc)\n"
        "assert 'dateparser' not in sys.modules, 'imported with the package'\n"
        "assert find_time_window('When did Caroline go to the support group?', now=now) is None\n"
        "assert 'dateparser' not in sys.modules, 'imported for a question without a date word'\n"
        "assert find_time_window('What did we discuss yesterday?', now=now) is not None\n"
        "assert 'dateparser' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_since_and_until_phrases_are_the_bounds_of_their_windows() -> None:
    assert time_conditions("last tuesday", "yesterday", now=WEDNESDAY) == {
        "timestamp_epoch": {"$gte": utc(2026, 3, 10).timestamp(), "$lt": utc(2026, 3, 11).timestamp()}
    }
    assert time_conditions(None, "last week", now=WEDNESDAY) == {
        "timestamp_epoch": {"$lt": utc(2026, 3, 9).timestamp()}
    }
    iso = {"timestamp_epoch": {"$gte": utc(2026, 2, 10).timestamp(), "$lte": utc(2026, 2, 11).timestamp()}}
    assert time_conditions("2026-02-10", "2026-02-11T00:00:00Z", now=WEDNESDAY) == iso  # instants, as before
    assert time_conditions(utc(2026, 2, 10), utc(2026, 2, 11).timestamp()) == iso
    query = build_query({"since": "yesterday", "now": WEDNESDAY}, {"k": 4}, fetch_k=4)
    assert query.where == {"timestamp_epoch": {"$gte": utc(2026, 3, 10).timestamp()}}


def test_an_unreadable_since_names_the_value_and_the_accepted_phrases() -> None:
    with pytest.raises(InvalidTimestampError, match=r"Invalid since 'blue moon'.*'last tuesday'"):
        time_conditions("blue moon", None)
    with pytest.raises(InvalidTimestampError, match="Invalid until 'not a date'"):
        build_query({"until": "not a date"}, {"k": 4}, fetch_k=4)
    with pytest.raises(InvalidTimestampError, match="Invalid since True"):
        time_conditions(True, None)  # noqa: FBT003


@pytest.mark.parametrize(
    ("options", "error", "fragment"),
    [
        ({"time_window": "blue moon"}, InvalidTimestampError, "time_window 'blue moon' names no time"),
        ({"time_window": 3}, InvalidArgumentError, "time_window must be 'auto', a phrase"),
        (
            {"time_boost": -1},
            InvalidArgumentError,
            "time_boost must be a number >= 0 (added to the scores of in-window memories), got -1",
        ),
        ({"time_boost": True}, InvalidArgumentError, "got True"),
    ],
)
def test_bad_time_window_options_are_refused(options: dict[str, Any], error: type[Exception], fragment: str) -> None:
    with pytest.raises(error, match=re.escape(fragment)):
        build_query(options, {"k": 4}, fetch_k=4, text="What did we discuss last Tuesday?")


# -- time-aware retrieval with the real model ----------------------------------------------------------------------
SESSIONS = {
    "thu": ("2026-03-05T10:00:00", "We talked through the plan for the hiking trip to the Alps.", "The Alps trip plan sounds great."),
    "fri": ("2026-03-06T10:00:00", "Our discussion covered the new onboarding checklist for hires.", "I'll write up the onboarding discussion."),
    "mon": ("2026-03-09T10:00:00", "Can we discuss what we discussed in the meeting? Let's discuss it again.", "Sure, we can discuss the meeting topics again."),
    "tue": ("2026-03-10T10:00:00", "I switched the billing service database from MySQL to Postgres.", "Good call: Postgres handles the billing queries better."),
}  # fmt: skip
"""One exchange a day. Monday's says "discuss" three times: on words alone it answers "what did we discuss"."""
QUESTION = "What did we discuss last Tuesday?"


def sessions_by_day(make_memory: Factory, **kwargs: Any) -> SessionVectorMemory:
    memory = make_memory(**kwargs)
    for session_id, (stamp, question, answer) in SESSIONS.items():
        messages = [
            {"role": "user", "content": question, "timestamp": stamp},
            {"role": "assistant", "content": answer, "timestamp": stamp},
        ]
        memory.add_messages(messages, session_id=session_id)
    return memory


def ranked(docs: list[Any]) -> list[str]:
    return [d.metadata["session_id"] for d in docs]


def test_a_question_naming_a_day_ranks_that_days_memories_first(make_memory: Factory) -> None:
    memory = sessions_by_day(make_memory)
    plain = memory.model_copy(update={"time_aware": False})
    assert ranked(plain.invoke(QUESTION, now=WEDNESDAY))[0] == "mon"
    docs = memory.invoke(QUESTION, now=WEDNESDAY)
    assert ranked(docs)[0] == "tue"
    assert set(ranked(docs)) == set(SESSIONS)  # a boost, not a filter: the other days are still there
    marks = {d.metadata["session_id"]: d.metadata.get("time_window") for d in docs}
    assert marks == {
        "tue": ["2026-03-10T00:00:00+00:00", "2026-03-11T00:00:00+00:00"],
        "thu": None,
        "fri": None,
        "mon": None,
    }
    assert ranked(memory.invoke(QUESTION, now=WEDNESDAY, time_window=None))[0] == "mon"  # off for one call
    assert ranked(plain.invoke("What did we discuss?", now=WEDNESDAY, time_window="last friday"))[0] == "fri"


def test_a_question_without_a_time_expression_is_ranked_as_before(make_memory: Factory) -> None:
    memory = sessions_by_day(make_memory)
    plain = memory.model_copy(update={"time_aware": False})
    for question in ("When did we pick Postgres?", "what did we discuss", "may I ask about the hiking trip?"):
        aware = [
            (d.id, d.metadata["score"], "time_window" in d.metadata) for d in memory.invoke(question, now=WEDNESDAY)
        ]
        assert aware == [(d.id, d.metadata["score"], False) for d in plain.invoke(question, now=WEDNESDAY)]


def test_the_windows_memories_are_candidates_when_the_search_misses_them(make_memory: Factory) -> None:
    memory = sessions_by_day(make_memory, fetch_k=1, lexical_weight=0.0)
    plain = memory.model_copy(update={"time_aware": False})
    assert "tue" not in ranked(plain.invoke(QUESTION, now=WEDNESDAY, k=2))  # the least similar of the four
    assert ranked(memory.invoke(QUESTION, now=WEDNESDAY, k=2))[0] == "tue"


async def test_ainvoke_is_time_aware_too(make_memory: Factory) -> None:
    memory = sessions_by_day(make_memory)
    docs = await memory.ainvoke(QUESTION, now=WEDNESDAY)
    assert ranked(docs) == ranked(memory.invoke(QUESTION, now=WEDNESDAY))
    assert ranked(docs)[0] == "tue"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"since": "last tuesday"}, {"tue"}),
        ({"until": "last friday"}, {"thu", "fri"}),  # Friday included
        ({"until": "last week"}, {"thu", "fri"}),  # the week of Mar 2 to Mar 8
        ({"since": "last week", "until": "last week"}, {"thu", "fri"}),
        ({"since": "this week"}, {"mon", "tue"}),
        ({"since": "2026-03-06", "until": "2026-03-09T10:00:00"}, {"fri", "mon"}),  # ISO instants, as before
    ],
)
def test_since_and_until_phrases_filter_a_real_memory(
    make_memory: Factory, options: dict[str, Any], expected: set[str]
) -> None:
    memory = sessions_by_day(make_memory)
    assert set(ranked(memory.invoke("what did we talk about", k=10, now=WEDNESDAY, **options))) == expected


def test_phrases_in_search_kwargs_are_checked_when_the_memory_is_built(make_memory: Factory) -> None:
    with pytest.raises(ValueError, match="Invalid since 'sometime'"):  # pydantic's error, holding ours
        make_memory(search_kwargs={"since": "sometime"})
    memory = sessions_by_day(make_memory, search_kwargs={"since": "last tuesday"})
    assert set(ranked(memory.invoke("what did we talk about", k=10, now=WEDNESDAY))) == {"tue"}


def test_a_store_that_searches_itself_is_time_aware_too(make_memory: Factory, real_embeddings: Any) -> None:
    store = InMemoryVectorStore(embedding=real_embeddings)  # embeds itself: searched in the store, not the replica
    memory = sessions_by_day(
        lambda **kw: SessionVectorMemory(vectorstore=store, user_id="alice", **kw), fetch_k=1, lexical_weight=0.0
    )
    plain = memory.model_copy(update={"time_aware": False})
    assert "tue" not in ranked(plain.invoke(QUESTION, now=WEDNESDAY, k=2))
    docs = memory.invoke(QUESTION, now=WEDNESDAY, k=2)
    assert ranked(docs)[0] == "tue"
    assert docs[0].metadata["time_window"] == ["2026-03-10T00:00:00+00:00", "2026-03-11T00:00:00+00:00"]


# -- values out of range, bare numbers, since after until ------------------------------------------------------------
@pytest.mark.parametrize("phrase", ["in 9999", "9999-12-31 at noon"])
def test_a_phrase_past_the_last_year_is_a_typed_error_naming_it(phrase: str) -> None:
    with pytest.raises(InvalidTimestampError, match=rf"Invalid since {re.escape(repr(phrase))}: .*out of range"):
        time_conditions(phrase, None, now=WEDNESDAY)
    with pytest.raises(InvalidTimestampError, match=rf"Invalid until {re.escape(repr(phrase))}: .*out of range"):
        build_query({"until": phrase, "now": WEDNESDAY}, {"k": 4}, fetch_k=4)
    with pytest.raises(InvalidArgumentError, match=rf"time_window {re.escape(repr(phrase))} .*out of range"):
        build_query({"time_window": phrase, "now": WEDNESDAY}, {"k": 4}, fetch_k=4, text="x")
    with pytest.raises(click.BadParameter, match=rf"{re.escape(repr(phrase))} .*out of range"):
        _PERIOD.convert(phrase, None, None)
    assert find_time_window(f"What did we plan on {phrase}?", now=WEDNESDAY) is None


def test_the_last_day_of_the_calendar_is_a_cli_period() -> None:
    start, end = _PERIOD.convert("9999-12-31", None, None)
    assert (start, end) == (utc(9999, 12, 31), datetime.max.replace(tzinfo=UTC))


@pytest.mark.parametrize("value", ["1", "12", "-1", "+3", "1.5", "5th", "the 5th", "on the 5th", "on 5", " 7 "])
def test_a_bare_number_or_a_day_alone_is_refused_with_examples(value: str) -> None:
    pattern = rf"Invalid since {re.escape(repr(value))}: .*'yesterday', 'last tuesday'"
    with pytest.raises(InvalidTimestampError, match=pattern):
        time_conditions(value, None, now=WEDNESDAY)
    with pytest.raises(InvalidTimestampError, match=rf"time_window {re.escape(repr(value))} names no time"):
        build_query({"time_window": value, "now": WEDNESDAY}, {"k": 4}, fetch_k=4, text="x")
    with pytest.raises(click.BadParameter, match="is neither a date"):
        _PERIOD.convert(value, None, None)
    assert resolve_time_phrase(value, now=WEDNESDAY) is None


@pytest.mark.parametrize("phrase", ["on the 5th of March", "March 5th", "3/5/2026", "in 2025"])
def test_a_day_with_its_month_or_a_year_is_still_read(phrase: str) -> None:
    assert resolve_time_phrase(phrase, now=WEDNESDAY) is not None


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("yesterday", "last week"),
        ("today", "yesterday"),  # the window of since starts where that of until ends: nothing between
        ("2026-03-10", "2026-03-09T23:00:00Z"),
        (utc(2026, 3, 10), "last week"),
    ],
)
def test_since_after_until_is_refused_naming_both(since: Any, until: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"since {re.escape(repr(since))} .*until {re.escape(repr(until))}"):
        time_conditions(since, until, now=WEDNESDAY)


def test_since_equal_to_until_is_one_instant_and_allowed() -> None:
    stamp = utc(2026, 3, 10).timestamp()
    assert time_conditions("2026-03-10", "2026-03-10", now=WEDNESDAY) == {
        "timestamp_epoch": {"$gte": stamp, "$lte": stamp}
    }
    assert time_conditions("yesterday", "yesterday", now=WEDNESDAY) == {
        "timestamp_epoch": {"$gte": stamp, "$lt": stamp + 86400}
    }


# -- what a question must say to name a time of the conversation -----------------------------------------------------
@pytest.mark.parametrize(
    "question",
    [
        "What's a good sunday brunch?",  # a weekday as an attribute
        "What did we say about the Sunday service?",
        "Change my backup cron so it runs every Monday instead of nightly",  # a repeat, not a day
        "Set a cron job for every monday",
        "What did we do each Friday?",
        "I listen to Second Sunday",
        "Should the database backup run on Sunday?",  # future or imperative: no past-tense cue
        "Will it work on Sunday?",
        "Remind me of the plan this week",
        "How to compute 3 weeks ago in python",  # code questions: 'ago' and ISO dates are not times
        "Fix the date parsing in 2024-01-01 format",
        "Why did the regex match 2024-01-01?",
    ],
)
def test_ordinary_questions_with_date_words_find_nothing(question: str) -> None:
    assert find_time_window(question, now=WEDNESDAY) is None


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("yesterday", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("what did we discuss on Sunday morning?", utc(2026, 3, 8), utc(2026, 3, 9)),
        ("What did we decide about the cron job last Tuesday?", utc(2026, 3, 10), utc(2026, 3, 11)),
        ("What did I say on 3 June, 2023?", utc(2023, 6, 3), utc(2023, 6, 4)),
        ("notes on 3 June, 2023", utc(2023, 6, 3), utc(2023, 6, 4)),  # an explicit date needs no past tense
        ("the trip in August 2023", utc(2023, 8, 1), utc(2023, 9, 1)),
        ("what was said this week?", utc(2026, 3, 9), utc(2026, 3, 16)),
        # a question about code with another past-tense cue: its "ago" is a time
        ("What was the python bug we fixed two weeks ago?", utc(2026, 2, 23), utc(2026, 3, 2)),
    ],
)
def test_questions_about_a_past_time_still_find_it(question: str, start: datetime, end: datetime) -> None:
    window = find_time_window(question, now=WEDNESDAY)
    assert window is not None, question
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize(
    "question",
    [
        "Is Friday the 13th unlucky?",
        "What did we decide for 2026-03-20?",  # after now: memories are past
        "what did we plan on March 20, 2026?",
        "what did we say about 2027",
        "what happened from 1990 to 2000",  # a range is not half-read
        "What did we do from March to May?",
        "from last Monday to Tuesday, what did we say?",
        "between Monday and Wednesday what did we discuss",
        "what did we say from 2026-03-01 to 2026-03-05",
    ],
)
def test_future_windows_and_ranges_find_nothing(question: str) -> None:
    assert find_time_window(question, now=WEDNESDAY) is None


def test_only_the_start_of_a_long_query_is_searched() -> None:
    assert find_time_window("monday " * 10_000, now=WEDNESDAY) is None  # 70 KB: returns, finding nothing
    log = "".join(f"2026-03-0{1 + i % 9}T10:00:00 worker {i} started\n" for i in range(300))
    assert find_time_window(log, now=WEDNESDAY) is not None  # its first timestamp, read from the first lines
    padding = " and then some more words" * 3_000
    window = find_time_window("What did we discuss last Tuesday?" + padding, now=WEDNESDAY)
    assert window is not None
    assert (window.start, window.end) == (utc(2026, 3, 10), utc(2026, 3, 11))
    assert find_time_window(padding + " What did we discuss last Tuesday?", now=WEDNESDAY) is None  # past 500 chars
