"""Loading LoCoMo conversations from ../shared/data/locomo (read in place, never copied)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def data_path() -> Path:
    path = Path(os.environ.get("LOCOMO_PATH", DEFAULT_PATH))
    if not path.exists():
        msg = f"LoCoMo data not found at {path}; set LOCOMO_PATH to locomo_dev.json"
        raise FileNotFoundError(msg)
    return path


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


def load(path: Path | None = None) -> list[Conversation]:
    samples = json.loads((path or data_path()).read_text(encoding="utf-8"))
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
