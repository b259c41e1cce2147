"""How a :class:`~langchain_session_rag.SessionVectorMemory` is opened: its settings completed, then its store.

The constructor's last step (``model_post_init``) completes the settings from the embedding model, then opens the
store (never a field validator).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.retrieval import check_search_kwargs
from langchain_session_rag.memory.service import MemoryService, WriteSettings
from langchain_session_rag.memory.settings import segmenter_for
from langchain_session_rag.models.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.models.embeddings import get_default_embeddings
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.encryption import open_encrypted
from langchain_session_rag.stores.vectorstore import backend_for

if TYPE_CHECKING:
    from langchain_session_rag.memory.retriever import SessionVectorMemory
    from langchain_session_rag.stores.base import MemoryBackend


def query_defaults(memory: SessionVectorMemory) -> dict[str, Any]:
    """The memory's retrieval options, as a call's options default to them."""
    return {
        "k": memory.k,
        "session_ids": memory.session_ids,
        "exclude_session_ids": memory.exclude_session_ids,
        "source_type": memory.source_type,
        "score_threshold": memory.score_threshold,
        "half_life_days": memory.half_life_days,
        "recency_weight": memory.recency_weight,
        "lexical_weight": memory.lexical_weight,
        "time_window": "auto" if memory.time_aware else None,
        "time_boost": memory.time_boost,
        "recall_policy": memory.recall_policy,
        "entity_weight": memory.entity_weight,
    }


def write_settings(memory: SessionVectorMemory) -> WriteSettings:
    """The memory's write settings, as its service holds them."""
    segmenter = memory.segmenter
    if segmenter is None:  # only before open_service completed the settings
        segmenter = segmenter_for(memory.embeddings or get_default_embeddings(), memory.chunker, None)
    return WriteSettings(
        memory.chunker,
        segmenter,
        memory.max_message_chars,
        memory.importance_scorer,
        memory.daily_log_dir,
        memory.redact_secrets,
        memory.relation_extractor,
    )


def open_service(memory: SessionVectorMemory) -> MemoryService:
    """Complete the memory's settings from its embedding model and open its store.

    Raises:
        InvalidArgumentError: No store or two stores, a segmenter over another model, bad ``search_kwargs``.
        UnsupportedOperationError: ``daily_log_dir`` on a store that is not embedded.
        EmbeddingModelMismatchError: The store was written with another embedding model.
    """
    if memory.vectorstore is not None and memory.chroma_client is not None:
        msg = "Pass either vectorstore= or chroma_client=, not both."
        raise InvalidArgumentError(msg)
    if memory.chroma_client is not None:
        backend: MemoryBackend = ChromaBackend(memory.chroma_client, name=memory.collection_name, shards=memory.shards)
    elif memory.vectorstore is not None:
        backend = backend_for(memory.vectorstore)
    else:
        msg = (
            "SessionVectorMemory needs a store: use SessionVectorMemory.local(path=..., user_id=...), "
            "SessionVectorMemory.server(host=..., port=..., user_id=...), or pass vectorstore=."
        )
        raise InvalidArgumentError(msg)
    backend = open_encrypted(backend, memory.encryption_key, memory.keyring_dir)
    if memory.embeddings is None and memory.vectorstore is not None:
        memory.embeddings = memory.vectorstore.embeddings
    if memory.embeddings is None:
        memory.embeddings = get_default_embeddings()
    embeddings: Embeddings = memory.embeddings
    preferred = getattr(embeddings, "default_lexical_weight", None)  # the lexical weight the model asks for
    if "lexical_weight" not in memory.model_fields_set and isinstance(preferred, int | float):
        memory.lexical_weight = float(preferred)
    memory.segmenter = segmenter_for(embeddings, memory.chunker, memory.segmenter)
    check_search_kwargs(memory.search_kwargs)
    return MemoryService.open(
        backend,
        model_id=memory.embedding_model_id or model_id_of(embeddings),
        embeddings=embeddings,
        writing=write_settings(memory),
        runtime=memory.runtime,
    )
