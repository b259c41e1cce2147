"""Long-term conversational memory for LangChain and LangGraph: past sessions as a RAG corpus."""

from langchain_session_rag.budget import AssembledPrompt, BudgetReport, TokenBudget
from langchain_session_rag.cache import (
    CacheDecision,
    CacheStats,
    SemanticCache,
    SemanticLLMCache,
    cache_scope,
    current_cache_user,
)
from langchain_session_rag.conversation import ExchangeChunker
from langchain_session_rag.embeddings import LocalEmbeddings, get_default_embeddings
from langchain_session_rag.history import HistoryWindow, SummaryBuffer, last_turns, trim_turns
from langchain_session_rag.memory import Consolidation, SessionVectorMemory
from langchain_session_rag.segmentation import SimilarityProfile, TopicSegmenter

__all__ = [
    "AssembledPrompt",
    "BudgetReport",
    "CacheDecision",
    "CacheStats",
    "Consolidation",
    "ExchangeChunker",
    "HistoryWindow",
    "LocalEmbeddings",
    "SemanticCache",
    "SemanticLLMCache",
    "SessionVectorMemory",
    "SimilarityProfile",
    "SummaryBuffer",
    "TokenBudget",
    "TopicSegmenter",
    "cache_scope",
    "current_cache_user",
    "get_default_embeddings",
    "last_turns",
    "trim_turns",
]
