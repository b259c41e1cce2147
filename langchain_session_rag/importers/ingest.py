"""Importing read conversations into a memory: validated whole first, then stored session by session.

Re-importing stores nothing new: message ids come from the file (ChatGPT's) or from the session, position and
text, and chunk ids from the messages, so stored chunks are recognised. A conversation that went on since the
last import adds its new exchanges to its session. A note file that changed replaces its earlier version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from langchain_session_rag._checks import check_session_id, first_surrogate
from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.errors import (
    ImportFormatError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
)
from langchain_session_rag.importers.files import PathLike, read_conversations
from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, ImportReport, Skipped, SkippedList
from langchain_session_rag.memory.retriever import SessionVectorMemory, check_memory
from langchain_session_rag.stores.limits import check_name
from langchain_session_rag.stores.records import user_metadata

_REFUSED = (InvalidMessageError, InvalidArgumentError, InvalidMetadataError)
"""What validation refuses before writing: a conversation refused so is skipped and reported, the import goes on."""

Progress = Callable[[int, int, str], None]
"""Called after each session is stored: ``(done, total, session title or id)``."""


def _valid(conv: ImportedConversation, max_chars: int | None, problems: list[Skipped]) -> bool:
    broken = next((what for what, text in (("session id", conv.session_id), ("title", conv.title))
                   if first_surrogate(text) is not None), None)  # fmt: skip
    if broken is not None:
        problems.append(Skipped(conv.source, conv.label, f"its {broken} is not valid Unicode"))
        return False
    try:
        check_session_id(conv.session_id)
        check_name("session id", conv.session_id)
        user_metadata(_metadata(conv))  # the title is stored as metadata: bounded as any metadata
        normalize_messages(conv.messages, session_id=conv.session_id, max_chars=max_chars)
    except _REFUSED as exc:
        problems.append(Skipped(conv.source, conv.label, str(exc)))
        return False
    return True


def validate_batch(batch: ImportBatch, *, max_chars: int | None = None) -> list[Skipped]:
    """Check every conversation as ``add_messages`` will; drop the invalid ones from the batch, return why.

    Messages longer than ``max_chars`` (the memory's ``max_message_chars``), session ids and titles over the
    store's limits (:mod:`~langchain_session_rag.stores.limits`) are refused here, as ``add_messages`` refuses
    them, so an import never stops half-way.

    Raises nothing: a conversation that cannot be stored is reported, the others are kept.
    """
    problems: list[Skipped] = []
    batch.conversations = [c for c in batch.conversations if _valid(c, max_chars, problems)]
    batch.skipped += problems
    return problems


def _prepare(
    memory: SessionVectorMemory,
    paths: PathLike | Sequence[PathLike],
    file_format: str,
    strict: bool,
    max_bytes: int | None = None,
) -> ImportBatch:
    check_memory(memory)  # before any file is read
    batch = read_conversations(paths, file_format=file_format, max_bytes=max_bytes)
    validate_batch(batch, max_chars=memory.max_message_chars)
    if strict and batch.skipped:
        listed = "; ".join(f"{s.source}: {s.item}: {s.reason}" for s in batch.skipped[:5])
        msg = f"{batch.skipped_count:,} item(s) cannot be imported ({listed}); nothing was imported (strict)."
        raise ImportFormatError(msg)
    return batch


def _stored(memory: SessionVectorMemory, session: str) -> dict[str, Document]:
    """A session's stored chunks by id."""
    found: dict[str, Document] = {}
    page = 1000
    while True:
        docs = memory.list_memories(session_id=session, limit=page, offset=len(found))
        found.update({d.id: d for d in docs if d.id is not None})
        if len(docs) < page:
            return found


def _session_for(memory: SessionVectorMemory, conv: ImportedConversation) -> tuple[str, dict[str, Document]]:
    """The session a conversation goes to, and what it holds now.

    A conversation without an id of its own goes to the session named after its opening if that session holds
    an earlier state of it (every stored message is one of its messages), else to the one named after its content.
    """
    stored = _stored(memory, conv.session_id)
    if conv.fallback_session_id is None or not stored:
        return conv.session_id, stored
    mine = {t.id for t in normalize_messages(conv.messages, session_id=conv.session_id)}
    if {m for d in stored.values() for m in d.metadata.get("message_ids", [])} <= mine:
        return conv.session_id, stored
    return conv.fallback_session_id, _stored(memory, conv.fallback_session_id)


class _Tally:
    """What the import did to each session, for the report."""

    def __init__(self, batch: ImportBatch) -> None:
        self.report = ImportReport(
            files=dict(batch.formats), skipped=SkippedList(batch.skipped), renamed_sessions=batch.renamed_sessions
        )
        self.report.messages = sum(len(c.messages) for c in batch.conversations) + len(batch.documents)

    def record(self, memory: SessionVectorMemory, session: str, before: dict[str, Document], kept: set[str],
               *, ours: frozenset[str] | None) -> None:  # fmt: skip
        """Remove the session's chunks the new content replaced, and count.

        ``ours``: the ids of every message of the conversation (shown or abandoned), or ``None`` when it is part of
        a session only (a day of a daily log): nothing is removed then. A chunk is replaced when it is not among
        ``kept`` and each message it holds is ours: a chunk holding anything else is never removed.
        """
        after = _stored(memory, session)
        stale = [
            i
            for i, doc in after.items()
            if ours is not None and i not in kept and set(doc.metadata.get("message_ids") or []) <= ours
        ]
        if stale:
            memory.forget(ids=stale)
        now = {i: d for i, d in after.items() if i not in stale}
        report = self.report
        report.chunks_added += len(now.keys() - before.keys())
        report.chunks_removed += len(stale)
        changed = now.keys() != before.keys() or any(now[i].page_content != before[i].page_content for i in now)
        sessions = [*report.new_sessions, *report.updated_sessions, *report.unchanged_sessions]
        if session in sessions:  # a session in two files (a daily log across midnight): counted once
            if changed and session in report.unchanged_sessions:
                report.unchanged_sessions.remove(session)
                report.updated_sessions.append(session)
            return
        target = (
            report.new_sessions if not before else report.updated_sessions if changed else report.unchanged_sessions
        )
        target.append(session)


def import_conversations(
    memory: SessionVectorMemory,
    paths: PathLike | Sequence[PathLike],
    *,
    file_format: str = "auto",
    strict: bool = False,
    progress: Progress | None = None,
    max_bytes: int | None = None,
) -> ImportReport:
    """Import chat exports, chat logs and notes into ``memory`` (its user), one session per conversation.

    Every file is read and every conversation validated before anything is written: a file that cannot be read
    raises and nothing is stored; a conversation that cannot be stored (no text on its branch, a bad message) is
    skipped and reported, unless ``strict``. Formats: a ChatGPT ``conversations.json`` or export zip (the branch
    shown, timestamps from ``create_time``), OpenAI-format ``.jsonl`` / ``.json`` (all roles, tool calls with name
    and arguments), LangChain message dumps, daily logs and markdown notes (see :func:`read_conversations`).

    Example:
        .. code-block:: python

            import json

            from langchain_session_rag import SessionVectorMemory, import_conversations

            memory = SessionVectorMemory.local(path="./memory", user_id="alice")
            chat = [{"role": "user", "content": "My bike is a blue Gazelle."}, {"role": "assistant", "content": "OK."}]
            with open("chats.jsonl", "w", encoding="utf-8") as f:  # or a ChatGPT conversations.json / export zip
                print(json.dumps({"messages": chat}), file=f)
            report = import_conversations(memory, "chats.jsonl")
            assert len(report.new_sessions) == 1
            assert import_conversations(memory, "chats.jsonl").chunks_added == 0  # a re-import stores nothing

    ``max_bytes``: the most bytes read from one file (default 256 MiB; see :func:`read_conversations` for the
    other reading limits).

    Raises:
        FileAccessError: A path that does not exist or cannot be read, or is not a regular file (nothing is stored).
        ImportFormatError: A file not in a readable format, or (``strict``) any conversation skipped.
        ImportLimitError: A file over a reading limit (size, zip ratio, JSON nesting): nothing is stored.
    """
    batch = _prepare(memory, paths, file_format, strict, max_bytes)
    tally = _Tally(batch)
    total = len(batch.conversations) + len(batch.documents)
    for done, conv in enumerate(batch.conversations, start=1):
        session, before = _session_for(memory, conv)
        try:
            ids = memory.add_messages(conv.messages, session_id=session, metadata=_metadata(conv))
        except _REFUSED as exc:  # refused whole before anything was written: this one is skipped, the rest go on
            tally.report.skipped.append(Skipped(conv.source, conv.label, str(exc)))
            continue
        ours = {t.id for t in normalize_messages(conv.messages, session_id=session)} | conv.abandoned_ids
        tally.record(memory, session, before, set(ids), ours=frozenset(ours) if conv.complete else None)
        if progress is not None:
            progress(done, total, conv.label)
    for done, (session, docs) in enumerate(batch.documents.items(), start=len(batch.conversations) + 1):
        before = _stored(memory, session)
        try:
            ids = memory.add_documents(docs, session_id=session)
        except _REFUSED as exc:
            tally.report.skipped.append(Skipped(session, "notes", str(exc)))
            continue
        tally.record(memory, session, before, set(ids), ours=frozenset())  # an edited note replaces its last version
        if progress is not None:
            progress(done, total, session)
    return tally.report


def _metadata(conv: ImportedConversation) -> dict[str, str] | None:
    return {"title": conv.title} if conv.title else None


async def aimport_conversations(
    memory: SessionVectorMemory,
    paths: PathLike | Sequence[PathLike],
    *,
    file_format: str = "auto",
    strict: bool = False,
    progress: Progress | None = None,
    max_bytes: int | None = None,
) -> ImportReport:
    """Async :func:`import_conversations`."""
    return await asyncio.to_thread(
        import_conversations,
        memory,
        paths,
        file_format=file_format,
        strict=strict,
        progress=progress,
        max_bytes=max_bytes,
    )
