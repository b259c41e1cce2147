"""Who may do what on the LangGraph server: bearer tokens name users; each user reaches only their own data.

- ``SESSION_RAG_LANGGRAPH_TOKENS``: the token file (required). JSON ``{"TOKEN": "USER", ...}``, or lines
  ``TOKEN USER`` (blank lines and ``#`` comments skipped). Re-read when it changes. A user id is a
  non-empty label without ``.`` (the store API splits namespaces on dots).
- ``SESSION_RAG_LANGGRAPH_ADMIN``: the admin's user id (default: no admin). The admin may list every user's
  namespaces (``client.store.list_namespaces(prefix=["memories"])``); nothing else is opened to the admin.

Refused: a request without a known token (401); another user's thread, run or cron (404, as if it did not
exist); a run whose ``context`` or ``configurable`` names another user (``user_id`` or ``langgraph_user_id``,
403); a store operation outside ``("memories", <the user>, ...)`` (403). A normal user's namespace listing is
narrowed to their own namespaces.
"""

# ruff: noqa: INP001 - a file langgraph.json loads by path, not a package
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, cast

from langgraph_sdk import Auth

TOKENS_ENV = "SESSION_RAG_LANGGRAPH_TOKENS"
ADMIN_ENV = "SESSION_RAG_LANGGRAPH_ADMIN"
USERS = "memories"
"""The first part of every user's store namespaces (graph.py's NAMESPACE)."""
ADMIN_PERMISSION = "session-rag:admin"
_IDENTITY_KEYS = ("user_id", "langgraph_user_id")

auth = Auth()
_cache: dict[str, Any] = {}


def _parse(text: str, path: Path) -> dict[str, str]:
    stripped = text.strip()
    if stripped.startswith("{"):
        pairs = json.loads(stripped)
    else:
        pairs = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2:  # noqa: PLR2004 - a token and a user
                msg = f"{path}:{number}: expected 'TOKEN USER', got {len(parts)} fields."
                raise ValueError(msg)
            pairs[parts[0]] = parts[1]
    for token, user in pairs.items():
        if not isinstance(token, str) or len(token) < 16 or not isinstance(user, str) or not user or "." in user:  # noqa: PLR2004
            msg = f"{path}: each token must be a string of 16+ characters and each user a label without '.': {user!r}."
            raise ValueError(msg)
    return {hashlib.sha256(t.encode()).hexdigest(): u for t, u in pairs.items()}


def _tokens() -> dict[str, str]:
    """The token file's tokens (by SHA-256, so a lookup leaks nothing about the token's prefix) → users."""
    name = os.environ.get(TOKENS_ENV)
    if not name:
        msg = f"Set {TOKENS_ENV} to a token file (JSON {{token: user}} or 'TOKEN USER' lines)."
        raise Auth.exceptions.HTTPException(status_code=401, detail=msg)
    path = Path(name)
    stamp = (str(path), path.stat().st_mtime_ns)
    if _cache.get("stamp") != stamp:
        _cache["tokens"] = _parse(path.read_text(encoding="utf-8"), path)
        _cache["stamp"] = stamp
    return dict(_cache["tokens"])


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """``Authorization: Bearer TOKEN`` → the token's user (401 otherwise)."""
    scheme, _, token = (authorization or "").partition(" ")
    user = _tokens().get(hashlib.sha256(token.strip().encode()).hexdigest()) if scheme.lower() == "bearer" else None
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


@auth.on.threads.create_run
async def own_runs_only(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> dict[str, str]:
    """A run acts for the authenticated user: a run naming another is refused; the session defaults to the thread."""
    kwargs = value.get("kwargs") or {}
    context = kwargs.get("context")
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    for where, source in (("context", context), ("configurable", configurable)):
        for key in _IDENTITY_KEYS:
            named = source.get(key) if isinstance(source, dict) else None
            if named is not None and named != ctx.user.identity:
                detail = f"The run names {key}={named!r} in its {where}, but the token is user {ctx.user.identity!r}."
                raise Auth.exceptions.HTTPException(status_code=403, detail=detail)
    if value.get("thread_id") is not None:
        for source in (context, configurable):
            if isinstance(source, dict) and "session_id" not in source:
                source["session_id"] = str(value["thread_id"])
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
