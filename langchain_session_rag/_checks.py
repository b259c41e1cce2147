"""Argument checks shared by the public entry points: each failure is an ``InvalidArgumentError`` naming the value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_session_rag.errors import InvalidArgumentError

__all__ = [
    "check_documents",
    "check_int",
    "check_messages",
    "check_session_id",
    "check_text",
    "first_surrogate",
]


def check_int(name: str, value: object, low: int, *, optional: bool = False) -> Any:
    """An integer ``>= low`` (``None`` too when ``optional``)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        msg = f"{name} must be an integer >= {low}, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def check_text(name: str, value: object, *, optional: bool = False) -> Any:
    """A string (``None`` too when ``optional``)."""
    if not isinstance(value, str) and not (optional and value is None):
        msg = f"{name} must be a string, got {type(value).__name__}."
        raise InvalidArgumentError(msg)
    return value


def _sequence_of(name: str, value: object, kind: type, what: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not all(isinstance(v, kind) for v in value):
        msg = f"{name} must be a list of {what}, got {type(value).__name__}"
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            bad = next(v for v in value if not isinstance(v, kind))
            msg += f" holding a {type(bad).__name__}"
        raise InvalidArgumentError(msg + ".")
    return value


def check_messages(name: str, value: object) -> Sequence[BaseMessage]:
    """A sequence of LangChain messages."""
    return _sequence_of(name, value, BaseMessage, "LangChain messages")


def check_documents(name: str, value: object) -> Sequence[Document]:
    """A sequence of LangChain documents."""
    return _sequence_of(name, value, Document, "LangChain Documents")


def check_session_id(value: object) -> str:
    """A session id: a non-empty string without NUL characters."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        msg = f"session_id must be a non-empty string without NUL characters, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def first_surrogate(text: str) -> int | None:
    """Where a lone surrogate (a UTF-16 half such as U+D800: valid JSON, not storable text) is, or ``None``."""
    return next((n for n, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
