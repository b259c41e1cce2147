"""The memory browser's routes under ``/ui``: Sessions, Search, Forget, Core memory, Import, sign in and out.

Each page acts for the user its request names (see :mod:`~langchain_session_rag.server.ui.access`) through
``memory.for_user``; no page takes a user from its address or its form.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from starlette.datastructures import FormData, UploadFile

from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.reading import file_limit
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui import core as core_page
from langchain_session_rag.server.ui import forget as forget_page
from langchain_session_rag.server.ui import imports as import_page
from langchain_session_rag.server.ui.access import COOKIE, LoginNeeded, Refused, UiAccess, Viewer
from langchain_session_rag.server.ui.html import HEADERS, PREFIX, notice, page, shell
from langchain_session_rag.server.ui.html import field as input_field
from langchain_session_rag.server.ui.search import SearchSettings, search_body
from langchain_session_rag.server.ui.sessions import session_body, sessions_body

FORM_SLACK = 1_048_576
"""Bytes an upload's form may add to the file itself (boundaries, the other fields)."""


def _see(path: str) -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/{path}", status_code=303, headers=HEADERS)


def _login_page(message: str = "", status: int = 200) -> Response:
    form = (
        f'<form method="post" action="{PREFIX}/login" aria-label="Sign in">'
        + input_field(
            "token",
            "Access token",
            kind="password",
            hint="Your token from the server's token file.",
            extra=' autocomplete="current-password" required',
        )
        + '<button type="submit">Sign in</button></form>'
    )
    said = notice(message, kind="error") if message else ""
    return page("Sign in", said + form, user=None, status=status)


@dataclass(frozen=True)
class _Pages:
    """What every route needs: the memory, the door, the Search page's settings."""

    memory: SessionVectorMemory
    access: UiAccess
    search: SearchSettings
    compaction: bool
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by every page that writes: a compaction never copies the store while a page's write lands."""

    def viewer(self, request: Request) -> tuple[Viewer, SessionVectorMemory]:
        seen = self.access.viewer(request)
        return seen, self.memory.for_user(seen.user)

    @staticmethod
    def shown(title: str, body: str, seen: Viewer, active: str, status: int = 200) -> Response:
        return page(title, body, user=seen.user, active=active, csrf=seen.csrf, status=status)


def add_ui_routes(
    app: FastAPI, memory: SessionVectorMemory, access: UiAccess, search: SearchSettings, *, compaction: bool
) -> None:
    """Add the memory browser's pages to ``app`` under ``/ui``.

    Args:
        app: The app (``session-rag serve``'s, or ``session-rag ui``'s own).
        memory: The store (any user's view: each page uses its user's).
        access: Who is looking (the server's users) and which host names the pages answer to.
        search: The retrieval and token budget the Search page shows (the graph's own).
        compaction: Whether the Forget page may compact the store (erase the text from its files) right after: only
            when every write of the store goes through these pages (``session-rag ui``), as a compaction copies the
            store and a write landing meanwhile (a chat turn of ``session-rag serve``) would be lost.
    """
    pages = _Pages(memory, access, search, compaction)
    _door_routes(app, access)
    _view_routes(app, pages)
    _forget_routes(app, pages)
    _core_routes(app, pages)
    _import_routes(app, pages)


