"""The prompt budget a graph uses: the model's own context window when the model says it.

``LocalChatModel`` knows its window (``n_ctx``) and answer length (``max_tokens``); ``ChatOllama`` knows them
when ``num_ctx`` / ``num_predict`` are set; any LangChain chat model with a profile (``model.profile``) gives
``max_input_tokens``; ``ChatOllama`` without ``num_ctx`` gets Ollama's default window (4,096). A model wrapped by
``bind`` / ``with_config`` is looked through. With none of these the budget is the 8K window of earlier versions.
A model that counts its own tokens (its class overrides ``get_num_tokens``: ``LocalChatModel`` reads its GGUF
vocabulary) counts the budget too; other models are counted with tiktoken's ``cl100k_base``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.language_models import BaseLanguageModel

from langchain_session_rag.errors import BudgetExceededError, InvalidArgumentError, QuestionTooLongError
from langchain_session_rag.prompt.budget import TokenBudget

DEFAULT_WINDOW = 8192
"""The budget's window when the model does not say its own."""
DEFAULT_RESERVE = 1024
"""Tokens kept for the answer when the model does not say how long its answers are."""
OLLAMA_DEFAULT_WINDOW = 4096
"""Ollama's window when a request sets no ``num_ctx`` (its default since 0.6; older servers used 2,048)."""


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


@dataclass(frozen=True)
class ModelWindow:
    """What a chat model says about its prompt: window, answer length, how it counts tokens."""

    window: int
    answer: int | None
    source: str
    """Where the window came from (``LocalChatModel.n_ctx``, ...), for messages."""
    counter: Callable[[str], int] | None = None
    """The model's own token counter (its ``get_num_tokens``) when it has one; tiktoken otherwise."""
    tokens_per_message: int | None = None


def _own_counter(model: Any) -> Callable[[str], int] | None:
    """``model.get_num_tokens`` when the model's class counts its own tokens (LangChain's default needs
    ``transformers`` and GPT-2's tokenizer, which says little about another model).
    """  # noqa: D205
    method = getattr(type(model), "get_num_tokens", None)
    if method is None or method is BaseLanguageModel.get_num_tokens:
        return None
    return cast("Callable[[str], int]", model.get_num_tokens)


def model_window(model: Any) -> ModelWindow | None:
    """The model's window, answer length and token counter, or ``None`` when it does not say its window."""
    model = _unwrapped(model)
    fields = getattr(type(model), "model_fields", {})
    counter = _own_counter(model)
    per_message = _positive(getattr(model, "tokens_per_message", None))
    name = type(model).__name__
    if "n_ctx" in fields and (window := _positive(getattr(model, "n_ctx", None))) is not None:  # LocalChatModel
        answer = _positive(getattr(model, "max_tokens", None))
        return ModelWindow(window, answer, f"{name}.n_ctx", counter, per_message)
    if "num_ctx" in fields:  # ChatOllama: Ollama's own default window when num_ctx is not set
        window = _positive(getattr(model, "num_ctx", None))
        answer = _positive(getattr(model, "num_predict", None))
        source = f"{name}.num_ctx" if window is not None else "Ollama's default num_ctx"
        return ModelWindow(window or OLLAMA_DEFAULT_WINDOW, answer, source, counter, per_message)
    profile = getattr(model, "profile", None)
    window = _positive(profile.get("max_input_tokens") if isinstance(profile, dict) else None)
    if window is not None:
        answer = _positive(getattr(model, "max_tokens", None)) or DEFAULT_RESERVE
        return ModelWindow(window + answer, answer, "the model's profile", counter, per_message)
    return None


def budget_for(model: Any, budget: TokenBudget | None) -> TokenBudget:
    """The graph's budget: ``budget``, or one sized to the model's window (8K when the model does not say).

    The budget counts tokens with the model's own counter when it has one (``LocalChatModel`` reads its GGUF
    vocabulary: SmolLM2 splits digits and CJK text far finer than tiktoken does).

    Raises:
        InvalidArgumentError: ``budget`` has a larger window than the model's known one (every long turn would
            fail in the model instead of being fitted by the budget).
    """
    known = None if model is None else model_window(model)
    if budget is not None:
        if known is not None and budget.context_window > known.window:
            msg = (
                f"The budget's context_window ({budget.context_window}) is larger than the model's "
                f"({known.window}, from {known.source}): prompts would overflow the model. Leave budget out (the "
                f"graph sizes it to the model), or pass TokenBudget(context_window={known.window}, ...)."
            )
            raise InvalidArgumentError(msg)
        return budget
    if known is None:
        return TokenBudget(context_window=DEFAULT_WINDOW, reserve_for_answer=DEFAULT_RESERVE)
    reserve = min(known.answer if known.answer is not None else DEFAULT_RESERVE, known.window // 2)
    return TokenBudget(context_window=known.window, reserve_for_answer=reserve, **counting_of(model))


def counting_of(model: Any) -> dict[str, Any]:
    """``TokenBudget`` settings that count as ``model`` does (its own counter and per-message cost), if it says."""
    known = model_window(model)
    extra: dict[str, Any] = {}
    if known is not None and known.counter is not None:
        extra["token_counter"] = known.counter
    if known is not None and known.tokens_per_message is not None:
        extra["tokens_per_message"] = known.tokens_per_message
    return extra


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
