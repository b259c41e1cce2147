"""The semantic answer cache, its LangChain ``BaseCache`` adapter, and the user scope of that adapter."""

from langchain_session_rag.cache.decision import CacheDecision, CacheStats
from langchain_session_rag.cache.llm_cache import SemanticLLMCache
from langchain_session_rag.cache.scope import cache_scope, current_cache_user
from langchain_session_rag.cache.semantic import SemanticCache

__all__ = ["CacheDecision", "CacheStats", "SemanticCache", "SemanticLLMCache", "cache_scope", "current_cache_user"]
