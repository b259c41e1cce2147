"""Argument checks shared by the public entry points: each failure is an ``InvalidArgumentError`` naming the value."""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_session_rag.errors import InvalidArgumentError

MAX_SESSION_ID_CHARS = 512
"""The longest session id accepted (a ChatGPT conversation id is 36, a notes file's session id under 300)."""
MAX_USER_ID_CHARS = 256
"""The longest user id accepted (an e-mail address is at most 254)."""
SYSTEM_PREFIX = "\x1f"
"""Prefix of the ids of system scopes (a store's shared namespaces): code may choose them, no caller can name them."""
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
"""Control characters (NUL, line breaks, escapes), lone surrogates, and the Unicode line and paragraph separators."""
_JOINERS = frozenset("\u200c\u200d")
"""Format characters kept: the zero-width (non-)joiners of emoji sequences and Indic and Persian scripts."""


def check_int(name: str, value: object, low: int, *, optional: bool = False) -> Any:
    """An integer ``>= low`` (``None`` too when ``optional``)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        msg = f"{name} must be an integer >= {low}, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def check_ids(value: object) -> Any:
    """Chunk ids: a list (or tuple) of strings, never one string (it would be read as ids of one character)."""
    if (
        isinstance(value, str | bytes)
        or not isinstance(value, list | tuple)
        or not all(isinstance(i, str) for i in value)
    ):
        msg = f"ids must be a list of chunk ids, got {value!r:.200}."
        raise InvalidArgumentError(msg)
    return value


def check_path(name: str, value: object) -> Any:
    """A file path: a string or an ``os.PathLike`` (not bytes, not a number), non-empty."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        msg = f"{name} must be a file path (a non-empty string or a pathlib.Path), got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def check_text(name: str, value: object, *, optional: bool = False) -> Any:
    """A string (``None`` too when ``optional``)."""
    if not isinstance(value, str) and not (optional and value is None):
        msg = f"{name} must be a string, got {type(value).__name__}."
        raise InvalidArgumentError(msg)
    return value


def check_unit_interval(name: str, value: object, *, optional: bool = False) -> Any:
    """A number in ``[0, 1]`` (a threshold, a weight, an importance); ``None`` too when ``optional``."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        msg = f"{name} must be a number in [0, 1], got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def user_id_problem(value: object, *, system_ok: bool = False) -> str | None:
    """What makes ``value`` unfit as a user id (see :func:`check_user_id`), or ``None`` when it is fit."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if not value.strip():
        return "blank"
    if len(value) > MAX_USER_ID_CHARS:
        return f"{len(value):,} characters long, over the limit of {MAX_USER_ID_CHARS}"
    if "\x00" in value or first_surrogate(value) is not None:
        return "holding a NUL character or a lone surrogate"
    if value.startswith(SYSTEM_PREFIX) and not system_ok:
        return "starting with the system scope prefix U+001F"
    controls = any(unicodedata.category(c) == "Cc" for c in (value.replace(SYSTEM_PREFIX, "") if system_ok else value))
    return "holding a control character (a tab, a line break, ...)" if controls else None


def _shown(value: object, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (an error message names the value, not a megabyte of it)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def check_user_id(value: object, *, system_ok: bool = False) -> str:
    """A user id: the one check of every path that takes one (memory, cache, store namespaces, a run's ids).

    Args:
        value: The user id given.
        system_ok: A system scope's id (starting with :data:`SYSTEM_PREFIX`) is accepted: code chose it.

    Raises:
        InvalidArgumentError: It is not a string, is blank, longer than :data:`MAX_USER_ID_CHARS`, holds a NUL or
            a lone surrogate or a control character, or starts with :data:`SYSTEM_PREFIX`. Nothing was read or
            written.
    """
    problem = user_id_problem(value, system_ok=system_ok)
    if problem is not None:
        shown = _shown(value)
        msg = (
            f"user_id must be a non-blank string of at most {MAX_USER_ID_CHARS} characters without NUL or control "
            f"prefix, got {shown} ({problem}). Use a plain id such as 'alice' or 'user-42'."
        )
        raise InvalidArgumentError(msg)
    return str(value)


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


def session_id_problem(value: object) -> str | None:
    """What makes ``value`` unfit as a session id, or ``None`` when it is fit.

    A session id is shown to models (tool outputs, prompts) and people (the CLI): it must be a non-blank string of
    at most :data:`MAX_SESSION_ID_CHARS` characters without control characters (NUL, tab, line breaks, escapes),
    Unicode line or paragraph separators, lone surrogates, or format characters (bidi overrides, zero-width spaces;
    the zero-width joiners are kept), so it cannot start a new line or reorder what is shown around it.
    """
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if not value.strip():
        return "blank"
    if len(value) > MAX_SESSION_ID_CHARS:
        return f"{len(value):,} characters long, over the limit of {MAX_SESSION_ID_CHARS}"
    if value.isprintable():  # the common case, in C: printable text holds no control or format character
        return None
    for n, ch in enumerate(value):
        if _unfit(ch):
            return f"holding the control or format character U+{ord(ch):04X} at position {n}"
    return None


def check_session_id(value: object, *, empty_ok: bool = False) -> str:
    """A session id fit to store and show (see :func:`session_id_problem`): the one check of every entry path.

    Args:
        value: The session id given.
        empty_ok: ``""`` is accepted too (``add_note``'s "no session").

    Raises:
        InvalidArgumentError: It is not a string, is blank, too long, or holds a control, line-break or format
            character. Nothing was read or written.
    """
    if empty_ok and value == "":
        return value
    problem = session_id_problem(value)
    if problem is not None:
        shown = _shown(value)
        msg = (
            f"session_id must be a non-blank string of at most {MAX_SESSION_ID_CHARS} characters without control "
            f"characters or line breaks, got {shown} ({problem}). Use a plain id such as 'chat-2026-02-06'."
        )
        raise InvalidArgumentError(msg)
    return str(value)


def one_line(text: str) -> str:
    """``text`` on one line: each run of control, line-break, format characters and spaces becomes one space."""
    if text.isprintable():
        return " ".join(text.split())
    return " ".join("".join(" " if _unfit(ch) else ch for ch in text).split())


def _unfit(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in _UNSAFE_CATEGORIES or (category == "Cf" and ch not in _JOINERS)


def safe_session_id(value: str) -> str:
    """``value`` when it is a fit session id, else a fit id derived from it (for importers).

    The derived id keeps the readable part (each run of unfit characters becomes one space, the rest is cut to
    fit) and ends with a hash of the whole original, so two different unfit ids never map to the same id and the
    same file always maps the same way (a re-import recognises its sessions).
    """
    if session_id_problem(value) is None:
        return value
    readable = one_line(value)[: MAX_SESSION_ID_CHARS - 32]
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{readable}-{digest}" if readable else f"session-{digest}"


def first_surrogate(text: str) -> int | None:
    """Where a lone surrogate (a UTF-16 half such as U+D800: valid JSON, not storable text) is, or ``None``.

    UTF-8 encodes every other character, so the encoder (in C) finds the first one.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None
