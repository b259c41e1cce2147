"""Loading LoCoMo conversations (read in place, never copied).

Where the data comes from, first found wins: an explicit path (the benchmarks' ``--data PATH``), the
``LOCOMO_PATH`` environment variable, else the small sample bundled in ``benchmarks/data/`` (conv-26, sessions
1-4; see its README), so that a clean checkout runs. Results name the file they were measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SAMPLE_PATH = Path(__file__).resolve().parent / "data" / "locomo_sample.json"
"""The bundled excerpt of LoCoMo (CC BY-NC 4.0), used when no other file is given."""
TUNE_SPLIT = ("conv-26", "conv-30")
"""Dev conversations parameters are chosen on."""
REPORT_SPLIT = ("conv-41", "conv-42", "conv-43")
"""Dev conversations results are reported on (never used to choose anything)."""


def data_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The LoCoMo file to read: ``path``, else ``$LOCOMO_PATH``, else the bundled sample."""
    chosen = Path(path or os.environ.get("LOCOMO_PATH") or SAMPLE_PATH)
    if not chosen.exists():
        msg = f"LoCoMo data not found at {chosen}; pass --data PATH or set LOCOMO_PATH to locomo_dev.json"
        raise FileNotFoundError(msg)
    return chosen


def is_sample(path: Path) -> bool:
    """Whether ``path`` is the bundled sample."""
    return path.resolve() == SAMPLE_PATH


def describe(path: Path, conversations: list[Conversation]) -> str:
    """A one-line description of the data measured, for results files."""
    name = "bundled sample benchmarks/data/locomo_sample.json" if is_sample(path) else path.name
    ids = ", ".join(c.sample_id for c in conversations)
    turns = sum(len(s.messages) for c in conversations for s in c.sessions)
    questions = sum(1 for c in conversations for q in c.questions if q.evidence)
    return f"{name} ({ids}; {turns} turns, {questions} questions with evidence)"


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--data PATH`` (default: ``$LOCOMO_PATH``, else the bundled sample)."""
    parser.add_argument(
        "--data", default=None, help="LoCoMo JSON file (default: $LOCOMO_PATH, else the bundled sample)"
    )


@dataclass
class Session:
    session_id: str
    date: datetime
    messages: list[dict[str, Any]]


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)

    @property
    def turn_ids(self) -> set[str]:
        return {m["id"] for s in self.sessions for m in s.messages}


def parse_date(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"``."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _normalise_evidence(raw: list[str], known: set[str]) -> list[str]:
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia in known and dia not in out:
                    out.append(dia)
    return out


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn["text"])
    if turn.get("blip_caption"):
        text = f"{text} [shares a photo: {turn['blip_caption']}]"
    return text


def load(path: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """Conversations of ``path`` (see :func:`data_path` for the default)."""
    samples = json.loads(data_path(path).read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for sample in samples:
        conv = sample["conversation"]
        speaker_a, speaker_b = conv["speaker_a"], conv["speaker_b"]
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and conv[k])
        sessions = []
        for n in numbers:
            date = parse_date(conv[f"session_{n}_date_time"])
            messages = [
                {
                    "role": "user" if turn["speaker"] == speaker_a else "assistant",
                    "name": turn["speaker"],
                    "id": turn["dia_id"],
                    "content": turn_text(turn),
                    "timestamp": date.isoformat(),
                }
                for turn in conv[f"session_{n}"]
            ]
            sessions.append(Session(session_id=f"session_{n}", date=date, messages=messages))
        c = Conversation(sample_id=sample["sample_id"], speakers=(speaker_a, speaker_b), sessions=sessions)
        known = c.turn_ids
        for qa in sample["qa"]:
            evidence = _normalise_evidence(qa.get("evidence", []), known)
            c.questions.append(Question(question=qa["question"], category=int(qa["category"]), evidence=evidence))
        conversations.append(c)
    return conversations
