"""The pinned tier in the graph (core memory, in every prompt, never truncated) and the long-context shortcut."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, messages_to_dict

from langchain_session_rag.errors import BudgetExceededError, UnsupportedOperationError
from langchain_session_rag.graph.state import SessionRAGState
from langchain_session_rag.graph.turn import asked_message
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.budget import DEFAULT_ALLOCATIONS, TokenBudget
from langchain_session_rag.prompt.report import AssembledPrompt, BudgetReport

UNCONFIRMED_MARK = "\x1e"
"""Separates, in the state's ``core_memory``, the pinned blocks from the unconfirmed notes that follow them."""


def pinned_text(memory: SessionVectorMemory, user_id: str, enabled: bool) -> str:
    """The user's core memory as the prompt shows it (``""`` when off, or when the store keeps none).

    That is the pinned blocks, and, when the memory's ``core_agent_edits`` is ``"unconfirmed"`` and a model's edits
    are pending, ``UNCONFIRMED_MARK`` and those edits (which :func:`assemble` shows apart from the pinned notes).
    """
    if not enabled:
        return ""
    try:
        core = memory.for_user(user_id).core
        pinned = core.render().replace(UNCONFIRMED_MARK, " ")
        notes = core.render_unconfirmed() if core.agent_edits == "unconfirmed" else ""
    except UnsupportedOperationError:  # a store other than Chroma: nothing is pinned
        return ""
    return f"{pinned}{UNCONFIRMED_MARK}{notes}" if notes else pinned


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


def memory_allowance(budget: TokenBudget) -> int:
    """Tokens the budget gives retrieved memories when every section is full: the shortcut's allowance."""
    share = (budget.allocations or DEFAULT_ALLOCATIONS).get("memories", DEFAULT_ALLOCATIONS["memories"])
    if isinstance(share, int) and not isinstance(share, bool):  # a number of tokens
        return max(1, share)
    droppable = budget.limit - budget.count(budget.system_prompt + budget.memory_instructions)
    return max(1, int(droppable * share * 0.9))  # a margin for the question and the markers' framing


def memory_mode(memories: list[Document]) -> str:
    """``"all"`` when the turn's memories are the user's whole memory (the shortcut ran), else ``"top_k"``."""
    return "all" if memories and all(d.metadata.get("retrieval_mode") == "all" for d in memories) else "top_k"


def assemble(budget: TokenBudget, state: SessionRAGState, memories: list[Document]) -> AssembledPrompt:
    """The turn's prompt within the budget: core memory, summary, history, memories, documents, question.

    Unconfirmed notes (see :func:`pinned_text`) go to their own block, never among the pinned notes.
    """
    pinned, _, unconfirmed = (state.get("core_memory") or "").partition(UNCONFIRMED_MARK)
    return budget.assemble(
        asked_message(state).text,
        history=state["messages"][:-1],  # the conversation before the question
        memories=memories,
        documents=state.get("documents", []),
        summary=state.get("summary"),
        core_memory=pinned or None,
        unconfirmed_notes=unconfirmed or None,
        relations=state.get("relations") or [],
    )


def memories_cut(report: BudgetReport) -> bool:
    """Whether the budget dropped or truncated any retrieved memory."""
    section = report.sections["memories"]
    return bool(section.dropped_by_allocation or section.dropped_by_overflow or section.truncated)


def finished(report: BudgetReport, mode: str | None, messages: list[BaseMessage]) -> dict[str, Any]:
    """The state update of ``build_prompt``: the prompt as dicts and the report (core memory checked whole)."""
    check_pinned(report)
    report.memory_mode = mode or "top_k"
    return {"prompt": messages_to_dict(messages), "budget_report": asdict(report)}


def relations_for(memory: Any, question: str) -> list[str]:
    """The relation lines of the entities ``question`` names (none when the memory extracts no relations)."""
    return memory.relation_lines(question) if memory.relation_extractor is not None else []
