"""LoCoMo's data set: its JSON read into conversations, sessions (as ``add_messages`` takes them) and questions.

LoCoMo (Maharana et al. 2024, CC BY-NC 4.0) holds long two-person conversations split into dated sessions, and
questions whose ``evidence`` names the turns (``dia_id``) that answer them. :func:`load_locomo` reads it with
errors that name the sample and the key at fault; :mod:`~langchain_session_rag.evaluation.locomo` scores the
memory on it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

from langchain_session_rag.errors import FileAccessError, InvalidMessageError
from langchain_session_rag.memory.reading import load_json, read_bounded

CATEGORIES: dict[int, str] = {4: "single", 1: "multi", 2: "temporal", 3: "open", 5: "adv"}
"""LoCoMo's question categories (the number in its JSON) and their names, in the paper's table order."""
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SHAPE = "a LoCoMo sample holds 'sample_id', 'conversation' (speakers, sessions and their dates) and 'qa'"
_T = TypeVar("_T")


# -- the conversations --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LocomoQuestion:
    """A question about one conversation, with the turns that answer it."""

    question: str
    """The question text."""
    category: str
    """Its category name, one of :data:`CATEGORIES`' values (``"single"``, ``"multi"``, ...)."""
    evidence: tuple[str, ...]
    """The ``dia_id`` values of the turns that answer it (ids of the conversation's turns only; may be empty)."""


@dataclass(frozen=True)
class LocomoSession:
    """One dated session of a conversation."""

    session_id: str
    """``"session_N"``."""
    date: datetime
    """When the session took place (UTC)."""
    messages: list[dict[str, Any]]
    """The turns as ``add_messages`` takes them: ``role``, ``name``, ``id`` (the ``dia_id``), ``content``,
    ``timestamp`` (the session date); the first speaker is the ``"user"``."""


@dataclass(frozen=True)
class LocomoConversation:
    """One LoCoMo sample: two speakers' sessions and the questions asked about them."""

    sample_id: str
    """LoCoMo's id, e.g. ``"conv-26"``."""
    speakers: tuple[str, str]
    """``speaker_a`` (stored as the user) and ``speaker_b``."""
    sessions: list[LocomoSession]
    """The sessions in order."""
    questions: list[LocomoQuestion]
    """The questions, in the file's order (also those without evidence, which are not scored)."""

    @property
    def turn_ids(self) -> frozenset[str]:
        """The ids of every turn of the conversation."""
        return frozenset(m["id"] for s in self.sessions for m in s.messages)


def load_locomo(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> list[LocomoConversation]:
    """Read LoCoMo's JSON: a list of samples, each with ``sample_id``, ``conversation`` and ``qa``.

    Evidence is normalised to the conversation's ``dia_id`` values (``"D1:3"``; LoCoMo also writes ``"D1:03"``,
    ``"D:1:3"`` and several ids in one string); ids of no turn are dropped. A photo a speaker shares is appended to
    the turn's text as ``[shares a photo: CAPTION]``.

    Args:
        path: The JSON file, e.g. ``locomo10.json``: a regular file (a device or FIFO is refused).
        max_bytes: The most bytes read (default 256 MiB, or the ``SESSION_RAG_MAX_FILE_BYTES`` environment
            variable; ``locomo10.json`` is 2.8 MB).

    Returns:
        The conversations in the file's order.

    Raises:
        FileAccessError: The file is missing or cannot be read, or is not a regular file.
        InvalidMessageError: The file is not UTF-8 JSON, or not in LoCoMo's format (the message names the sample
            and the missing or malformed key).
        ImportLimitError: The file is larger than ``max_bytes`` or nested deeper than 256 levels.
    """
    try:
        raw = read_bounded(path, max_bytes=max_bytes)
    except FileAccessError as exc:
        msg = f"Cannot read the LoCoMo file {str(path)!r}: {exc}"
        raise FileAccessError(msg) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}: not UTF-8 text (byte {exc.start}), so not LoCoMo's JSON."
        raise InvalidMessageError(msg) from exc

    def error(exc: json.JSONDecodeError) -> InvalidMessageError:
        msg = f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); is the file complete?"
        return InvalidMessageError(msg)

    samples = load_json(text, str(path), error)
    if not isinstance(samples, list) or not samples:
        found = f"a {type(samples).__name__}" if samples else "nothing"
        msg = f"{path}: LoCoMo's JSON is a non-empty list of samples, found {found}; {_SHAPE}."
        raise InvalidMessageError(msg)
    return [_conversation(sample, f"{path}: sample {index}") for index, sample in enumerate(samples)]


