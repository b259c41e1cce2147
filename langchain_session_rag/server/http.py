"""The server's HTTP plumbing: reading a bounded JSON body, and answering every error in OpenAI's shape."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from langchain_session_rag.errors import ImportLimitError, SessionRAGError
from langchain_session_rag.memory.reading import check_json_depth
from langchain_session_rag.server.auth import TokenFileUnusable, Unauthenticated
from langchain_session_rag.server.schemas import ApiError, unavailable

if TYPE_CHECKING:
    from starlette.responses import Response

M = TypeVar("M", bound=BaseModel)
_LOGGER = logging.getLogger(__name__)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit`` bytes (never read whole).

    Raises:
        ApiError: 413 when the declared or the received length is over the limit; 400 ``aborted`` when the client
            went away before the end of its body (logged in one line).
    """
    declared = request.headers.get("content-length", "")
    too_large = f"The request body is over the server's limit of {limit:,} bytes; send a shorter conversation."
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, too_large, code="request_too_large")
    body = bytearray()
    try:
        async for piece in request.stream():
            body += piece
            if len(body) > limit:
                raise ApiError(413, too_large, code="request_too_large")
    except ClientDisconnect:
        note_abandoned(request)
        raise ApiError(400, ABANDONED, code="aborted") from None
    return bytes(body)


ABANDONED = "The client went away before its request body was sent whole; nothing was done."


def note_abandoned(request: Request) -> None:
    """Log, in one line, a request whose client went away before the end of its body (not a traceback each)."""
    _LOGGER.warning("%s %s: %s", request.method, request.url.path, ABANDONED)


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _lone_surrogate(data: Any, loc: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    r"""Where ``data`` holds a string that is not Unicode text (a lone UTF-16 surrogate such as ``\ud800``)."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return loc
        return None
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _lone_surrogate(key, loc) if isinstance(key, str) else None
        found = found if found is not None else _lone_surrogate(value, (*loc, key))
        if found is not None:
            return found
    return None


def parse_body(kind: type[M], body: bytes) -> M:
    """``body`` as a ``kind``, or a 422 naming the first problem (malformed or too deep JSON, not Unicode, a field).

    Raises:
        ApiError: 422 with ``param`` naming the field.
    """
    try:
        check_json_depth(body, "The request body")
    except ImportLimitError as exc:  # json.loads would raise RecursionError: a 500 for what is the client's mistake
        msg = f"The request body is JSON nested {exc.seen:,} levels deep, more than the limit of {exc.limit}."
        raise ApiError(422, msg, code="invalid_json") from None
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"The request body is not valid JSON ({exc})."
        raise ApiError(422, msg, code="invalid_json") from None
    bad = _lone_surrogate(data)
    if bad is not None:  # JSON allows "\\ud800"; no store, tokenizer or model takes it: refused before any of them
        where = _where(bad) or "body"
        msg = f"Invalid request: {where} is not valid Unicode text (a lone UTF-16 surrogate escape such as \\ud800)."
        raise ApiError(422, msg, code="invalid_text", param=where)
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(tuple(first.get("loc", ())))
        msg = f"Invalid request: {where or 'body'}: {first.get('msg')} ({exc.error_count()} problem(s))."
        raise ApiError(422, msg, code="invalid_request", param=where or None) from None


RETRIED = (SessionRAGError, ConnectionError, httpx.TransportError)
"""Errors a store's lost connection raises (and ours): 503 when retryable (see ``unavailable``), never a bare 500."""


def api_error_of(exc: Exception) -> ApiError:
    """Any error as the :class:`ApiError` it is answered with: ours, authentication, validation, routing, else 500."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, TokenFileUnusable):  # 503 while the token file is unusable
        return ApiError(exc.status, str(exc), code="token_file_unusable")
    if isinstance(exc, Unauthenticated):
        return ApiError(401, str(exc), code="invalid_api_key")
    if isinstance(exc, RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = _where(tuple(first.get("loc", ())))
        msg = f"Invalid request: {where}: {first.get('msg', exc)}."
        return ApiError(422, msg, code="invalid_request", param=where or None)
    if isinstance(exc, HTTPException):
        return ApiError(exc.status_code, str(exc.detail), code="not_found" if exc.status_code == 404 else None)  # noqa: PLR2004
    retry = unavailable(exc) if isinstance(exc, RETRIED) else None
    return retry or ApiError(500, f"The server failed: {type(exc).__name__}: {exc}", code="server_error")


async def _answer_error(request: Request, exc: Exception) -> Response:
    del request
    error = api_error_of(exc)
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers())


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in OpenAI's shape (see :func:`api_error_of`)."""
    for kind in (ApiError, Unauthenticated, RequestValidationError, HTTPException, *RETRIED, Exception):
        app.add_exception_handler(kind, _answer_error)
