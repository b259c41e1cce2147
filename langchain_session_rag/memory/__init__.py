"""The long-term memory: the retriever over past sessions, its runtime settings, pinned core memory, daily logs."""

from langchain_session_rag.memory.consolidation import Consolidation
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.core_text import CoreVersion
from langchain_session_rag.memory.daily_log import read_daily_logs, rebuild_from_daily_logs
from langchain_session_rag.memory.erasure import ErasureReceipt
from langchain_session_rag.memory.listing import SessionInfo
from langchain_session_rag.memory.recall_policy import RecallPolicy
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.service import MemoryService

__all__ = [
    "Consolidation",
    "CoreMemory",
    "CoreVersion",
    "ErasureReceipt",
    "MemoryService",
    "RecallPolicy",
    "RuntimeSettings",
    "SessionInfo",
    "SessionVectorMemory",
    "read_daily_logs",
    "rebuild_from_daily_logs",
]
