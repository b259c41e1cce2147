"""Retrieval-quality evaluations of the memory on public conversation benchmarks (LoCoMo)."""

from langchain_session_rag.evaluation.locomo import LocomoReport, evaluate_locomo
from langchain_session_rag.evaluation.locomo_data import LocomoConversation, LocomoQuestion, LocomoSession, load_locomo

__all__ = ["LocomoConversation", "LocomoQuestion", "LocomoReport", "LocomoSession", "evaluate_locomo", "load_locomo"]
