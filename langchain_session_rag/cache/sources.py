"""The check of the memories behind a cache entry: are they still there, with the same text?

An entry stored with ``sources=`` records the ids of the memory chunks its answer drew on and a digest of their
texts (:func:`~langchain_session_rag.cache.decision.source_digest`). :func:`memory_source_check` reads those chunks
from the memory *now* (its replica follows the store, so a forget or an edit by another process is seen) and
digests them the same way: a chunk forgotten or changed since gives another digest, and the entry misses as
``stale_version``. ``SemanticCache.link_memory`` and the graphs install it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_session_rag.cache.decision import source_digest


def memory_source_check(memory: Any) -> Callable[[str, list[str]], str]:
    """A ``SemanticCache.source_check`` reading the sources from ``memory`` (a ``SessionVectorMemory``)."""

    def check(user_id: str, ids: list[str]) -> str:
        docs = memory.for_user(user_id).get_by_ids(ids)
        return source_digest((d.id or "", d.page_content) for d in docs)

    return check
