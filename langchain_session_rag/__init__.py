"""Long-term conversational memory for LangChain and LangGraph: past sessions as a RAG corpus."""

from typing import TYPE_CHECKING, Any

from langchain_session_rag.agents.core_tools import (
    CoreEdit,
    Curation,
    acurate_core_memory,
    create_core_memory_tool,
    curate_core_memory,
)
from langchain_session_rag.agents.tools import create_manage_memory_tool, create_search_memory_tool
from langchain_session_rag.cache.decision import CacheDecision, CacheStats
from langchain_session_rag.cache.llm_cache import SemanticLLMCache
from langchain_session_rag.cache.scope import cache_scope, current_cache_user
from langchain_session_rag.cache.semantic import SemanticCache
from langchain_session_rag.chunking.exchanges import Chunk, ExchangeChunker
from langchain_session_rag.chunking.messages import Turn, normalize_messages
from langchain_session_rag.chunking.segmenter import Segment, SimilarityProfile, TopicSegmenter
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.importers.files import read_conversations
from langchain_session_rag.importers.ingest import aimport_conversations, import_conversations
from langchain_session_rag.importers.types import ImportedConversation, ImportReport
from langchain_session_rag.memory.core import CoreMemory, CoreVersion
from langchain_session_rag.memory.daily_log import read_daily_logs, rebuild_from_daily_logs
from langchain_session_rag.memory.retriever import Consolidation, SessionInfo, SessionVectorMemory
from langchain_session_rag.models.embeddings import LocalEmbeddings, get_default_embeddings
from langchain_session_rag.models.local_llm import LocalChatModel, default_chat_model
from langchain_session_rag.models.multilingual import MultilingualEmbeddings
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.prompt.history import HistoryWindow, SummaryBuffer, last_turns, trim_turns
from langchain_session_rag.prompt.report import AssembledPrompt, BudgetReport, SectionReport

if TYPE_CHECKING:
    from langchain_session_rag.agents.store import SessionMemoryStore


def __getattr__(name: str) -> Any:
    """Import ``SessionMemoryStore`` (and LangGraph's store interface) on first use only."""
    if name == "SessionMemoryStore":
        from langchain_session_rag.agents.store import SessionMemoryStore  # noqa: PLC0415

        return SessionMemoryStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "AssembledPrompt",
    "BudgetReport",
    "CacheDecision",
    "CacheStats",
    "Chunk",
    "Consolidation",
    "CoreEdit",
    "CoreMemory",
    "CoreVersion",
    "Curation",
    "ExchangeChunker",
    "HistoryWindow",
    "ImportReport",
    "ImportedConversation",
    "LocalChatModel",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "SectionReport",
    "Segment",
    "SemanticCache",
    "SemanticLLMCache",
    "SessionInfo",
    "SessionMemoryStore",
    "SessionRAGError",
    "SessionVectorMemory",
    "SimilarityProfile",
    "SummaryBuffer",
    "TokenBudget",
    "TokenCounter",
    "TopicSegmenter",
    "Turn",
    "acurate_core_memory",
    "aimport_conversations",
    "cache_scope",
    "create_core_memory_tool",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "curate_core_memory",
    "current_cache_user",
    "default_chat_model",
    "get_default_embeddings",
    "import_conversations",
    "last_turns",
    "normalize_messages",
    "read_conversations",
    "read_daily_logs",
    "rebuild_from_daily_logs",
    "tiktoken_counter",
    "trim_turns",
]
