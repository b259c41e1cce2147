"""Agent-native memory: tools for tool-calling agents and a LangGraph ``BaseStore`` over the memory."""

from typing import TYPE_CHECKING, Any

from langchain_session_rag.agents.core_tools import (
    CoreEdit,
    Curation,
    acurate_core_memory,
    create_core_memory_tool,
    curate_core_memory,
)
from langchain_session_rag.agents.relation_tools import create_relations_tool
from langchain_session_rag.agents.tools import create_manage_memory_tool, create_search_memory_tool

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
    "CoreEdit",
    "Curation",
    "SessionMemoryStore",
    "acurate_core_memory",
    "create_core_memory_tool",
    "create_manage_memory_tool",
    "create_relations_tool",
    "create_search_memory_tool",
    "curate_core_memory",
]
