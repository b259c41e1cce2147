"""Markdown: the package's own daily logs (messages), and a person's own notes (reference documents).

A daily log file (``logs/<user>/<YYYY-MM-DD>.md``, see :mod:`~langchain_session_rag.memory.daily_log`) gives back
its sessions message by message, with their ids and times. Any other markdown file is a note: stored as a
reference document named after the file (``[D: projects.md]``), dated by a ``YYYY-MM-DD`` in its name, else by
the file's modification time, one session per file (``notes-<file name>-<hash of its path>``).
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path

from langchain_core.documents import Document

from langchain_session_rag.errors import ImportFormatError
from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, Skipped
from langchain_session_rag.memory.daily_log import parse_daily_log_text

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def parse_daily_log(path: Path, text: str, source: str) -> ImportBatch:
    """The sessions of one daily log file (its text as read), each message with its logged id and time."""
    sessions: dict[str, dict[str, dict[str, object]]] = {}
    messages = parse_daily_log_text(text, where=source, user_id=path.resolve().parent.name)
    if not messages:
        msg = f"{source} holds no message in the session-rag daily log format."
        raise ImportFormatError(msg)
    for message in messages:  # an edited message: its last text, in its first place
        sessions.setdefault(message.session_id, {})[message.id] = message.as_message()
    batch = ImportBatch()
    for session_id, by_id in sessions.items():
        batch.conversations.append(  # a day of the session: other days hold the rest of it
            ImportedConversation(session_id=session_id, messages=list(by_id.values()), source=source, complete=False)
        )
    return batch


def _date_of(path: Path) -> datetime:
    found = _DATE.search(path.name)
    if found:
        try:
            year, month, day = (int(g) for g in found.groups())
            return datetime(year, month, day, tzinfo=timezone.utc)
        except ValueError:  # 2025-13-45: not a date
            pass
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)


def parse_notes(path: Path, text: str, source: str) -> ImportBatch:
    """One markdown note file as a reference document (split into parts when stored)."""
    batch = ImportBatch()
    if not text.strip():
        batch.skipped.append(Skipped(source, path.name, "an empty note"))
        return batch
    doc = Document(page_content=text.strip(), metadata={"name": path.name, "timestamp": _date_of(path).isoformat()})
    where = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]  # two todo.md in two folders: two notes
    batch.documents[batch.document_session(f"notes-{path.name}-{where}")] = [doc]
    return batch
