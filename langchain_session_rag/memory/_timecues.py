"""What a question must say for a date word in it to name a time of the conversation (see ``timewindow``).

Memories are past, and most date words in questions are not about them: "a good sunday brunch", "runs every
Monday", "should the backup run on Sunday?", "how to compute 3 weeks ago in python". A match of dateparser fires
only when the question refers to the past: a past-tense cue anywhere in it ("did", "was", "said", "ago",
"yesterday", "last", ...) or an explicit date (a day with its month, a year, "2026-03-05"). A weekday also needs
"last", "on", "this", "since" or "past" before it (not after "every", "each", "a" or "next") and must end its
clause or be followed by a preposition or pronoun ("on Sunday, we", "last Tuesday about"; not "Sunday service").
In a question about code ("python", "regex", "cron", ...), numeric dates are examples, not times, and "ago" is one
only with another past-tense cue ("What was the python bug we fixed two weeks ago?").
"""

from __future__ import annotations

MAX_QUERY_CHARS = 500
"""Questions are short: only their first 500 characters are searched (a 70 KB paste would take seconds)."""
MAX_MATCHES = 8
"""dateparser's matches examined, at most."""

WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})
MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb apr jun jul aug sep sept oct nov dec".split()
)
"""Month names; ``mar`` is left out (a verb), ``may`` needs a preposition or a day number like the others."""
DAYS = frozenset({"today", "yesterday"})
UNITS = frozenset("day days week weeks month months year years".split())
RELATIVE = frozenset({"last", "this", "past", "previous"})
PREPOSITIONS = frozenset(
    {"in", "on", "during", "since", "until", "till", "before", "after", "from", "of", "by", "around", "last", "this"}
)
PAST_CUES = frozenset(
    "did didn was wasn were weren had hadn said told discussed talked asked mentioned decided happened went ago "
    "yesterday last since ran met made got saw spoke wrote planned agreed".split()
)
CODE_WORDS = frozenset("python compute parse parsing parser format function code cron regex datetime strftime".split())
_WEEKDAY_BEFORE = frozenset({"last", "on", "this", "since", "past"})
_REPEATS = frozenset({"every", "each", "a", "next"})
_WEEKDAY_AFTER = frozenset(
    "at in about with and or to for when we i you he she they morning afternoon evening night".split()
)
_RANGE_START = frozenset({"from", "between"})
_RANGE_END = frozenset({"to", "until", "till", "through", "and"})
_YEAR_MIN, _YEAR_MAX = 1900, 2200


def is_code(words: list[str]) -> bool:
    """Whether a question is about code: its "ago" and numeric dates are then not times."""
    return any(w in CODE_WORDS for w in words)


def refers_to_past(words: list[str]) -> bool:
    """Whether a question holds a past-tense cue ("did", "was", "ago", "yesterday", "last", ...)."""
    code = is_code(words)
    return any(w in PAST_CUES and not (code and w == "ago") for w in words)


def could_fire(words: list[str]) -> bool:
    """A cheap screen before dateparser is loaded: a date word with a past-tense cue, or a number (a date)."""
    if not any(w.isdigit() for w in words) and not refers_to_past(words):
        return False
    vocabulary = DAYS | WEEKDAYS | MONTHS | UNITS
    return any(w in vocabulary or (w.isdigit() and len(w) == 4) for w in words)  # noqa: PLR2004


def _weekday(words: list[str], gaps: list[str], at: int) -> bool:
    """Whether the weekday ``words[at]`` names a past day ("last Tuesday?"), not a repeat or an attribute."""
    if at == 0 or words[at - 1] not in _WEEKDAY_BEFORE or (at > 1 and words[at - 2] in _REPEATS):
        return False
    return at + 1 == len(words) or bool(gaps[at].strip()) or words[at + 1] in _WEEKDAY_AFTER


def fires(words: list[str], gaps: list[str], index: int, end: int) -> bool:
    """Whether the tokens ``words[index:end]`` of a dateparser match name a past time of the conversation.

    ``words`` are the question's tokens, ``gaps[i]`` the text between ``words[i]`` and the next token.
    """
    found = words[index:end]
    before = words[index - 1] if index > 0 else ""
    if before == "next" or "next" in found:  # memories are past
        return False
    past, code = refers_to_past(words), is_code(words)
    digits = sum(w.isdigit() for w in found)
    for i, word in enumerate(found):
        prev = found[i - 1] if i > 0 else before
        if (word in DAYS and past) or (word in WEEKDAYS and past and _weekday(words, gaps, index + i)):
            return True
        if word in UNITS and past and ("ago" in found or prev in RELATIVE):  # code: past needs another cue
            return True
        if word in MONTHS and (digits or (past and prev in PREPOSITIONS)):
            return True
        year = word.isdigit() and len(word) == 4 and _YEAR_MIN <= int(word) <= _YEAR_MAX  # noqa: PLR2004
        if year and ((prev in PREPOSITIONS and digits < 3) or (digits >= 3 and not code)):  # noqa: PLR2004 - y, m, d
            return True
    return False


def is_range(words: list[str], index: int, end: int) -> bool:
    """Whether a match opens a range ("from 1990 to 2000", "between Monday and ..."): not read by halves."""
    opens = words[index] in _RANGE_START or (index > 0 and words[index - 1] in _RANGE_START)
    return opens and end < len(words) and words[end] in _RANGE_END