def _conversation(sample: object, where: str) -> LocomoConversation:
    """One sample; ``where`` names it in errors ("FILE: sample 3")."""
    if not isinstance(sample, dict):
        msg = f"{where} is a {type(sample).__name__}, not an object; {_SHAPE}."
        raise InvalidMessageError(msg)
    sample_id = _get(sample, "sample_id", str, where)
    where = f"{where} ({sample_id})"
    conv = _get(sample, "conversation", dict, where)
    speakers = (_get(conv, "speaker_a", str, where), _get(conv, "speaker_b", str, where))
    numbers = sorted(int(key.split("_")[1]) for key in conv if re.fullmatch(r"session_\d+", key) and conv[key])
    sessions = [_session(conv, n, speakers[0], where) for n in numbers]
    known = {m["id"] for s in sessions for m in s.messages}
    questions = [_question(qa, known, f"{where} question {i}") for i, qa in enumerate(_get(sample, "qa", list, where))]
    return LocomoConversation(sample_id=sample_id, speakers=speakers, sessions=sessions, questions=questions)


def _session(conv: dict[str, Any], number: int, user: str, where: str) -> LocomoSession:
    key = f"session_{number}"
    when = _get(conv, f"{key}_date_time", str, where)
    try:
        date = datetime.strptime(when.strip(), _DATE_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError as exc:
        msg = f"{where}: {key}_date_time {when!r} is not a LoCoMo date like '1:56 pm on 8 May, 2023'."
        raise InvalidMessageError(msg) from exc
    messages = []
    for index, turn in enumerate(_get(conv, key, list, where)):
        at = f"{where} {key} turn {index}"
        if not isinstance(turn, dict):
            msg = f"{at} is a {type(turn).__name__}, not an object with 'speaker', 'dia_id' and 'text'."
            raise InvalidMessageError(msg)
        speaker = _get(turn, "speaker", str, at)
        text = _get(turn, "text", str, at)
        if turn.get("blip_caption"):
            text = f"{text} [shares a photo: {turn['blip_caption']}]"
        messages.append(
            {
                "role": "user" if speaker == user else "assistant",
                "name": speaker,
                "id": _get(turn, "dia_id", str, at),
                "content": text,
                "timestamp": date.isoformat(),
            }
        )
    return LocomoSession(session_id=key, date=date, messages=messages)


def _question(qa: object, known: set[str], where: str) -> LocomoQuestion:
    if not isinstance(qa, dict):
        msg = f"{where} is a {type(qa).__name__}, not an object with 'question', 'category' and 'evidence'."
        raise InvalidMessageError(msg)
    number = _get(qa, "category", object, where)
    category = next((name for n, name in CATEGORIES.items() if str(n) == str(number).strip()), None)
    if category is None:
        msg = f"{where}: category {number!r} is none of LoCoMo's ({', '.join(map(str, sorted(CATEGORIES)))})."
        raise InvalidMessageError(msg)
    raw = qa.get("evidence") or []
    if not isinstance(raw, list | str):
        msg = f"{where}: 'evidence' is a {type(raw).__name__}, expected a list of dia_ids like 'D1:3'."
        raise InvalidMessageError(msg)
    evidence: list[str] = []
    for item in [raw] if isinstance(raw, str) else raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if match:
                dia = f"D{int(match.group(1))}:{int(match.group(2))}"
                if dia in known and dia not in evidence:
                    evidence.append(dia)
    return LocomoQuestion(question=_get(qa, "question", str, where), category=category, evidence=tuple(evidence))


def _get(mapping: Mapping[str, Any], key: str, kind: type[_T], where: str) -> _T:
    """``mapping[key]`` if it is a ``kind``; else an :class:`InvalidMessageError` naming ``where`` and ``key``."""
    if key not in mapping:
        msg = f"{where} has no {key!r} key; {_SHAPE}."
        raise InvalidMessageError(msg)
    value = mapping[key]
    if not isinstance(value, kind):
        msg = f"{where}: {key!r} is a {type(value).__name__}, which is not LoCoMo's format; {_SHAPE}."
        raise InvalidMessageError(msg)
    return value


def describe_locomo(conversations: Sequence[LocomoConversation], *, source: str | None = None) -> str:
    """A one-line description of the data: its name, conversations, turns and questions with evidence.

    Args:
        conversations: The conversations.
        source: How to name the data (e.g. the file name); ``"LoCoMo data"`` when not given.
    """
    ids = ", ".join(c.sample_id for c in conversations)
    turns = sum(len(s.messages) for c in conversations for s in c.sessions)
    questions = sum(1 for c in conversations for q in c.questions if q.evidence)
    return f"{source or 'LoCoMo data'} ({ids}; {turns} turns, {questions} questions with evidence)"
