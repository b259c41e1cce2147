"""Who may do what on the LangGraph server: bearer tokens name users; each user reaches only their own data.

- ``SESSION_RAG_LANGGRAPH_TOKENS``: the token file (required): lines ``TOKEN USER`` (blank lines and ``#``
  comments skipped), the same file and rules as ``session-rag serve --token-file``
  (:func:`langchain_session_rag.server.read_token_file`): tokens of 16+ characters, each token once, the file
  readable and writable by its owner only (``chmod 600``). Here a user id also holds no ``.`` (the store API
  splits namespaces on dots). Re-read when it changes. A missing or unusable file fails closed: every request
  gets 503 with one generic sentence, and the reason goes to the server log (one line).
- ``SESSION_RAG_LANGGRAPH_ADMIN``: the admin's user id (default: no admin). The admin may list every user's
  namespaces (``client.store.list_namespaces(prefix=["memories"])``); nothing else is opened to the admin.

Refused: a request without a known token (401); another user's thread, run or cron (404, as if it did not
exist); a run, cron or assistant whose ``context`` or ``configurable`` names another user (``user_id`` or
``langgraph_user_id``, 403); a store operation outside ``("memories", <the user>, ...)`` (403). A normal user's
namespace listing is narrowed to their own namespaces.
"""

# ruff: noqa: INP001 - a file langgraph.json loads by path, not a package
from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path
from typing import Any, cast

from langgraph_sdk import Auth
from starlette.exceptions import HTTPException

from langchain_session_rag.errors import FileAccessError, InvalidArgumentError, SessionRAGError
from langchain_session_rag.server.auth import read_token_file

TOKENS_ENV = "SESSION_RAG_LANGGRAPH_TOKENS"
ADMIN_ENV = "SESSION_RAG_LANGGRAPH_ADMIN"
USERS = "memories"
"""The first part of every user's store namespaces (graph.py's NAMESPACE)."""
ADMIN_PERMISSION = "session-rag:admin"
UNUSABLE = "The server's token file is unusable; see the server log."
"""All a client learns of a broken token file (the reason, with the file's path, goes to the server log)."""
_IDENTITY_KEYS = ("user_id", "langgraph_user_id")
_SHARED_BITS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH

auth = Auth()
log = logging.getLogger("session_rag.langgraph.auth")
_cache: dict[str, Any] = {}


def _read(path: Path, mode: int) -> dict[bytes, str]:
    """The token file's users by token digest (``read_token_file``), with this server's two extra rules."""
    if mode & _SHARED_BITS:
        shown = oct(mode & 0o777)
        msg = f"The token file {path} is readable or writable by other users (mode {shown}): run `chmod 600 {path}`."
        raise FileAccessError(msg)
    users = read_token_file(path)
    dotted = sorted({user for user in users.values() if "." in user})
    if dotted:
        msg = f"The token file {path} names user ids with a '.' (the store API splits namespaces on dots): {dotted!r}."
        raise InvalidArgumentError(msg)
    return users


def _tokens() -> dict[bytes, str]:
    """The users of the token file (cached until the file changes); a 503 for everyone if it is unusable."""
    try:
        name = os.environ.get(TOKENS_ENV)
        if not name:
            msg = f"Set {TOKENS_ENV} to a token file of 'TOKEN USER' lines (chmod 600)."
            raise FileAccessError(msg)
        path = Path(name)
        info = path.stat()
        stamp = (str(path), info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)
        if _cache.get("stamp") != stamp:
            _cache["tokens"] = _read(path, info.st_mode)
            _cache["stamp"] = stamp
            _cache.pop("logged", None)
    except (OSError, UnicodeError, SessionRAGError) as exc:
        _cache.pop("stamp", None)
        _cache.pop("tokens", None)
        if _cache.get("logged") != str(exc):  # one line per distinct reason, not one per request
            _cache["logged"] = str(exc)
            log.error("Refusing every request (503) until the token file is fixed: %s", exc)  # noqa: TRY400 - no traceback
        # Starlette's own exception: the server answers it as is (it turns Auth's, other than 401/403, into a 500).
        raise HTTPException(status_code=503, detail=UNUSABLE) from None
    return cast("dict[bytes, str]", _cache["tokens"])


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """``Authorization: Bearer TOKEN`` → the token's user (401 otherwise)."""
    scheme, _, token = (authorization or "").partition(" ")
    users = _tokens()
    user = users.get(hashlib.sha256(token.strip().encode()).digest()) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="A valid 'Authorization: Bearer TOKEN' is required."
        )
    admin = os.environ.get(ADMIN_ENV)
    return {"identity": user, "permissions": [ADMIN_PERMISSION] if admin and user == admin else []}


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """Threads, runs, assistants and crons: stamped with their owner on creation, filtered by owner elsewhere."""
    metadata = value.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


