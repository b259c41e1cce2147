"""The pinned tier in the graph: the user's core memory, loaded into every prompt and never truncated."""

from __future__ import annotations

from langchain_session_rag.errors import BudgetExceededError, UnsupportedOperationError
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.report import BudgetReport

__all__ = ["check_pinned", "pinned_text"]


def pinned_text(memory: SessionVectorMemory, user_id: str, enabled: bool) -> str:
    """The user's core memory as the prompt shows it (``""`` when off, or when the store keeps none)."""
    if not enabled:
        return ""
    try:
        return memory.for_user(user_id).core.render()
    except UnsupportedOperationError:  # a store other than Chroma: nothing is pinned
        return ""


def check_pinned(report: BudgetReport) -> None:
    """Refuse a prompt whose core memory was cut or dropped: core memory is never truncated.

    Raises:
        BudgetExceededError: The core memory does not fit the budget's ``core_memory`` allocation.
    """
    core = report.sections["core_memory"]
    if core.truncated or core.dropped_by_allocation or core.dropped_by_overflow:
        msg = (
            f"The user's core memory does not fit this budget's core_memory allocation ({core.allocation} tokens): "
            "lower memory.core_limits or give the budget more room for it. Core memory is never truncated."
        )
        raise BudgetExceededError(msg)
