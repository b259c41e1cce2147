"""Reading the current turn from the graph state: the question, the window before it, the prompt."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, messages_from_dict

from langchain_session_rag.errors import InvalidRequestError
from langchain_session_rag.graph.state import SessionRAGState
from langchain_session_rag.privacy._folding import blank


def asked_message(state: SessionRAGState) -> BaseMessage:
    """The current user message: the last message of the state (``validate`` checks it is a user turn)."""
    return state["messages"][-1]  # a user turn: checked by validate


def prompt_messages(state: SessionRAGState) -> list[BaseMessage]:
    """The turn's budgeted prompt, as messages (kept in the state as message dicts)."""
    prompt = state.get("prompt")
    if prompt is None:  # pragma: no cover - build_prompt runs before
        msg = "No prompt in the state: build_prompt must run before the model."
        raise InvalidRequestError(msg)
    return messages_from_dict(prompt)


def last_human_index(messages: Sequence[BaseMessage]) -> int:
    """The index of the last user message."""
    return max(i for i, m in enumerate(messages) if m.type == "human")


def is_text_only(message: BaseMessage) -> bool:
    """Whether a message holds text only (no image or other block)."""
    content = message.content
    return isinstance(content, str) or all(isinstance(b, str) or b.get("type") == "text" for b in content)


def check_turn(messages: Sequence[BaseMessage]) -> None:
    """Refuse a turn whose messages cannot be answered (the rule of ``validate`` and of the run's input).

    Raises:
        InvalidRequestError: No messages, a last message that is not a user turn, or an empty last user message
            (whitespace, or only characters that draw nothing).
    """
    if not messages:
        msg = "No messages: send at least one user message."
        raise InvalidRequestError(msg)
    if messages[-1].type != "human":
        msg = f"The last message must be a user turn, got a {messages[-1].type!r} message."
        raise InvalidRequestError(msg)
    if blank(messages[-1].text) and is_text_only(messages[-1]):  # whitespace or characters that draw nothing
        msg = "The last user message is empty: send a question."
        raise InvalidRequestError(msg)