def _claims(body: Any) -> list[tuple[str, Any]]:
    """Where a request body may name a user: its ``context`` and its ``config["configurable"]``."""
    if not isinstance(body, dict):
        return []
    config = body.get("config")
    return [
        ("context", body.get("context")),
        ("configurable", config.get("configurable") if isinstance(config, dict) else None),
    ]


def _refuse_other_users(ctx: Auth.types.AuthContext, what: str, body: Any) -> None:
    """403 when ``body`` names a user other than the authenticated one (naming oneself is fine)."""
    for where, source in _claims(body):
        for key in _IDENTITY_KEYS:
            named = source.get(key) if isinstance(source, dict) else None
            if named is not None and named != ctx.user.identity:
                detail = (
                    f"The {what} names {key}={named!r} in its {where}, but the token is user {ctx.user.identity!r}."
                )
                raise Auth.exceptions.HTTPException(status_code=403, detail=detail)


def _default_session(body: dict[str, Any], session_id: str) -> None:
    """Give a run's ``context`` (and ``configurable``, when sent) a ``session_id`` unless the client named one."""
    if body.get("context") is None:
        body["context"] = {}
    for _, source in _claims(body):
        if isinstance(source, dict) and "session_id" not in source:
            source["session_id"] = session_id


@auth.on.threads.create_run
async def own_runs_only(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> dict[str, str]:
    """A run acts for the authenticated user: a run naming another is refused; the session defaults to the thread.

    A stateless run (no thread) gets a session of its own, ``stateless-<run id>``.
    """
    kwargs: dict[str, Any] = value.get("kwargs") or {}
    _refuse_other_users(ctx, "run", kwargs)
    thread, run = value.get("thread_id"), value.get("run_id")
    _default_session(kwargs, str(thread) if thread is not None else f"stateless-{run}")
    return await owner_only(ctx, cast("dict[str, Any]", value))


@auth.on.crons.create
async def own_crons_only(ctx: Auth.types.AuthContext, value: Auth.types.CronsCreate) -> dict[str, str]:
    """A cron acts for its creator: one naming another user is refused at creation (403), not at every tick."""
    payload: dict[str, Any] = value.get("payload") or {}
    _refuse_other_users(ctx, "cron", payload)
    thread, cron = value.get("thread_id"), value.get("cron_id")
    _default_session(payload, str(thread) if thread is not None else f"cron-{cron}")
    return await owner_only(ctx, cast("dict[str, Any]", value))


@auth.on.crons.update
async def own_cron_updates_only(ctx: Auth.types.AuthContext, value: Auth.types.CronsUpdate) -> dict[str, str]:
    """An update may not make a cron name another user (403)."""
    _refuse_other_users(ctx, "cron", value.get("payload"))
    return await owner_only(ctx, cast("dict[str, Any]", value))


@auth.on.assistants.create
async def own_assistants_only(ctx: Auth.types.AuthContext, value: Auth.types.AssistantsCreate) -> dict[str, str]:
    """An assistant whose context or configurable names another user is refused at creation (403)."""
    _refuse_other_users(ctx, "assistant", value)
    return await owner_only(ctx, cast("dict[str, Any]", value))


@auth.on.assistants.update
async def own_assistant_updates_only(ctx: Auth.types.AuthContext, value: Auth.types.AssistantsUpdate) -> dict[str, str]:
    """An update may not make an assistant name another user (403)."""
    _refuse_other_users(ctx, "assistant", value)
    return await owner_only(ctx, cast("dict[str, Any]", value))


@auth.on.store()
async def own_namespaces_only(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Every store operation stays in ``("memories", <user>, ...)``; only the admin lists other users."""
    user = ctx.user.identity
    namespace = tuple(value.get("namespace") or ())
    if ctx.action == "list_namespaces" and ADMIN_PERMISSION in ctx.permissions:
        return
    if ctx.action in {"list_namespaces", "search"} and namespace in {(), (USERS,)}:
        value["namespace"] = (USERS, user)  # above the users: narrowed to the caller's own namespaces
        return
    if len(namespace) < 2 or namespace[0] != USERS or namespace[1] != user:  # noqa: PLR2004 - ("memories", user)
        detail = f"User {user!r} may reach only store namespaces ({USERS!r}, {user!r}, ...), not {namespace!r}."
        raise Auth.exceptions.HTTPException(status_code=403, detail=detail)
