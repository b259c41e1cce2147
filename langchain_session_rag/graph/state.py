"""Graph state and run context of the session-RAG graph."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

__all__ = ["SessionContext", "SessionRAGState"]


class SessionContext(TypedDict):
    """Run-scoped ids (``context=`` of ``invoke``), never stored in the state."""

    user_id: str
    session_id: str


class SessionRAGState(TypedDict, total=False):
    """State of one conversation thread.

    Only ``messages`` (a bounded recent window) and ``summary`` persist across turns; the other keys are
    overwritten every turn.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    """The recent window of the conversation; older turns live in the vector memory and the summary."""
    summary: str | None
    """Running summary of turns that left the window (when a summary model is configured)."""
    memories: list[Document]
    documents: list[Document]
    prompt: list[dict[str, Any]] | None
    """The messages sent to the model this turn, as ``messages_to_dict`` gives them (``messages_from_dict``
    turns them back); dropped at the end of the turn unless the graph was built with ``keep_prompt=True``.
    Dicts, not message objects, so that ``stream_mode="messages"`` does not stream them."""
    budget_report: dict[str, Any]
    cache: dict[str, Any]
    """This turn's cache decision: ``{"hit": bool, "reason": str}``."""
    llm_calls: int
    """Model calls made this turn (answer and summary)."""
