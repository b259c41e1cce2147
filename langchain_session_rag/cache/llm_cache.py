"""``SemanticLLMCache``: a :class:`SemanticCache` as LangChain's ``BaseCache`` (``set_llm_cache`` / ``cache=``)."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.load import dumps, loads
from langchain_core.messages import BaseMessage
from langchain_core.outputs import Generation

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_user_id
from langchain_session_rag.cache.scope import (
    bound_user_allowed,
    current_cache_user,
    install_capture,
    scope_is_private,
    scope_redacts,
)
from langchain_session_rag.cache.semantic import SemanticCache
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.privacy._folding import blank
from langchain_session_rag.prompt.texts import CONTEXT_CLOSE, CONTEXT_OPEN

USER_VIEWS = 256
"""Per-user views a SemanticLLMCache keeps (least recently used first out; a view is cheap to rebuild)."""


def _split_prompt(prompt: str) -> tuple[str, list[str], str]:
    """The last user message of a serialised chat prompt, the earlier turns, and a digest of everything else.

    Everything but the text of the last user message (system messages, earlier turns, tool calls, names, the
    non-text parts of the last message) goes into the digest, which must match exactly for a hit. A prompt
    that is not a list of chat messages is itself the question.
    """
    try:
        value = loads(prompt, allowed_objects="core")
    except (ValueError, TypeError, KeyError, json.JSONDecodeError):
        return prompt, [], ""
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        humans = [i for i, m in enumerate(value) if _is_user(m)]
        if not humans:
            return "", [], "no user message"  # nothing to match by meaning: not cached
        last = humans[-1]
        question, context = _question_and_context(value[last].text)
        non_text = [b for b in value[last].content if not (isinstance(b, dict) and b.get("type") == "text")] if (
            isinstance(value[last].content, list)) else []  # fmt: skip
        kept = value[last].model_copy(update={"content": non_text or "", "additional_kwargs": {
            **value[last].additional_kwargs, "context": context}})  # fmt: skip
        rest = [*value[:last], kept, *value[last + 1 :]]
        digest = hashlib.sha256(dumps(rest).encode()).hexdigest()
        earlier = [m.text for m in value[:last] if m.type in {"human", "ai"}]
        return question, earlier, digest
    return prompt, [], ""


def _is_user(message: BaseMessage) -> bool:
    return message.type == "human" or (message.type == "chat" and getattr(message, "role", "") in {"user", "human"})


def _question_and_context(text: str) -> tuple[str, str]:
    """Split a user message laid out by :class:`TokenBudget` into its question and its retrieved context.

    The context block must then match exactly; other messages are all question.
    """
    if text.startswith(CONTEXT_OPEN) and CONTEXT_CLOSE in text:
        block, _, question = text.partition(CONTEXT_CLOSE)
        return question.strip(), block
    return text, ""


class SemanticLLMCache(BaseCache):
    """The semantic cache as a LangChain ``BaseCache``: one cache per process, each request its own user.

    The user of a chat model call is named by the run's metadata (``config={"metadata": {"user_id": ...}}``)
    or by binding the cache with :meth:`for_user`.

    A :func:`cache_scope` or a chain's ``configurable["user_id"]`` must agree with it. With no user, nothing is
    looked up or stored (a warning says so once), unless the wrapped cache is ``shared=True``.

    Only the last user message of a chat prompt is matched semantically; everything else in the prompt (system
    messages, earlier turns, retrieved context, tools) and the model configuration must match exactly.

    Example:
        .. code-block:: python

            import tempfile
            from langchain_core.globals import set_llm_cache
            from langchain_session_rag import SemanticCache, SemanticLLMCache

            set_llm_cache(SemanticLLMCache(SemanticCache.local(path=tempfile.mkdtemp(), user_id="anyone")))
            # chain.invoke(question, config={"metadata": {"user_id": "alice"}}) is served from alice's
            # entries; ChatX(cache=llm_cache.for_user("alice")) binds a model to one user.
            set_llm_cache(None)
    """

    def __init__(self, cache: SemanticCache, *, config_key: str = "user_id") -> None:
        """Wrap a :class:`SemanticCache`: its threshold, guards and TTL apply; its ``user_id`` is not used.

        A ``shared=True`` cache serves every request from the shared scope.

        Args:
            cache: The semantic cache.
            config_key: The ``configurable`` key that names the user in a run's config.
        """
        if not isinstance(cache, SemanticCache):
            msg = f"cache must be a SemanticCache, got {type(cache).__name__}."
            raise InvalidArgumentError(msg)
        if not isinstance(config_key, str) or not config_key:
            msg = f"config_key must be a non-empty string, got {config_key!r}."
            raise InvalidArgumentError(msg)
        self.cache = cache
        self.config_key = config_key
        self._user: str | None = None
        install_capture()
        self._warned = False
        self._views: OrderedDict[str, SemanticCache] = OrderedDict()
        self._lock = _fork.lock()

    def for_user(self, user_id: str) -> SemanticLLMCache:
        """This cache bound to one user, for direct calls and per-request models (``ChatX(cache=...)``).

        A bound cache serves its user without run metadata; a run whose metadata names another user, or a
        scope of another user, still fails closed.
        """
        bound = SemanticLLMCache(self.cache, config_key=self.config_key)
        bound._user = check_user_id(user_id)
        return bound

    def _view(self) -> SemanticCache | None:
        """The cache of the current request's user, or ``None`` (fail closed) when there is no user.

        In a scope that redacts (``cache_scope(..., redact=True)``) the view redacts secrets too.
        """
        view = self._scoped_view()
        if view is not None and scope_redacts() and not view.redact_secrets:
            return view.model_copy(update={"redact_secrets": True})  # same store, stats and lock
        return view

    def _scoped_view(self) -> SemanticCache | None:
        if self.cache.shared:
            return None if scope_is_private() else self.cache
        if self._user is None:
            user = current_cache_user(self.config_key)
        else:
            user = self._user if bound_user_allowed(self._user, self.config_key) else None
        if user is None:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    "SemanticLLMCache: no user in scope, so the cache is not used for this call. Name the user "
                    "in the run's metadata (config={'metadata': {'user_id': ...}} on the call, chain or graph), "
                    "bind one with SemanticLLMCache.for_user(user_id), or build the SemanticCache with "
                    "shared=True for answers every user may get.",
                    stacklevel=3,
                )
            return None
        with self._lock:
            view = self._views.get(user)
            if view is None:
                view = self._views[user] = self.cache.for_user(user, share_stats=True)
            self._views.move_to_end(user)
            while len(self._views) > USER_VIEWS:
                self._views.popitem(last=False)
        return view

    def _request(self, prompt: str, llm_string: str) -> tuple[SemanticCache, str, list[str], str] | None:
        """The current user's view, the question, the earlier turns and the exact key; ``None``: not cached.

        A prompt without a question (no user message, or an image alone) is neither looked up nor stored.
        """
        view = self._view()
        if view is None:
            return None
        question, history, digest = _split_prompt(prompt)
        if blank(question):
            return None
        return view, question, history, f"{llm_string}\x1e{digest}" if digest else llm_string

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Cached generations of the prompt for this model configuration, for the current user."""
        request = self._request(prompt, llm_string)
        if request is None:
            return None
        view, question, history, key = request
        answer = view.lookup(question, llm_string=key, history=history)
        return None if answer is None else loads(answer, allowed_objects="core")

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store generations for the current user (skipped without one, and for volatile or follow-ups)."""
        request = self._request(prompt, llm_string)
        if request is not None:
            view, question, history, key = request
            view.update(question, dumps(_generations(return_val)), llm_string=key, history=history)

    def clear(self, **kwargs: Any) -> None:  # noqa: ARG002
        """Delete the current user's entries (the shared scope's, for a shared cache)."""
        view = self._view()
        if view is not None:
            view.clear()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Async :meth:`lookup`."""
        request = self._request(prompt, llm_string)
        if request is None:
            return None
        view, question, history, key = request
        answer = await view.alookup(question, llm_string=key, history=history)
        return None if answer is None else loads(answer, allowed_objects="core")

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Async :meth:`update`."""
        request = self._request(prompt, llm_string)
        if request is not None:
            view, question, history, key = request
            await view.aupdate(question, dumps(_generations(return_val)), llm_string=key, history=history)

    async def aclear(self, **kwargs: Any) -> None:  # noqa: ARG002
        """Async :meth:`clear`."""
        view = self._view()
        if view is not None:
            await view.aclear()


def _generations(return_val: object) -> list[Generation]:
    if not isinstance(return_val, Sequence) or not all(isinstance(g, Generation) for g in return_val):
        msg = f"return_val must be a list of Generation objects, got {type(return_val).__name__}."
        raise InvalidArgumentError(msg)
    return list(return_val)
