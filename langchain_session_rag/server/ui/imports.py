"""The Import page: upload a ChatGPT export, chat logs or a ``session-rag export``; progress, then the report.

The page streams: the browser shows each step as the import reaches it (no script), then the import's report.
The upload is kept in a private temporary folder only while it is imported.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.datastructures import UploadFile

from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.importers.ingest import import_conversations
from langchain_session_rag.importers.types import FORMAT_NAMES, ImportReport
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.html import esc, notice, table, url

EXPORT = "session-rag-export"
"""The format choice of a ``session-rag export`` file (chunks, not conversations)."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
PROGRESS_EVERY = 0.5
"""Seconds between two progress lines."""


def upload_form(csrf: str, limit: int) -> str:
    """The upload form (a file and its format)."""
    options = "".join(
        f'<option value="{esc(v)}">{esc(label)}</option>'
        for v, label in [("auto", "Found from the file"), *((n, n) for n in FORMAT_NAMES),
                         (EXPORT, "session-rag export (JSONL of chunks)")]
    )  # fmt: skip
    return (
        f'<form method="post" action="{url("import")}" enctype="multipart/form-data" aria-label="Import a file">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        '<div class="field"><label for="f-file">Chat history file</label>'
        '<input id="f-file" name="file" type="file" required aria-describedby="f-file-hint">'
        f'<span class="hint" id="f-file-hint">A ChatGPT export (the zip or conversations.json), OpenAI-format '
        f".jsonl/.json chats, a LangChain message dump, markdown notes, or a session-rag export; at most "
        f"{limit // 1_048_576:,} MiB. Importing the same file again stores nothing new.</span></div>"
        f'<div class="field"><label for="f-format">Format</label><select id="f-format" name="format">{options}'
        '</select></div><button type="submit">Import</button></form>'
    )


def saved_upload(upload: UploadFile) -> Path:
    """The upload copied into a new private folder under its own (cleaned) name; the importers go by the name."""
    folder = Path(tempfile.mkdtemp(prefix="session-rag-upload-"))
    name = _SAFE.sub("_", Path(upload.filename or "upload").name).strip("._") or "upload"
    path = folder / name
    with path.open("wb") as out:
        shutil.copyfileobj(upload.file, out, length=1_048_576)
    return path


def report_html(report: ImportReport) -> str:
    """The import's report: files and formats, sessions new / grown / unchanged, chunks, what was skipped."""
    files = table(
        "Files", ["File", "Read as"], [[esc(Path(n).name), esc(f)] for n, f in report.files.items()], empty=""
    )
    rows = [
        ["New sessions", str(len(report.new_sessions))],
        ["Sessions added to", str(len(report.updated_sessions))],
        ["Sessions already stored", str(len(report.unchanged_sessions))],
        ["Messages read", str(report.messages)],
        ["Chunks stored", str(report.chunks_added)],
        ["Chunks replaced", str(report.chunks_removed)],
        ["Skipped", str(report.skipped_count)],
    ]
    skipped = table("Skipped, and why", ["Source", "Item", "Reason"],
                    [[esc(s.source), esc(s.item), esc(s.reason)] for s in report.skipped], empty="")  # fmt: skip
    return files + table("Import report", ["What", "Count"], rows, empty="") + skipped


async def import_stream(
    mine: SessionVectorMemory, path: Path, file_format: str, page: tuple[str, str], writing: asyncio.Lock
) -> AsyncIterator[str]:
    """The page, as the import goes: its start, a line per step (at most two a second), the report, its end.

    ``page``: the markup before and after the body. The import holds ``writing`` (the pages' write lock) from start
    to end.
    """
    head, tail = page
    loop = asyncio.get_running_loop()
    steps: asyncio.Queue[str] = asyncio.Queue()
    last = [0.0]

    def progress(done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            loop.call_soon_threadsafe(steps.put_nowait, f"{done} of {total}: {label}")

    def run() -> str:
        if file_format == EXPORT:
            added = mine.import_jsonl(path)
            return notice(f"Imported {added} new chunk(s) from {path.name}.")
        report = import_conversations(mine, path, file_format=file_format, progress=progress)
        mine.flush()
        return notice(f"Imported {path.name}: {len(report.new_sessions)} new session(s).") + report_html(report)

    yield head + f'<p>Importing {esc(path.name)}…</p><ol class="progress" aria-label="Progress">'
    await writing.acquire()
    job = asyncio.ensure_future(asyncio.to_thread(run))
    job.add_done_callback(lambda _: writing.release())
    try:
        while not job.done() or not steps.empty():
            try:
                step = await asyncio.wait_for(steps.get(), timeout=0.25)
            except asyncio.TimeoutError:
                continue
            yield f"<li>{esc(step)}</li>"
        try:
            result = job.result()
        except SessionRAGError as exc:
            result = notice(f"Nothing was imported: {exc}", kind="error")
        yield "</ol>" + result + f'<p><a href="{url("sessions")}">See the sessions</a></p>' + tail
    finally:
        if not job.done():
            await asyncio.wait([job])  # the browser left: the import still finishes before its file is removed
        shutil.rmtree(path.parent, ignore_errors=True)
