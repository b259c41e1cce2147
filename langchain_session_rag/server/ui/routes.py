"""The memory browser's routes under ``/ui``: Sessions, Search, Forget, Core memory, Import, sign in and out.

Each page acts for the user its request names (see :mod:`~langchain_session_rag.server.ui.access`) through
``memory.for_user``; no page takes a user from its address or its form.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.reading import file_limit
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.schemas import RETRYABLE
from langchain_session_rag.server.ui import forget as forget_page
from langchain_session_rag.server.ui.access import LoginNeeded, Refused, UiAccess
from langchain_session_rag.server.ui.context import Pages, see
from langchain_session_rag.server.ui.core import add_core_routes
from langchain_session_rag.server.ui.html import HEADERS, PREFIX, esc, notice, page
from langchain_session_rag.server.ui.html import field as input_field
from langchain_session_rag.server.ui.imports import add_import_routes
from langchain_session_rag.server.ui.relations import relations_body
from langchain_session_rag.server.ui.search import SearchSettings, search_body
from langchain_session_rag.server.ui.sessions import session_body, sessions_body


def _login_page(message: str = "", status: int = 200) -> Response:
    form = (
        f'<form method="post" action="{PREFIX}/login" aria-label="Sign in">'
        + input_field(
            "token",
            "Access token",
            kind="password",
            hint="From the server's token file, or the address session-rag ui printed (a new one at each start).",
            extra=' autocomplete="current-password" required',
        )
        + '<button type="submit">Sign in</button></form>'
    )
    said = notice(message, kind="error") if message else ""
    return page("Sign in", said + form, user=None, status=status)


def add_ui_routes(
    app: FastAPI,
    memory: SessionVectorMemory,
    access: UiAccess,
    search: SearchSettings,
    *,
    compaction: bool,
    upload_limit: int | None = None,
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
        upload_limit: The largest file the Import page takes, in bytes (default: the importers' limit, 256 MiB or
            ``SESSION_RAG_MAX_FILE_BYTES``).
    """
    pages = Pages(memory, access, search, compaction, upload_limit or file_limit(None))
    if compaction:  # page reads wait while the store is compacted
        _gated(app, pages)
    _door_routes(app, access)
    _sign_in_routes(app, access)
    _view_routes(app, pages)
    _forget_routes(app, pages)
    add_core_routes(app, pages)
    add_import_routes(app, pages)
    _fallback_routes(app)
    _errors_as_pages(app)


