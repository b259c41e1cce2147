"""How the settings of :class:`~langchain_session_rag.SessionVectorMemory` are checked and completed.

Pure functions of the memory's field values (no store is opened here): the user id rule, and the defaults a
memory derives from its embedding model (the segmenter, the lexical weight).
"""

from __future__ import annotations

from typing import Literal

from langchain_core.embeddings import Embeddings

from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import InvalidArgumentError, InvalidRequestError
from langchain_session_rag.stores.limits import check_utf8

__all__ = [
    "DEFAULT_SEGMENT_TOKENS",
    "SourceType",
    "check_query",
    "check_user_id",
    "preferred_lexical_weight",
    "segmenter_for",
]

SourceType = Literal["session", "document", "note"]
DEFAULT_SEGMENT_TOKENS = 128
"""Token cap of the default segmenter's segments (uncapped segments cost recall per prompt token on LoCoMo)."""


def check_user_id(value: object) -> str:
    """A memory's ``user_id``: a non-empty string of at most 256 characters, valid UTF-8.

    Raises:
        InvalidArgumentError: Anything else.
    """
    if not isinstance(value, str) or not value.strip() or len(value) > 256:  # noqa: PLR2004
        msg = f"user_id must be a non-empty string of at most 256 characters, got {value!r}."
        raise InvalidArgumentError(msg)
    return check_utf8("user_id", value, InvalidArgumentError)


def preferred_lexical_weight(embeddings: Embeddings) -> float | None:
    """The lexical weight an embedding model asks for (its ``default_lexical_weight`` attribute), if any."""
    preferred = getattr(embeddings, "default_lexical_weight", None)
    return float(preferred) if isinstance(preferred, int | float) else None


def segmenter_for(embeddings: Embeddings, chunker: ExchangeChunker, segmenter: TopicSegmenter | None) -> TopicSegmenter:
    """The given segmenter (which must use the memory's model), or the default one for ``embeddings``.

    Raises:
        InvalidArgumentError: The segmenter uses another embedding model object.
    """
    if segmenter is None:
        return TopicSegmenter(embeddings, max_tokens=DEFAULT_SEGMENT_TOKENS, token_counter=chunker.count)
    if segmenter.embeddings is not embeddings:
        msg = (
            "The segmenter must use the memory's embedding model (its vectors are stored): "
            "build it as TopicSegmenter(memory_embeddings, ...) with the same object as embeddings=."
        )
        raise InvalidArgumentError(msg)
    return segmenter


def check_query(query: object) -> str:
    """The retrieval query: a string (the current user message).

    Raises:
        InvalidRequestError: Anything else.
    """
    if not isinstance(query, str):
        msg = f"The query must be a string (the current user message), got {type(query).__name__}."
        raise InvalidRequestError(msg)
    return query