def _door_routes(app: FastAPI, access: UiAccess) -> None:
    """Errors as pages, the stylesheet, signing in and out."""

    @app.exception_handler(LoginNeeded)
    async def on_login(request: Request, exc: Exception) -> Response:
        del request, exc
        return _see("login")

    @app.exception_handler(Refused)
    async def on_refused(request: Request, exc: Exception) -> Response:
        del request
        status = exc.status if isinstance(exc, Refused) else 403
        return page("Refused", notice(str(exc), kind="error"), user=None, status=status)

    @app.get(f"{PREFIX}/static/ui.css", include_in_schema=False)
    async def stylesheet() -> Response:
        css = resources.files("langchain_session_rag.server.ui").joinpath("static/ui.css").read_text("utf-8")
        return Response(css, media_type="text/css", headers={**HEADERS, "Cache-Control": "max-age=3600"})

    def signed_in(token: str) -> Response:
        if access.token_user(token) is None:
            return _login_page("This token is not known to the server.", status=401)
        done = _see("sessions")  # the token leaves the address bar at once
        done.set_cookie(COOKIE, token.strip(), httponly=True, samesite="strict", path=PREFIX)
        return done

    @app.get(f"{PREFIX}/login", include_in_schema=False)
    async def login_form(request: Request, token: str = "") -> Response:
        access.check_host(request)
        if access.auth.trusted_header is not None:
            return _see("sessions")
        return signed_in(token) if token else _login_page()

    @app.post(f"{PREFIX}/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        access.check_host(request)
        form = await access.form(request)
        return signed_in(str(form.get("token", "")))

    @app.post(f"{PREFIX}/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        await access.form(request, access.viewer(request))
        done = _see("login")
        done.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
        return done


def _view_routes(app: FastAPI, pages: _Pages) -> None:
    """Sessions, one session, Search."""

    @app.get(PREFIX, include_in_schema=False)
    @app.get(f"{PREFIX}/", include_in_schema=False)
    async def home(request: Request) -> Response:
        pages.access.viewer(request)
        return _see("sessions")

    @app.get(f"{PREFIX}/sessions", include_in_schema=False)
    async def sessions(request: Request, q: str = "", when: str = "") -> Response:
        seen, mine = pages.viewer(request)
        return pages.shown("Sessions", await sessions_body(mine, q[:500], when[:200]), seen, "sessions")

    @app.get(PREFIX + "/sessions/{session_id:path}", include_in_schema=False)
    async def one_session(request: Request, session_id: str) -> Response:
        seen, mine = pages.viewer(request)
        found = await session_body(mine, session_id)
        if found is None:
            missing = notice("No such session in your memory.", kind="error")
            return pages.shown("Not found", missing, seen, "sessions", 404)
        return pages.shown(found[0], found[1], seen, "sessions")

    @app.get(f"{PREFIX}/search", include_in_schema=False)
    async def search_page(request: Request, q: str = "") -> Response:
        seen, mine = pages.viewer(request)
        return pages.shown("Search", await search_body(mine, q[:10_000], pages.search), seen, "search")


def _forget_routes(app: FastAPI, pages: _Pages) -> None:
    """Forget: the start page, the confirmation, the receipt."""

    @app.get(f"{PREFIX}/forget", include_in_schema=False)
    async def forget_start(request: Request) -> Response:
        seen, _ = pages.viewer(request)
        return pages.shown("Forget", forget_page.start_body(), seen, "forget")

    @app.get(f"{PREFIX}/forget/confirm", include_in_schema=False)
    async def forget_confirm(request: Request) -> Response:
        seen, mine = pages.viewer(request)
        try:
            target = forget_page.Target.of(request.query_params)
        except InvalidArgumentError as exc:
            body = notice(str(exc), kind="error") + forget_page.start_body()
            return pages.shown("Forget", body, seen, "forget", 400)
        body = await forget_page.confirm_body(mine, target, seen.csrf, compaction=pages.compaction)
        return pages.shown("Forget: are you sure?", body, seen, "forget")

    @app.post(f"{PREFIX}/forget", include_in_schema=False)
    async def forget(request: Request) -> Response:
        seen, mine = pages.viewer(request)
        form = await pages.access.form(request, seen)
        try:
            target = forget_page.Target.of(form)
            if target.everything and form.get("sure") != "1":
                body = notice("Tick the box to confirm forgetting everything.", kind="error")
                return pages.shown("Forget", body, seen, "forget", 400)
            async with pages.writing:
                compact = form.get("compact") == "1"
                body = await forget_page.forget_receipt(mine, target, compact=compact, compaction=pages.compaction)
        except (ValueError, SessionRAGError) as exc:
            return pages.shown("Forget", notice(str(exc), kind="error"), seen, "forget", 400)
        return pages.shown("Forgotten", body, seen, "forget")


async def _core_edit(mine: SessionVectorMemory, block: str, form: FormData, edit: str) -> str:
    """Apply one edit of the Core memory page; what the page then says."""
    core = mine.core
    if edit == "write":
        version = await core.awrite(block, str(form.get("text", "")).replace("\r\n", "\n"))
        return f"Saved {block}: version {version.version}."
    if edit == "undo":
        version = await core.aundo(block)
        return f"Undid the last change of {block}: version {version.version}."
    proposal = str(form.get("id", ""))
    if form.get("decision") == "confirm":
        await core.aconfirm(proposal)
        return f"Pinned the proposal into {block}."
    await core.areject(proposal)
    return f"Rejected the proposal for {block}."


def _core_routes(app: FastAPI, pages: _Pages) -> None:
    """Core memory: the page, a block's new text, undo, a proposal's review."""

    @app.get(f"{PREFIX}/core", include_in_schema=False)
    async def core(request: Request) -> Response:
        seen, mine = pages.viewer(request)
        return pages.shown("Core memory", await core_page.core_body(mine, seen.csrf), seen, "core")

    @app.post(PREFIX + "/core/{block}", include_in_schema=False)
    @app.post(PREFIX + "/core/{block}/{edit}", include_in_schema=False)
    async def core_edit(request: Request, block: str, edit: str = "write") -> Response:
        seen, mine = pages.viewer(request)
        form = await pages.access.form(request, seen)
        if edit not in {"write", "undo", "proposal"}:
            return pages.shown("Core memory", notice("No such edit.", kind="error"), seen, "core", 404)
        try:
            async with pages.writing:
                said = notice(await _core_edit(mine, block, form, edit))
            status = 200
        except SessionRAGError as exc:
            said, status = notice(str(exc), kind="error"), 400
        return pages.shown("Core memory", said + await core_page.core_body(mine, seen.csrf), seen, "core", status)


def _import_routes(app: FastAPI, pages: _Pages) -> None:
    """Import: the upload form, and the streamed import."""

    @app.get(f"{PREFIX}/import", include_in_schema=False)
    async def import_start(request: Request) -> Response:
        seen, _ = pages.viewer(request)
        return pages.shown("Import", import_page.upload_form(seen.csrf, file_limit(None)), seen, "import")

    @app.post(f"{PREFIX}/import", include_in_schema=False)
    async def import_file(request: Request) -> Response:
        seen, mine = pages.viewer(request)
        limit = file_limit(None)
        size = request.headers.get("content-length", "")
        if not size.isdigit() or int(size) > limit + FORM_SLACK:
            body = notice(f"The file is over the limit of {limit // 1_048_576:,} MiB (SESSION_RAG_MAX_FILE_BYTES).",
                          kind="error") + import_page.upload_form(seen.csrf, limit)  # fmt: skip
            return pages.shown("Import", body, seen, "import", 413)
        form = await pages.access.form(request, seen)
        upload, file_format = form.get("file"), str(form.get("format", "auto"))
        if not isinstance(upload, UploadFile) or not upload.filename:
            body = notice("Choose a file to import.", kind="error") + import_page.upload_form(seen.csrf, limit)
            return pages.shown("Import", body, seen, "import", 400)
        path = import_page.saved_upload(upload)
        frame = shell("Import", user=seen.user, active="import", csrf=seen.csrf)
        stream = import_page.import_stream(mine, path, file_format, frame, pages.writing)
        return StreamingResponse(stream, media_type="text/html; charset=utf-8", headers=HEADERS)
