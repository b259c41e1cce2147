"""What the graph's cache key holds, and when a cached answer may be served to the user asking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.configurable import DynamicRunnable
from langgraph.config import get_config

from langchain_session_rag.cache.decision import CacheDecision

RELEVANT_SIMILARITY = 0.35
"""A memory this similar to the question bears on it (all-MiniLM-L6-v2: unrelated texts score about 0-0.2)."""
_RUN_KEYS_IGNORED = ("thread_id", "checkpoint_id", "checkpoint_ns", "user_id", "session_id")


def _miss(decision: CacheDecision, reason: str, detail: str) -> CacheDecision:
    return CacheDecision(hit=False, reason=reason, similarity=decision.similarity,
                         matched_question=decision.matched_question, detail=detail)  # fmt: skip


def run_configurable() -> dict[str, Any]:
    """The run's configurable values that may select a model or a prompt (``configurable_alternatives``)."""
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # not inside a graph run
        return {}
    plain = (str, int, float, bool)
    return {
        k: v
        for k, v in sorted(configurable.items())
        if not k.startswith("__") and k not in _RUN_KEYS_IGNORED and isinstance(v, plain)
    }


def model_key(model: Any) -> str:
    """A chat model's class and its settings, for cache keys.

    Another model name, temperature, base URL, stop list or output format is another key, and so are the
    arguments bound with ``bind`` / ``bind_tools`` / ``with_structured_output`` (a ``RunnableBinding``). Fields
    are read without serialising the model (an iterator field is never consumed); values that are not JSON
    (clients, callbacks) are left out.
    """
    if isinstance(model, RunnableBindingBase):
        bound = json.dumps(model.kwargs, sort_keys=True, default=_describe)
        return f"{model_key(model.bound)}|bound:{bound}"
    if isinstance(model, RunnableWithFallbacks):
        return f"fallbacks({model_key(model.runnable)};{';'.join(model_key(f) for f in model.fallbacks)})"
    if isinstance(model, DynamicRunnable):  # configurable_fields / configurable_alternatives: see the run's key
        return (
            f"dynamic({model_key(model.default)};{type(model).__name__};{model.model_dump_json(exclude={'default'})})"
        )
    settings = {}
    for name, value in sorted(vars(model).items()):
        if name.startswith("_") or isinstance(value, Iterator):
            continue
        try:
            settings[name] = json.loads(json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            continue
    return f"{type(model).__module__}.{type(model).__qualname__}:{json.dumps(settings, sort_keys=True)}"


def _describe(value: Any) -> str:
    """A stable text for a bound argument that is not JSON (a tool, a schema class)."""
    name = getattr(value, "name", None) or getattr(value, "__name__", None) or type(value).__name__
    schema = getattr(value, "args", None)
    return f"{name}:{json.dumps(schema, sort_keys=True, default=str) if schema is not None else ''}"


def judge_hit(decision: CacheDecision, memories: list[Document], *, question: str, shared: bool) -> CacheDecision:
    """Check a hit against the user's memories retrieved for the question now.

    Per user: a relevant memory stored after the answer was cached is new knowledge, so the hit is stale
    (exchanges holding the same question and the cached answer, earlier asks, do not count). Shared: a
    relevant memory of this user means the impersonal answer may not fit this user, so it is not served.
    """
    relevant = [d for d in memories if float(d.metadata.get("similarity", 1.0)) >= RELEVANT_SIMILARITY]
    if shared:
        if relevant:
            return _miss(decision, "personal_context", "this user has relevant memories")
        return decision
    created = decision.created_at or 0.0
    asked, answer = question.strip().lower(), (decision.answer or "").strip().lower()
    for doc in relevant:
        stored = float(doc.metadata.get("stored_epoch", doc.metadata.get("timestamp_epoch", 0.0)))
        text = doc.page_content.lower()
        earlier_ask = bool(answer) and asked in text and answer in text
        if stored > created and not earlier_ask:
            return _miss(decision, "stale_version", "newer memories")
    return decision
