"""Importing read conversations into a memory: validated whole first, then stored session by session.

Re-importing stores nothing new: message ids come from the file (ChatGPT's) or from the session, position and
text, and chunk ids from the messages, so stored chunks are recognised. A conversation that went on since the
last import adds its new exchanges to its session. A note file that changed replaces its earlier version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from langchain_session_rag._checks import check_session_id
from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.errors import ImportFormatError, InvalidArgumentError, InvalidMessageError
from langchain_session_rag.importers.files import PathLike, read_conversations
from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, ImportReport, Skipped
from langchain_session_rag.memory.retriever import SessionVectorMemory

__all__ = ["Progress", "aimport_conversations", "import_conversations", "validate_batch"]

Progress = Callable[[int, int, str], None]
"""Called after each session is stored: ``(done, total, session title or id)``."""


def _valid(conv: ImportedConversation, max_chars: int | None, problems: list[Skipped]) -> bool:
    try:
        check_session_id(conv.session_id)
        normalize_messages(conv.messages, session_id=conv.session_id, max_chars=max_chars)
    except (InvalidMessageError, InvalidArgumentError) as exc:
        problems.append(Skipped(conv.source, conv.label, str(exc)))
        return False
    return True


def validate_batch(batch: ImportBatch, *, max_chars: int | None = None) -> list[Skipped]:
    """Check every conversation as ``add_messages`` will; drop the invalid ones from the batch, return why.

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
) -> tuple[ImportBatch, dict[str, set[str]]]:
    batch = read_conversations(paths, file_format=file_format)
    validate_batch(batch, max_chars=memory.max_message_chars)
    if strict and batch.skipped:
        listed = "; ".join(f"{s.source}: {s.item}: {s.reason}" for s in batch.skipped[:5])
        msg = f"{len(batch.skipped)} item(s) cannot be imported ({listed}); nothing was imported (strict)."
        raise ImportFormatError(msg)
    return batch, memory.chunk_ids()


def _report(memory: SessionVectorMemory, batch: ImportBatch, before: dict[str, set[str]]) -> ImportReport:
    after = memory.chunk_ids()
    added = set().union(*after.values()) - set().union(*before.values())
    report = ImportReport(files=dict(batch.formats), skipped=list(batch.skipped), chunks_added=len(added))
    sessions = [c.session_id for c in batch.conversations] + list(batch.documents)
    for session in dict.fromkeys(sessions):
        if session not in before:
            report.new_sessions.append(session)
        elif after.get(session) != before[session]:
            report.updated_sessions.append(session)
        else:
            report.unchanged_sessions.append(session)
    report.messages = sum(len(c.messages) for c in batch.conversations) + len(batch.documents)
    return report


def _store_notes(memory: SessionVectorMemory, session: str, docs: list[Document]) -> None:
    """Store a note file's parts, then drop the parts of its earlier version (an edit replaces the note)."""
    ids = set(memory.add_documents(docs, session_id=session))
    stale: list[str] = []
    offset, page = 0, 1000
    while True:
        stored = memory.list_memories(session_id=session, limit=page, offset=offset)
        stale += [d.id for d in stored if d.id is not None and d.id not in ids]
        if len(stored) < page:
            break
        offset += page
    if stale:
        memory.forget(ids=stale)


def import_conversations(
    memory: SessionVectorMemory,
    paths: PathLike | Sequence[PathLike],
    *,
    file_format: str = "auto",
    strict: bool = False,
    progress: Progress | None = None,
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

    Raises:
        FileAccessError: A path that does not exist or cannot be read (nothing is stored).
        ImportFormatError: A file not in a readable format, or (``strict``) any conversation skipped.
    """
    batch, before = _prepare(memory, paths, file_format, strict)
    total = len(batch.conversations) + len(batch.documents)
    for done, conv in enumerate(batch.conversations, start=1):
        memory.add_messages(conv.messages, session_id=conv.session_id, metadata=_metadata(conv))
        if progress is not None:
            progress(done, total, conv.label)
    for done, (session, docs) in enumerate(batch.documents.items(), start=len(batch.conversations) + 1):
        _store_notes(memory, session, docs)
        if progress is not None:
            progress(done, total, session)
    return _report(memory, batch, before)


def _metadata(conv: ImportedConversation) -> dict[str, str] | None:
    return {"title": conv.title} if conv.title else None


async def aimport_conversations(
    memory: SessionVectorMemory,
    paths: PathLike | Sequence[PathLike],
    *,
    file_format: str = "auto",
    strict: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Async :func:`import_conversations`."""
    return await asyncio.to_thread(
        import_conversations, memory, paths, file_format=file_format, strict=strict, progress=progress
    )