def _gated(app: FastAPI, pages: Pages) -> None:
    """Every page read under ``/ui`` goes through the pages' gate (a compaction holds it)."""

    @app.middleware("http")
    async def through_the_gate(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.method != "GET" or not request.url.path.startswith(PREFIX):
            return await call_next(request)
        async with pages.gate.reading():
            return await call_next(request)


def _door_routes(app: FastAPI, access: UiAccess) -> None:
    """Errors as pages, and the stylesheet."""

    @app.exception_handler(LoginNeeded)
    async def on_login(request: Request, exc: Exception) -> Response:
        del exc
        answer = see("login")
        if access.cookie in request.cookies:  # an ended sign-in: the browser drops it
            access.drop_cookie(answer)
        return answer

    @app.exception_handler(Refused)
    async def on_refused(request: Request, exc: Exception) -> Response:
        del request
        status = exc.status if isinstance(exc, Refused) else 403
        return page("Refused", notice(str(exc), kind="error"), user=None, status=status)

    @app.get(f"{PREFIX}/static/ui.css", include_in_schema=False)
    async def stylesheet() -> Response:
        css = resources.files("langchain_session_rag.server.ui").joinpath("static/ui.css").read_text("utf-8")
        return Response(css, media_type="text/css", headers={**HEADERS, "Cache-Control": "max-age=3600"})


def _sign_in_routes(app: FastAPI, access: UiAccess) -> None:
    """Signing in (a form, or the address ``session-rag ui`` prints) and out."""

    def signed_in(request: Request, token: str, *, from_link: bool = False) -> Response:
        value = access.sign_in(token)
        if value is None:
            return _login_page("This token is not known to the server.", status=401)
        # The token leaves the address bar at once. After a link (a terminal, --open's file), a page of ours goes on:
        # a redirect would stay the link's navigation, and the browser would not send the SameSite=Strict cookie.
        on = f'<p><a href="{PREFIX}/sessions">Continue to your memory</a></p>'
        done = page("Signed in", on, user=None, then="sessions") if from_link else see("sessions")
        access.hand_cookie(done, value, secure=request.url.scheme == "https")  # a session value, never the token
        return done

    @app.get(f"{PREFIX}/login", include_in_schema=False)
    async def login_form(request: Request, token: str = "") -> Response:
        access.check_host(request)
        if access.auth.trusted_header is not None:
            return see("sessions")
        if not token:
            return _login_page()
        direct = request.headers.get("sec-fetch-site", "none") in {"none", "same-origin"}  # typed, or from a terminal
        if direct or access.one_user():  # one user (session-rag ui): the only token signs in as yourself
            return signed_in(request, token, from_link=not direct)
        user = access.token_user(token)  # a link on another site: ask first (it could sign you in as someone else)
        if user is None:
            return _login_page("This token is not known to the server.", status=401)
        ask = (
            f'<form method="post" action="{PREFIX}/login" aria-label="Confirm signing in">'
            f'<input type="hidden" name="token" value="{esc(token)}">'
            f"<p>A link from another site signs you in as <strong>{esc(user)}</strong>. Continue only if that is "
            'you.</p><button type="submit">Sign in as this user</button></form>'
        )
        return page("Sign in", ask, user=None)

    @app.post(f"{PREFIX}/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        access.check_host(request)
        form = await access.form(request)
        return signed_in(request, str(form.get("token", "")))

    @app.post(f"{PREFIX}/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        viewer = access.viewer(request)
        await access.form(request, viewer)
        access.sign_out(viewer)  # in every worker: a copy of the cookie opens nothing from now on
        done = see("login")
        access.drop_cookie(done)
        return done


def _view_routes(app: FastAPI, pages: Pages) -> None:
    """Sessions, one session, Search, Relations."""

    @app.get(PREFIX, include_in_schema=False)
    @app.get(f"{PREFIX}/", include_in_schema=False)
    async def home(request: Request) -> Response:
        pages.access.viewer(request)
        return see("sessions")

    @app.get(f"{PREFIX}/sessions", include_in_schema=False)
    async def sessions(request: Request, q: str = "", when: str = "") -> Response:
        seen, mine = pages.viewer(request)
        return pages.shown("Sessions", await sessions_body(mine, q[:500], when[:200]), seen, "sessions")

    @app.get(f"{PREFIX}/session", include_in_schema=False)
    @app.get(PREFIX + "/sessions/{session_id:path}", include_in_schema=False)
    async def one_session(request: Request, session_id: str = "", id: str = "") -> Response:  # noqa: A002
        session_id = id or session_id  # /ui/session?id=ID: any id, "." and ".." too
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

    @app.get(f"{PREFIX}/relations", include_in_schema=False)
    async def relations_page(request: Request, entity: str = "", as_of: str = "") -> Response:
        seen, mine = pages.viewer(request)
        body = await relations_body(mine, entity[:200], as_of[:64])
        return pages.shown("Relations", body, seen, "relations")


def _forget_routes(app: FastAPI, pages: Pages) -> None:
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
            if target.filtered and form.get("seen") != forget_page.digest(await target.session_ids(mine)):
                body = notice(
                    "The sessions this filter shows changed since you confirmed: review them again.", kind="error"
                )
                return pages.shown("Forget", body, seen, "forget", 409)
            async with pages.writing:
                compact = form.get("compact") == "1"
                body = await forget_page.forget_receipt(
                    mine, target, compact=compact, compaction=pages.compaction, exclusive=pages.gate.exclusive()
                )
        except RETRYABLE:
            raise  # the store does not answer: 503 with Retry-After, the API's rule
        except (ValueError, SessionRAGError) as exc:
            return pages.shown("Forget", notice(str(exc), kind="error"), seen, "forget", 400)
        return pages.shown("Forgotten", body, seen, "forget")


def _fallback_routes(app: FastAPI) -> None:
    """Any other address under ``/ui``: a page saying so (not the API's JSON)."""

    @app.api_route(PREFIX + "/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def no_such_page(request: Request, rest: str) -> Response:
        del rest
        if request.method == "GET" and request.url.path in {f"{PREFIX}/logout", f"{PREFIX}/forget/"}:
            return see("sessions")
        body = notice("There is no such page.", kind="error") + f'<p><a href="{PREFIX}/sessions">Sessions</a></p>'
        return page("Not found", body, user=None, status=404)


def _errors_as_pages(app: FastAPI) -> None:
    """Under ``/ui``, the app's error answers (routing, forms, the unexpected) as pages; elsewhere as they were."""
    for kind, handler in list(app.exception_handlers.items()):
        if kind not in {LoginNeeded, Refused}:
            app.add_exception_handler(kind, _as_page(handler))


def _as_page(handler: Callable[..., Any]) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def answer(request: Request, exc: Exception) -> Response:
        response: Response = await handler(request, exc)  # the app's own handler decides, also under /ui
        path = request.url.path
        if path != PREFIX and not path.startswith(f"{PREFIX}/"):
            return response
        try:
            said = str(json.loads(bytes(response.body))["error"]["message"])
        except (ValueError, KeyError, TypeError):
            said = "The request failed."
        title = "Not found" if response.status_code == 404 else "Something went wrong"  # noqa: PLR2004
        body = notice(said, kind="error") + f'<p><a href="{PREFIX}/sessions">Sessions</a></p>'
        return page(title, body, user=None, status=response.status_code)

    return answer
