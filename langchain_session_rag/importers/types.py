"""What an importer reads from a file: conversations, reference documents, and what it skipped and why."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from langchain_core.documents import Document

__all__ = [
    "FORMAT_NAMES",
    "Format",
    "ImportBatch",
    "ImportReport",
    "ImportedConversation",
    "Skipped",
    "content_session_id",
    "derived_ids",
]

Format = Literal["chatgpt", "chatgpt-zip", "openai-jsonl", "openai-json", "langchain", "daily-log", "markdown"]
"""The file formats the importers read (``"auto"`` picks one from the file)."""
FORMAT_NAMES: tuple[str, ...] = get_args(Format)


@dataclass(frozen=True)
class ImportedConversation:
    """One conversation read from a file: a session of messages as ``add_messages`` takes them."""

    session_id: str
    messages: list[dict[str, Any]]
    """Dicts ``{"role", "content", "id"?, "name"?, "timestamp"?, "tool_calls"?}``."""
    title: str = ""
    source: str = ""
    """The file it was read from."""
    where: str = ""
    """Where in the file (``"line 3"``), for reports."""
    complete: bool = True
    """It is the whole conversation (an export's): stored chunks of its session that it no longer covers are stale
    (an answer regenerated, a question edited since the last import) and are removed. A day of a daily log holds
    part of a session: not complete."""
    abandoned_ids: frozenset[str] = frozenset()
    """Ids of this conversation's messages that are not on the branch shown (answers regenerated, questions edited):
    stored chunks holding them are removed."""
    fallback_session_id: str | None = None
    """For a conversation without an id of its own, ``session_id`` comes from its opening messages, so a
    conversation that went on keeps its session; this id, from its whole content, is used instead when a different
    conversation with the same opening already holds that session."""

    @property
    def label(self) -> str:
        """How a report names it: its title, else its place in the file, else its session id."""
        return self.title or self.where or self.session_id


@dataclass(frozen=True)
class Skipped:
    """Something of a file that was not imported, and why."""

    source: str
    item: str
    """What was skipped (a conversation's title or id, a line number, a message)."""
    reason: str


@dataclass
class ImportBatch:
    """Everything read from one or more files, validated, before anything is written."""

    conversations: list[ImportedConversation] = field(default_factory=list)
    documents: dict[str, list[Document]] = field(default_factory=dict)
    """Reference documents (a person's own markdown notes) by session id: one session per file."""
    skipped: list[Skipped] = field(default_factory=list)
    formats: dict[str, str] = field(default_factory=dict)
    """The format each file was read as."""

    def extend(self, other: ImportBatch) -> None:
        """Add another batch's contents to this one."""
        self.conversations += other.conversations
        self.documents.update(other.documents)
        self.skipped += other.skipped
        self.formats.update(other.formats)


@dataclass
class ImportReport:
    """What an import stored: sessions new, grown and unchanged (a re-import stores nothing), and what it skipped."""

    files: dict[str, str] = field(default_factory=dict)
    """Each file and the format it was read as."""
    new_sessions: list[str] = field(default_factory=list)
    updated_sessions: list[str] = field(default_factory=list)
    """Sessions already stored that the import added to (a conversation that went on since the last import)."""
    unchanged_sessions: list[str] = field(default_factory=list)
    messages: int = 0
    """Messages read (conversations) plus note sections (documents)."""
    chunks_added: int = 0
    """Chunks the store holds now that it did not before (a grown session's new segments, an edited note's)."""
    chunks_removed: int = 0
    """Stored chunks replaced: of conversations that changed (a regenerated answer, an edited question, new
    exchanges grouped anew) and of edited notes. Their text stays in an embedded store's files until
    ``memory.compact()``."""
    skipped: list[Skipped] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "files": self.files,
            "new_sessions": self.new_sessions,
            "updated_sessions": self.updated_sessions,
            "unchanged_sessions": self.unchanged_sessions,
            "messages": self.messages,
            "chunks_added": self.chunks_added,
            "chunks_removed": self.chunks_removed,
            "skipped": [{"source": s.source, "item": s.item, "reason": s.reason} for s in self.skipped],
        }


def content_session_id(prefix: str, messages: list[dict[str, Any]]) -> str:
    """A session id from a conversation's content, for files that name none: the same conversation, the same id."""
    text = json.dumps(messages, sort_keys=True, ensure_ascii=True, default=str)  # ASCII: lone surrogates hash too
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def derived_ids(prefix: str, messages: list[dict[str, Any]]) -> tuple[str, str]:
    """Session ids for a conversation without an id: of its opening message, and of its whole content.

    The first is kept as the conversation goes on; the second (never equal to it) is for when another conversation
    with that opening holds the first.
    """
    return content_session_id(prefix, messages[:1]), content_session_id(f"{prefix}-full", messages)
