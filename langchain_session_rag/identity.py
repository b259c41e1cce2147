"""Who a run is for: the user and session named by a run's ``context`` and its ``configurable`` values.

LangGraph apps pass ids as ``invoke(..., context={"user_id": ...})`` (the runtime context) or, the older
convention of LangMem and most memory tutorials, as ``config={"configurable": {"user_id": ...}}``. Both are read;
when both name a user (or a session) and they differ, the run is refused with :class:`IdentityConflictError`:
guessing which one was meant could hand one user's memories to another. LangMem's key ``langgraph_user_id`` is
read as another name of ``user_id`` (in either place).

On LangGraph's server with custom auth, the authenticated user is ``config["configurable"]
["langgraph_auth_user_id"]``, which the server sets and clients cannot: it is the run's user, and a run whose
context or ``configurable`` names another user is refused, so a client cannot ask for someone else's memories.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config

from langchain_session_rag._checks import SYSTEM_PREFIX, _shown, check_session_id, check_user_id
from langchain_session_rag.errors import IdentityConflictError, InvalidArgumentError

_KEYS = ("user_id", "session_id")
USER_ALIAS = "langgraph_user_id"
"""LangMem's name of the user in ``configurable``, read as ``user_id``."""
AUTH_USER_KEY = "langgraph_auth_user_id"
"""Where LangGraph's server puts the authenticated user's identity (``configurable``); set by the server only."""


@dataclass(frozen=True)
class RunIdentity:
    """The ids a run names (``None`` where it names none)."""

    user_id: str | None
    session_id: str | None


def _fields(source: object, where: str) -> dict[str, object]:
    """``user_id`` and ``session_id`` of a mapping, a dataclass or a model context (``None`` where absent).

    ``langgraph_user_id`` names the user too; naming two different users there is refused.
    """
    if source is None:
        return {}
    if isinstance(source, Mapping):
        user, alias, session = source.get("user_id"), source.get(USER_ALIAS), source.get("session_id")
    else:
        user, alias = getattr(source, "user_id", None), getattr(source, "langgraph_user_id", None)
        session = getattr(source, "session_id", None)
    if user is not None and alias is not None:  # each must be fit before they are compared
        user, alias = _checked(user, "user_id", where), _checked(alias, "user_id", f"{where} {USER_ALIAS}:")
    if user is not None and alias is not None and user != alias:
        msg = (
            f"The run's {where} names two different users: user_id={_shown(user)} and {USER_ALIAS}={_shown(alias)}. "
            "Name the user once (user_id), or the same in both."
        )
        raise IdentityConflictError(msg)
    return {"user_id": user if user is not None else alias, "session_id": session}


def _authenticated(configurable: Mapping[str, object]) -> str | None:
    """The user LangGraph's server authenticated for this run (``None`` without server auth)."""
    value = configurable.get(AUTH_USER_KEY)
    if value is None or value == "":  # no auth, or the server's unauthenticated user
        return None
    return _checked(value, "user_id", f"authenticated user ({AUTH_USER_KEY}, set by LangGraph's server):")


def _checked(value: object, key: str, where: str) -> str | None:
    if value is None:
        return None
    check = check_session_id if key == "session_id" else check_user_id  # the one check of every entry path
    try:
        return check(value)
    except InvalidArgumentError as exc:
        msg = f"The run's {where} {exc}"
        raise InvalidArgumentError(msg) from None


def _current_context() -> object:
    """The runtime context of the LangGraph run this call is part of (``None`` outside a graph run).

    LangGraph is imported only when already loaded: no graph run can be in progress without it.
    """
    if "langgraph.runtime" not in sys.modules:
        return None
    from langgraph.runtime import get_runtime  # noqa: PLC0415 - already loaded, see above

    try:
        runtime = get_runtime()
    except RuntimeError:  # not inside a runnable
        return None
    return None if runtime is None else runtime.context


def run_identity(
    config: RunnableConfig | None = None, *, context: object = None, use_run_context: bool = True
) -> RunIdentity:
    """The user and session of a run, from its runtime ``context`` and ``configurable`` values.

    Args:
        config: The run's config; by default the config of the runnable this call is part of (if any).
        context: The run's context (a dict, a dataclass or a model with ``user_id`` / ``session_id``). By
            default the context of the LangGraph run this call is part of, if any.
        use_run_context: Read the current LangGraph run's context when ``context`` is not given.

    Raises:
        IdentityConflictError: The context and the configurable values name different users (or sessions).
        InvalidArgumentError: An unfit ``user_id`` or ``session_id`` (see ``check_user_id``, ``check_session_id``).
    """
    configurable = ensure_config(config).get("configurable") or {}
    if context is None and use_run_context:
        context = _current_context()
    found: dict[str, str | None] = {}
    named, configured = _fields(context, "context"), _fields(configurable, "configurable")
    for key in _KEYS:
        from_context = _checked(named.get(key), key, "context")
        from_config = _checked(configured.get(key), key, "configurable")
        if from_context is not None and from_config is not None and from_context != from_config:
            msg = (
                f"The run names two different {key}s: {from_context!r} in its context and {from_config!r} in "
                f"config['configurable']. Name it once, or the same in both."
            )
            raise IdentityConflictError(msg)
        found[key] = from_context if from_context is not None else from_config
    authenticated = _authenticated(configurable)
    if authenticated is not None:
        if found["user_id"] not in {None, authenticated}:
            msg = (
                f"The run is authenticated as user {authenticated!r} but names user {found['user_id']!r}: a client "
                "can act only for the user its credentials identify. Leave user_id out (the authenticated user is "
                "used), or send it equal to the authenticated user."
            )
            raise IdentityConflictError(msg)
        found["user_id"] = authenticated
    return RunIdentity(found["user_id"], found["session_id"])


def acting_user(bound: str, *, from_run: bool, config: RunnableConfig | None = None) -> str:
    """The user a memory bound to ``bound`` acts for in the current run.

    ``from_run``: the run's user (a run naming none is refused). Otherwise ``bound``, and a run naming another
    user is refused. A system scope (``SYSTEM_PREFIX``) is what the code chose: no run can name it.

    Raises:
        IdentityConflictError: The run names another user than ``bound`` (``from_run=False``), or two users.
        InvalidArgumentError: ``from_run`` and the run names no user.
    """
    if bound.startswith(SYSTEM_PREFIX) and not from_run:
        return bound
    identity = run_identity(config)
    if from_run:
        if identity.user_id is None:
            msg = (
                "This memory (user_from_run=True) needs a user: invoke it with config={'configurable': {'user_id': "
                "...}} or, in a LangGraph run, context={'user_id': ...}."
            )
            raise InvalidArgumentError(msg)
        return identity.user_id
    if identity.user_id is not None and identity.user_id != bound:
        msg = (
            f"This memory serves user {bound!r}, but the run names user {identity.user_id!r}. Use "
            f"memory.for_user({identity.user_id!r}) outside the run, build the memory with user_from_run=True "
            "to serve the run's user, or use memory.for_shared(name) for data every user may read."
        )
        raise IdentityConflictError(msg)
    return bound
