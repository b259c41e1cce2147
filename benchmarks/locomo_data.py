"""Loading LoCoMo conversations (read in place, never copied) with the package's ``load_locomo``.

Where the data comes from, first found wins: an explicit path (the benchmarks' ``--data PATH``), the
``LOCOMO_PATH`` environment variable, else the small sample bundled in ``benchmarks/data/`` (conv-26, sessions
1-4; see its README), so that a clean checkout runs. Results name the file they were measured on.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from langchain_session_rag.evaluation import LocomoConversation as Conversation
from langchain_session_rag.evaluation import LocomoQuestion as Question
from langchain_session_rag.evaluation import LocomoSession as Session
from langchain_session_rag.evaluation import load_locomo
from langchain_session_rag.evaluation.locomo_data import describe_locomo

__all__ = [
    "REPORT_SPLIT",
    "SAMPLE_PATH",
    "TUNE_SPLIT",
    "Conversation",
    "Question",
    "Session",
    "add_data_argument",
    "data_path",
    "describe",
    "is_sample",
    "load",
]

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
    return describe_locomo(conversations, source=name)


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--data PATH`` (default: ``$LOCOMO_PATH``, else the bundled sample)."""
    parser.add_argument(
        "--data", default=None, help="LoCoMo JSON file (default: $LOCOMO_PATH, else the bundled sample)"
    )


def load(path: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """Conversations of ``path`` (see :func:`data_path` for the default), read by the package's ``load_locomo``."""
    return load_locomo(data_path(path))
