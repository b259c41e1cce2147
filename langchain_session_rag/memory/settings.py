"""How the settings of :class:`~langchain_session_rag.SessionVectorMemory` are checked and completed.

Pure functions of the memory's field values (no store is opened here): the query check, and the defaults a
memory derives from its embedding model (the segmenter).
"""

from __future__ import annotations

from typing import Literal

from langchain_core.embeddings import Embeddings

from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import InvalidArgumentError

SourceType = Literal["session", "document", "note"]
DEFAULT_SEGMENT_TOKENS = 128
"""Token cap of the default segmenter's segments (uncapped segments cost recall per prompt token on LoCoMo)."""


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
        InvalidArgumentError: Anything else.
    """
    if not isinstance(query, str):
        msg = f"The query must be a string (the current user message), got {type(query).__name__}."
        raise InvalidArgumentError(msg)
    return query
