"""The long-context shortcut: the whole memory, in time order, when it fits the prompt."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from langchain_session_rag.memory.documents import marker_of, stored_document
from langchain_session_rag.memory.retrieval import RetrievalQuery, chunk_epoch, passes
from langchain_session_rag.stores.base import Record

MARKER_TOKENS = 10
"""Tokens a chunk costs in a prompt beyond its text (its marker and separators), for the shortcut's sum."""


def whole_memory(records: Sequence[Record], q: RetrievalQuery, *, user_id: str) -> list[Document] | None:
    """The long-context shortcut: every matching chunk in time order when they fit ``q.all_if_fits``, else ``None``.

    Each document is marked ``retrieval_mode="all"`` and carries no score (nothing was ranked). With a recall
    policy, the assistant's claims and unanswered questions say so in their markers, as in ranked retrieval.
    """
    if q.all_if_fits is None:
        return None
    mine = [r for r in records if r.metadata.get("user_id") == user_id and passes(r.metadata, q)]
    cost = sum(int(r.metadata.get("token_count") or 0) + MARKER_TOKENS for r in mine)
    if not mine or cost > q.all_if_fits:
        return None
    mine.sort(key=lambda r: (chunk_epoch(r.metadata) or 0.0, int(r.metadata.get("chunk_index") or 0), r.id))
    docs = [stored_document(record, with_marker=q.policy is None) for record in mine]  # else marker_of, below
    for doc in docs:
        doc.metadata["retrieval_mode"] = "all"
        if q.policy is not None:
            doc.metadata["marker"] = marker_of(doc.metadata)
            doc.metadata["why"] = "the whole memory fits the prompt"
    return docs
