"""Whose cache a call reads: the user scope of a run (``cache_scope``, run metadata, ``config["configurable"]``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import ensure_config
from langchain_core.tracers.context import register_configure_hook

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_user_id

SHARED_SCOPE = "shared"
"""The shared namespace. A user's namespace is ``"user:" + user_id``, so no user id can name the shared one."""
USER_SCOPE_PREFIX = "user:"
_CACHE_USER: ContextVar[str | None] = ContextVar("langchain_session_rag_cache_user", default=None)
"""The scoped user: a run's user must agree with it."""
_CACHE_PRIVATE: ContextVar[bool] = ContextVar("langchain_session_rag_cache_private", default=False)
_CACHE_REDACT: ContextVar[bool] = ContextVar("langchain_session_rag_cache_redact", default=False)
_RUN_METADATA: ContextVar[dict[str, Any] | None] = ContextVar("langchain_session_rag_run_metadata", default=None)


class _RunMetadataCapture(BaseCallbackHandler):
    """Makes each chat model run's metadata visible to the cache.

    LangChain calls ``on_chat_model_start`` in the run's own context just before a chat model asks the cache,
    so the cache sees the user of *this* run (``config["metadata"]``), also for each item of a ``batch``. The
    value is cleared when the run ends. (A completion model, ``BaseLLM``, asks its cache *before* its start
    callback: it has no run metadata at lookup, so an unbound cache fails closed for it.)
    """

    run_inline = True
    raise_error = False

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, metadata: Any = None,  # noqa: ARG002
                            **kwargs: Any) -> None:  # noqa: ARG002  # fmt: skip
        """Remember the run's metadata."""
        _RUN_METADATA.set(dict(metadata or {}))

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, metadata: Any = None,  # noqa: ARG002
                     **kwargs: Any) -> None:  # noqa: ARG002  # fmt: skip
        """Remember the run's metadata."""
        _RUN_METADATA.set(dict(metadata or {}))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:  # noqa: ARG002
        """Forget it."""
        _RUN_METADATA.set(None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:  # noqa: ARG002
        """Forget it."""
        _RUN_METADATA.set(None)


_CAPTURE_LOCK = _fork.lock()
_CAPTURE_INSTALLED = False


def install_capture() -> None:
    """Add the metadata capture to every LangChain run of the process (once, when an LLM cache is built)."""
    global _CAPTURE_INSTALLED  # noqa: PLW0603 - a process-wide hook is installed once
    with _CAPTURE_LOCK:
        if _CAPTURE_INSTALLED:
            return
        # The default is the handler itself, so every context of the process sees it (LangChain's configure
        # hooks add a context variable's handler to each run's callbacks).
        hook: ContextVar[BaseCallbackHandler | None] = ContextVar(
            "langchain_session_rag_capture",
            default=_RunMetadataCapture(),  # noqa: B039 - one shared, stateless-per-run handler
        )
        register_configure_hook(hook, inheritable=True)
        _CAPTURE_INSTALLED = True


@contextmanager
def cache_scope(user_id: str, *, private: bool = False, redact: bool = False) -> Iterator[None]:
    """Restrict every :class:`SemanticLLMCache` call in this context (thread or task) to one user's runs.

    Inside the scope a cache serves only model runs that name this same user in their metadata (or a cache
    bound to this user with :meth:`SemanticLLMCache.for_user`); a run naming another user fails closed. A scope
    alone never names the user of a run: LangChain does not tell a cache which run asks, and a ``batch`` inside
    the scope may be other users' items. ``private=True`` says the prompts in the scope hold the user's own
    data (memories, history): a shared cache is then not used at all. ``redact=True`` says the run's memory
    redacts secrets: a cache used in the scope redacts too (a question holding a secret is not cached, an answer
    is stored redacted), whatever its own ``redact_secrets``. The graphs of this package set the scope (with
    their memory's ``redact_secrets``) and the run metadata every turn.

    Example:
        .. code-block:: python

            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_session_rag.cache import cache_scope

            model = FakeListChatModel(responses=["Hi Alice."])
            with cache_scope("alice", private=True):
                model.invoke("Hello", config={"metadata": {"user_id": "alice"}})
    """
    token = _CACHE_USER.set(check_user_id(user_id))
    private_token = _CACHE_PRIVATE.set(private)
    redact_token = _CACHE_REDACT.set(redact)
    try:
        yield
    finally:
        _CACHE_REDACT.reset(redact_token)
        _CACHE_PRIVATE.reset(private_token)
        _CACHE_USER.reset(token)


def current_cache_user(config_key: str = "user_id") -> str | None:
    """The user of the chat model run being served, or ``None`` (fail closed).

    The user must be named by the run itself: ``config={"metadata": {"user_id": ...}}`` on the call, the chain
    or the graph (metadata is what LangChain passes to each model run, also for each item of a ``batch``;
    ``configurable`` values are not passed to runs, so they cannot identify one). A :func:`cache_scope` and the
    running chain's ``configurable[config_key]`` must agree with it when present; any disagreement, or no
    user in the run, is ``None``.
    """
    run = (_RUN_METADATA.get() or {}).get(config_key)
    if not isinstance(run, str) or not run.strip():
        return None
    configured = ensure_config().get("configurable", {}).get(config_key)
    for other in (_CACHE_USER.get(), configured):
        if other is not None and str(other) != run:
            return None
    return run


def bound_user_allowed(user_id: str, config_key: str = "user_id") -> bool:
    """Whether a cache bound to ``user_id`` may serve the current run: no run metadata or scope names another user."""
    run = (_RUN_METADATA.get() or {}).get(config_key)
    return not any(o is not None and o != user_id for o in (run, _CACHE_USER.get()))


def scope_redacts() -> bool:
    """Whether the current :func:`cache_scope` asks caches to redact secrets (``redact=True``)."""
    return _CACHE_REDACT.get()


def scope_is_private() -> bool:
    """Whether the current :func:`cache_scope` keeps the shared cache out (``private=True``)."""
    return _CACHE_PRIVATE.get()
