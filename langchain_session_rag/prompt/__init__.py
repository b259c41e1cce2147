"""Token-budgeted prompts: the budget, its report, and the conversation-history helpers."""

from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.prompt.history import HistoryWindow, SummaryBuffer, last_turns, trim_turns
from langchain_session_rag.prompt.report import AssembledPrompt, BudgetReport, RecalledMemory, SectionReport

__all__ = [
    "AssembledPrompt",
    "BudgetReport",
    "HistoryWindow",
    "RecalledMemory",
    "SectionReport",
    "SummaryBuffer",
    "TokenBudget",
    "last_turns",
    "trim_turns",
]
