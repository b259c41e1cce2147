"""What an importer reads from a file: conversations, reference documents, and what it skipped and why."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from langchain_core.documents import Document
from typing_extensions import Self

from langchain_session_rag._checks import safe_session_id

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
    original_session_id: str | None = None
    """The id the file gave, when it is not fit to store (a line break, a control character, too long): then
    ``session_id`` is the fit id :func:`~langchain_session_rag._checks.safe_session_id` derives from it."""

    def __post_init__(self) -> None:
        """Map an unfit session id (a file's ``id`` can hold anything) to a fit one, keeping the original."""
        safe = safe_session_id(self.session_id)
        if safe != self.session_id:
            object.__setattr__(self, "original_session_id", self.session_id)
            object.__setattr__(self, "session_id", safe)

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


MAX_SKIPPED_KEPT = 100
"""Most skipped items a batch or report keeps (the first ones); the rest are counted in ``skipped_count``."""


class SkippedList(list[Skipped]):
    """A list of skipped items that keeps the first :data:`MAX_SKIPPED_KEPT` and counts every one in :attr:`total`.

    A hostile file can hold millions of broken items (``[{"mapping": {}}, ...]``): the report stays small.
    """

    def __init__(self, items: Iterable[Skipped] = ()) -> None:
        """Start from ``items`` (a :class:`SkippedList`'s count of dropped items carries over)."""
        super().__init__()
        self.total = 0
        self.extend(items)

    def append(self, item: Skipped) -> None:
        """Count ``item``; keep it while fewer than :data:`MAX_SKIPPED_KEPT` are kept."""
        self.total += 1
        if len(self) < MAX_SKIPPED_KEPT:
            super().append(item)

    def extend(self, items: Iterable[Skipped]) -> None:
        """Append each of ``items`` (with the items another :class:`SkippedList` only counted)."""
        dropped = items.total - len(items) if isinstance(items, SkippedList) else 0
        for item in list(items):
            self.append(item)
        self.total += dropped

    def __iadd__(self, items: Iterable[Skipped]) -> Self:  # type: ignore[override,misc]
        """``skipped += items``: as :meth:`extend`."""
        self.extend(items)
        return self


class _WithSkipped:
    """What a batch and a report share: the items skipped, bounded (each declares its ``skipped`` field)."""

    skipped: list[Skipped]

    def __post_init__(self) -> None:
        """Keep ``skipped`` bounded whatever list it was given."""
        self.skipped = SkippedList(self.skipped)

    @property
    def skipped_count(self) -> int:
        """How many items were skipped in all (``skipped`` keeps the first :data:`MAX_SKIPPED_KEPT`)."""
        return getattr(self.skipped, "total", len(self.skipped))


@dataclass
class ImportBatch(_WithSkipped):
    """Everything read from one or more files, validated, before anything is written."""

    conversations: list[ImportedConversation] = field(default_factory=list)
    documents: dict[str, list[Document]] = field(default_factory=dict)
    """Reference documents (a person's own markdown notes) by session id: one session per file."""
    skipped: list[Skipped] = field(default_factory=SkippedList)
    """The first :data:`MAX_SKIPPED_KEPT` items skipped, and why (all of them are counted in ``skipped_count``)."""
    formats: dict[str, str] = field(default_factory=dict)
    """The format each file was read as."""
    renamed_documents: dict[str, str] = field(default_factory=dict)
    """Session ids of documents that were not fit to store (a file name with a line break), and the ids used."""

    def extend(self, other: ImportBatch) -> None:
        """Add another batch's contents to this one."""
        self.conversations += other.conversations
        self.documents.update(other.documents)
        self.skipped += other.skipped
        self.formats.update(other.formats)
        self.renamed_documents.update(other.renamed_documents)

    def document_session(self, session_id: str) -> str:
        """A fit session id for documents (``session_id`` itself when fit); a renamed one is remembered."""
        safe = safe_session_id(session_id)
        if safe != session_id:
            self.renamed_documents[session_id] = safe
        return safe

    @property
    def renamed_sessions(self) -> dict[str, str]:
        """Every session id of the files that was not fit to store, and the fit id it is stored under."""
        renamed = {c.original_session_id: c.session_id for c in self.conversations if c.original_session_id}
        return renamed | self.renamed_documents


@dataclass
class ImportReport(_WithSkipped):
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
    skipped: list[Skipped] = field(default_factory=SkippedList)
    """The first :data:`MAX_SKIPPED_KEPT` items skipped, and why (all of them are counted in ``skipped_count``)."""
    renamed_sessions: dict[str, str] = field(default_factory=dict)
    """Session ids of the files that were not fit to store (a line break, a control character, over 512
    characters), each with the id its session was stored under: the readable part and a hash of the original, the
    same on every import of the file."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        data = asdict(self)
        renamed = data.pop("renamed_sessions")  # last, as before
        skipped = [asdict(s) for s in self.skipped]
        return {**data, "skipped": skipped, "skipped_count": self.skipped_count, "renamed_sessions": renamed}


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
