"""memory."""

from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.service import MemoryService

__all__ = ["MemoryService", "RuntimeSettings"]
