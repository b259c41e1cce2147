"""Long-term conversational memory for LangChain and LangGraph: past sessions as a RAG corpus.

The package root exports what a user composes: the memory and its runtime settings, the topic segmenter, the
answer cache and its ``BaseCache`` adapter, the token budget, the graph factories, the agent tools and the
LangGraph store, core memory, the importers' entry point, the embeddings and chat model, and the error base.
Everything else is exported by the subpackage it belongs to (``langchain_session_rag.memory``, ``.chunking``,
``.prompt``, ``.cache``, ``.graph``, ``.agents``, ``.importers``, ``.models``, ``.evaluation``, ``.errors``); the
modules inside them are internal. Names that were at the root before 0.7 still import from here, with a
``DeprecationWarning`` naming their new place; they are removed from the root in 0.8.
"""

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from langchain_session_rag.agents.core_tools import create_core_memory_tool
from langchain_session_rag.agents.tools import create_manage_memory_tool, create_search_memory_tool
from langchain_session_rag.cache.llm_cache import SemanticLLMCache
from langchain_session_rag.cache.semantic import SemanticCache
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.importers.ingest import aimport_conversations, import_conversations
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.models.embeddings import LocalEmbeddings, get_default_embeddings
from langchain_session_rag.models.local_llm import LocalChatModel, default_chat_model
from langchain_session_rag.models.multilingual import MultilingualEmbeddings
from langchain_session_rag.prompt.budget import TokenBudget

if TYPE_CHECKING:
    from langchain_session_rag.agents.store import SessionMemoryStore
    from langchain_session_rag.graph.builder import create_memory_agent_graph, create_session_rag_graph

# Imported on first use only: they load LangGraph.
_LAZY = {
    "SessionMemoryStore": "langchain_session_rag.agents.store",
    "create_memory_agent_graph": "langchain_session_rag.graph.builder",
    "create_session_rag_graph": "langchain_session_rag.graph.builder",
}

# Root names before 0.7, and the subpackage that exports them now (see the "Moved in 0.7" table in CHANGELOG.md).
MOVED_IN_0_7 = {
    "AssembledPrompt": "prompt",
    "BudgetReport": "prompt",
    "CacheDecision": "cache",
    "CacheStats": "cache",
    "Chunk": "chunking",
    "Consolidation": "memory",
    "CoreEdit": "agents",
    "CoreVersion": "memory",
    "Curation": "agents",
    "ExchangeChunker": "chunking",
    "HistoryWindow": "prompt",
    "ImportReport": "importers",
    "ImportedConversation": "importers",
    "SectionReport": "prompt",
    "Segment": "chunking",
    "SessionInfo": "memory",
    "SimilarityProfile": "chunking",
    "SummaryBuffer": "prompt",
    "TokenCounter": "models",
    "Turn": "chunking",
    "acurate_core_memory": "agents",
    "cache_scope": "cache",
    "curate_core_memory": "agents",
    "current_cache_user": "cache",
    "last_turns": "prompt",
    "normalize_messages": "chunking",
    "read_conversations": "importers",
    "read_daily_logs": "memory",
    "rebuild_from_daily_logs": "memory",
    "tiktoken_counter": "models",
    "trim_turns": "prompt",
}


def __getattr__(name: str) -> Any:
    """Load the graph factories and the store on first use; serve names moved in 0.7 with a warning."""
    if name in _LAZY:
        return vars(importlib.import_module(_LAZY[name]))[name]
    if name in MOVED_IN_0_7:
        where = f"langchain_session_rag.{MOVED_IN_0_7[name]}"
        msg = (
            f"`langchain_session_rag.{name}` moved to `{where}.{name}` in 0.7; import it from there "
            f"(`from {where} import {name}`). The root name is removed in 0.8."
        )
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        return vars(importlib.import_module(where))[name]
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "CoreMemory",
    "LocalChatModel",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "RuntimeSettings",
    "SemanticCache",
    "SemanticLLMCache",
    "SessionMemoryStore",
    "SessionRAGError",
    "SessionVectorMemory",
    "TokenBudget",
    "TopicSegmenter",
    "aimport_conversations",
    "create_core_memory_tool",
    "create_manage_memory_tool",
    "create_memory_agent_graph",
    "create_search_memory_tool",
    "create_session_rag_graph",
    "default_chat_model",
    "get_default_embeddings",
    "import_conversations",
]
