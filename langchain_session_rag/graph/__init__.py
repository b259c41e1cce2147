"""The LangGraph session-RAG graph: factory, state, node names and nodes for reuse."""

from langchain_session_rag.graph.builder import (
    aend_session,
    create_memory_agent_graph,
    create_session_rag_graph,
    end_session,
)
from langchain_session_rag.graph.checkpoints import apurge_threads, purge_threads
from langchain_session_rag.graph.names import (
    AGENT,
    BUILD_PROMPT,
    CACHE_LOOKUP,
    CALL_MODEL,
    RETRIEVE_DOCUMENTS,
    RETRIEVE_MEMORIES,
    SUMMARISE_AND_STORE,
    VALIDATE,
)
from langchain_session_rag.graph.nodes import SessionRAGNodes, route_after_cache
from langchain_session_rag.graph.runnables import agent_node, graph_node
from langchain_session_rag.graph.state import SessionContext, SessionRAGState

__all__ = [
    "AGENT",
    "BUILD_PROMPT",
    "CACHE_LOOKUP",
    "CALL_MODEL",
    "RETRIEVE_DOCUMENTS",
    "RETRIEVE_MEMORIES",
    "SUMMARISE_AND_STORE",
    "VALIDATE",
    "SessionContext",
    "SessionRAGNodes",
    "SessionRAGState",
    "aend_session",
    "agent_node",
    "apurge_threads",
    "create_memory_agent_graph",
    "create_session_rag_graph",
    "end_session",
    "graph_node",
    "purge_threads",
    "route_after_cache",
]
