"""The prompt budget a graph uses: the model's own context window when the model says it.

``LocalChatModel`` knows its window (``n_ctx``) and answer length (``max_tokens``); ``ChatOllama`` knows them
when ``num_ctx`` / ``num_predict`` are set; any LangChain chat model with a profile (``model.profile``) gives
``max_input_tokens``. A model wrapped by ``bind`` / ``with_config`` is looked through. With none of these the
budget is the 8K window of earlier versions.
"""

from __future__ import annotations

from typing import Any

from langchain_session_rag.errors import BudgetExceededError, InvalidArgumentError, QuestionTooLongError
from langchain_session_rag.prompt.budget import TokenBudget

DEFAULT_WINDOW = 8192
"""The budget's window when the model does not say its own."""
DEFAULT_RESERVE = 1024
"""Tokens kept for the answer when the model does not say how long its answers are."""


def _unwrapped(model: Any) -> Any:
    """The chat model inside ``bind`` / ``with_config`` bindings (at most a few levels)."""
    for _ in range(8):
        inner = getattr(model, "bound", None)
        if inner is None:
            return model
        model = inner
    return model


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def model_window(model: Any) -> tuple[int, int | None, str] | None:
    """``(context window, answer tokens or None, where it came from)`` of a chat model, or ``None`` if unknown."""
    model = _unwrapped(model)
    fields = getattr(type(model), "model_fields", {})
    if "n_ctx" in fields and (window := _positive(getattr(model, "n_ctx", None))) is not None:  # LocalChatModel
        return window, _positive(getattr(model, "max_tokens", None)), f"{type(model).__name__}.n_ctx"
    if "num_ctx" in fields and (window := _positive(getattr(model, "num_ctx", None))) is not None:  # ChatOllama
        return window, _positive(getattr(model, "num_predict", None)), f"{type(model).__name__}.num_ctx"
    profile = getattr(model, "profile", None)
    window = _positive(profile.get("max_input_tokens") if isinstance(profile, dict) else None)
    if window is not None:
        answer = _positive(profile.get("max_output_tokens")) if isinstance(profile, dict) else None
        return window + DEFAULT_RESERVE, min(answer or DEFAULT_RESERVE, DEFAULT_RESERVE), "the model's profile"
    return None


def budget_for(model: Any, budget: TokenBudget | None) -> TokenBudget:
    """The graph's budget: ``budget``, or one sized to the model's window (8K when the model does not say).

    Raises:
        InvalidArgumentError: ``budget`` has a larger window than the model's known one (every long turn would
            fail in the model instead of being fitted by the budget).
    """
    known = None if model is None else model_window(model)
    if budget is not None:
        if known is not None and budget.context_window > known[0]:
            msg = (
                f"The budget's context_window ({budget.context_window}) is larger than the model's "
                f"({known[0]}, from {known[2]}): prompts would overflow the model. Leave budget out (the graph "
                f"sizes it to the model), or pass TokenBudget(context_window={known[0]}, ...)."
            )
            raise InvalidArgumentError(msg)
        return budget
    if known is None:
        return TokenBudget(context_window=DEFAULT_WINDOW, reserve_for_answer=DEFAULT_RESERVE)
    window, answer = known[0], known[1]
    reserve = min(answer if answer is not None else DEFAULT_RESERVE, window // 2)
    return TokenBudget(context_window=window, reserve_for_answer=reserve)


def check_question(budget: TokenBudget, question: str) -> None:
    """Refuse a question that cannot fit ``budget`` with the instructions (the graph's first check).

    Raises:
        QuestionTooLongError: It does not fit; the message says by how much and how to fix it.
    """
    try:
        budget.check_question(question)
    except BudgetExceededError as exc:
        msg = f"The question is too long for this model's prompt budget. {exc}"
        raise QuestionTooLongError(msg) from None
