"""The Import page: upload a ChatGPT export, chat logs or a ``session-rag export``; progress, then the report.

The page streams: the browser shows each step as the import reaches it (no script), then the import's report.
The upload is copied to a private temporary folder, imported, and the folder removed; an accepted upload is
imported to its end even when its page is closed meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from starlette.datastructures import UploadFile

from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.importers.ingest import import_conversations
from langchain_session_rag.importers.types import FORMAT_NAMES, ImportReport
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.context import Pages
from langchain_session_rag.server.ui.html import HEADERS, PREFIX, esc, notice, shell, table, url

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
        f"{limit / 1_048_576:,.0f} MiB. Importing the same file again stores nothing new.</span></div>"
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


_RUNNING: set[asyncio.Future[str]] = set()
"""Imports under way (held here: a page closed meanwhile must not let an import be collected half done)."""


@dataclass
class ImportJob:
    """An import under way: its steps as they come, and the page's end (the report, or why nothing was stored)."""

    name: str
    steps: asyncio.Queue[str]
    result: asyncio.Future[str]


def start_import(mine: SessionVectorMemory, path: Path, file_format: str, writing: asyncio.Lock) -> ImportJob:
    """Import the upload's copy at ``path`` in a worker thread, holding ``writing`` (the pages' write lock).

    It runs to its end whatever becomes of the page that started it, and removes the copy's folder then.
    """
    loop = asyncio.get_running_loop()
    steps: asyncio.Queue[str] = asyncio.Queue()
    last = [0.0]

    def progress(done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            loop.call_soon_threadsafe(steps.put_nowait, f"{done} of {total}: {label}")

    def run() -> str:
        try:
            if file_format == EXPORT:
                added = mine.import_jsonl(path)
                return notice(f"Imported {added} new chunk(s) from {path.name}.")
            report = import_conversations(mine, path, file_format=file_format, progress=progress)
            mine.flush()
            return notice(f"Imported {path.name}: {len(report.new_sessions)} new session(s).") + report_html(report)
        except SessionRAGError as exc:
            said = str(exc).replace(f"{path.parent}{os.sep}", "")  # the file's name, not the server's folder
            return notice(f"Nothing was imported: {said}", kind="error")
        finally:
            shutil.rmtree(path.parent, ignore_errors=True)

    async def locked() -> str:
        async with writing:
            return await asyncio.to_thread(run)

    result = asyncio.ensure_future(locked())
    _RUNNING.add(result)
    result.add_done_callback(_RUNNING.discard)
    return ImportJob(path.name, steps, result)


async def import_page(job: ImportJob, page: tuple[str, str]) -> AsyncIterator[str]:
    """The page, as the import goes: its start, a line per step (at most two a second), the report, its end."""
    head, tail = page
    yield head + f'<p>Importing {esc(job.name)}…</p><ol class="progress" aria-label="Progress">'
    while not job.result.done() or not job.steps.empty():
        try:
            step = await asyncio.wait_for(job.steps.get(), timeout=0.25)
        except asyncio.TimeoutError:
            continue
        yield f"<li>{esc(step)}</li>"
    yield "</ol>" + job.result.result() + f'<p><a href="{url("sessions")}">See the sessions</a></p>' + tail


FORM_SLACK = 1_048_576
"""Bytes an upload's form may add to the file itself (boundaries, the other fields)."""


def add_import_routes(app: FastAPI, pages: Pages) -> None:
    """Import: the upload form, and the streamed import."""

    @app.get(f"{PREFIX}/import", include_in_schema=False)
    async def import_start(request: Request) -> Response:
        seen, _ = pages.viewer(request)
        return pages.shown("Import", upload_form(seen.csrf, pages.upload_limit), seen, "import")

    @app.post(f"{PREFIX}/import", include_in_schema=False)
    async def import_file(request: Request) -> Response:
        seen, mine = pages.viewer(request)
        limit = pages.upload_limit
        size = request.headers.get("content-length", "")
        problem = (
            "The upload did not say its size (Content-Length): send it from the form, as browsers do."
            if not size.isdigit()
            else f"The file is over this server's limit of {limit:,} bytes."
            if int(size) > limit + FORM_SLACK
            else ""
        )
        if problem:
            body = notice(problem, kind="error") + upload_form(seen.csrf, limit)
            return pages.shown("Import", body, seen, "import", 411 if not size.isdigit() else 413)
        form = await pages.access.form(request, seen)
        upload, file_format = form.get("file"), str(form.get("format", "auto"))
        if not isinstance(upload, UploadFile) or not upload.filename:
            body = notice("Choose a file to import.", kind="error") + upload_form(seen.csrf, limit)
            return pages.shown("Import", body, seen, "import", 400)
        if (upload.size or 0) > limit:  # the exact size, now that the form is read
            body = notice(f"The file is over this server's limit of {limit:,} bytes.", kind="error")
            return pages.shown("Import", body + upload_form(seen.csrf, limit), seen, "import", 413)
        path = await asyncio.to_thread(saved_upload, upload)  # while the request is whole; off the event loop
        job = start_import(mine, path, file_format, pages.writing)  # runs to its end, whatever the page does
        stream = import_page(job, shell("Import", user=seen.user, active="import", csrf=seen.csrf))
        return StreamingResponse(stream, media_type="text/html; charset=utf-8", headers=HEADERS)
