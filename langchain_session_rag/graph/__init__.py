"""The LangGraph session-RAG graph: factories, state and context, node names and nodes for reuse."""

import warnings
from typing import Any

from langchain_session_rag.graph.builder import (
    aend_session,
    create_memory_agent_graph,
    create_session_rag_graph,
    end_session,
)
from langchain_session_rag.graph.checkpoints import apurge_threads, encrypted_serde, purge_threads
from langchain_session_rag.graph.names import Node
from langchain_session_rag.graph.nodes import SessionRAGNodes, route_after_cache
from langchain_session_rag.graph.runnables import agent_node, graph_node
from langchain_session_rag.graph.state import SessionContext, SessionRAGState

_NODE_CONSTANTS = frozenset(name for name in vars(Node) if not name.startswith("_"))


def __getattr__(name: str) -> Any:
    """Serve the node-name constants of before 0.7 (``CALL_MODEL``, ...) with a warning naming ``Node``."""
    if name in _NODE_CONSTANTS:
        msg = (
            f"`langchain_session_rag.graph.{name}` is deprecated since 0.7: use `Node.{name}` "
            f"(`from langchain_session_rag.graph import Node`). It is removed in 0.8."
        )
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        return vars(Node)[name]
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "Node",
    "SessionContext",
    "SessionRAGNodes",
    "SessionRAGState",
    "aend_session",
    "agent_node",
    "apurge_threads",
    "create_memory_agent_graph",
    "create_session_rag_graph",
    "encrypted_serde",
    "end_session",
    "graph_node",
    "purge_threads",
    "route_after_cache",
]
