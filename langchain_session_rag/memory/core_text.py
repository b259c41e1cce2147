"""The text side of core memory: limits, the edits (append, replace, remove) as text changes, and provenance.

Every version and every pending proposal says who wrote it (``author``: ``user``, ``app``, ``agent``,
``curator``, ``import``) and whether a person or the application confirmed it (``confirmed``). Edits written by a
model (``agent``, ``curator``) are proposals until confirmed, unless the application's policy pins them
(:data:`AgentEdits`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from langchain_session_rag.errors import InvalidArgumentError

DEFAULT_CORE_LIMITS: dict[str, int] = {"now": 300, "memory": 700}
"""Token limits of the default blocks: together they fit the default budget's ``core_memory`` allocation
(15 % of an 8K window less the answer's reserve: about 1,075 tokens)."""

AgentEdits = Literal["approve", "unconfirmed", "pin"]
"""What happens to a core memory edit a model makes (the core memory tool, automatic curation):

- ``"approve"`` (default): it is stored as a pending proposal, never shown in a prompt, and pinned only when the
  application or the user confirms it (``core.confirm(id)``; ``core.reject(id)`` drops it).
- ``"unconfirmed"``: as ``"approve"``, but the graph's prompt also shows pending proposals in their own section,
  apart from the pinned notes and labelled as unconfirmed notes written by the assistant (not instructions).
- ``"pin"``: applied at once and pinned in every prompt (the 0.6 behaviour; versions say ``confirmed=False``).
"""
AGENT_EDITS: tuple[AgentEdits, ...] = ("approve", "unconfirmed", "pin")
AGENT_AUTHORS = frozenset({"agent", "curator"})
"""Authors whose edits are a model's: unconfirmed unless confirmed."""
EditAction = Literal["append", "replace", "remove"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class CoreVersion:
    """One version of a block: its text after an edit, who made it, when and how."""

    block: str
    version: int
    text: str
    action: str
    """``write``, ``append``, ``replace``, ``remove``, ``undo`` or ``import``."""
    author: str
    at: datetime
    confirmed: bool = True
    """Whether a person or the application made or confirmed the edit (``False``: a model's edit pinned by the
    ``agent_edits="pin"`` policy)."""


@dataclass(frozen=True)
class CoreProposal:
    """A model's edit of a block, waiting: ``core.confirm(id)`` pins it, ``core.reject(id)`` drops it."""

    id: str
    block: str
    action: EditAction
    text: str
    """The line to add, the new text, or the line/heading to remove."""
    old: str | None
    """For ``replace``: the line it replaces (``None``: the whole block)."""
    author: str
    at: datetime


def check_core_limits(value: object) -> Mapping[str, int]:
    """Core memory limits: block names (identifiers) mapped to positive token counts.

    Raises:
        InvalidArgumentError: Anything else (no block, a name that is not an identifier, a count that is a bool,
            not an integer, or below 1).
    """
    if (
        not isinstance(value, Mapping)
        or not value
        or any(
            not isinstance(n, str) or not n.isidentifier() or isinstance(v, bool) or not isinstance(v, int) or v < 1
            for n, v in value.items()
        )
    ):
        msg = f"core_limits must map block names (identifiers) to positive token counts, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def check_agent_edits(value: object) -> AgentEdits:
    """The policy for a model's core memory edits.

    Raises:
        InvalidArgumentError: Not one of ``"approve"``, ``"unconfirmed"``, ``"pin"``.
    """
    for policy in AGENT_EDITS:
        if value == policy and isinstance(value, str):
            return policy
    msg = f"agent_edits must be one of {list(AGENT_EDITS)}, got {value!r}."
    raise InvalidArgumentError(msg)


def normal(text: str) -> str:
    """Block text as stored: LF line ends, no leading or trailing blank lines."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def check_text(name: str, value: object) -> None:
    """Refuse a text argument that is not a string.

    Raises:
        InvalidArgumentError: ``value`` is not a string.
    """
    if not isinstance(value, str):
        msg = f"Core memory {name} must be a string, got {type(value).__name__}."
        raise InvalidArgumentError(msg)


def _without(current: str, target: str, block: str) -> str:
    """``current`` without the section headed ``target``, else without the first line equal to ``target``."""
    lines = current.split("\n")
    fenced, headings = False, []
    for n, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)):
            headings.append((n, len(heading.group(1)), heading.group(2), line.strip()))
    for position, (n, level, title, raw) in enumerate(headings):
        if target in (raw, title):
            end = next((m for m, lv, _, _ in headings[position + 1 :] if lv <= level), len(lines))
            return "\n".join(lines[:n] + lines[end:])
    for n, line in enumerate(lines):
        if line.strip() == target:
            return "\n".join(lines[:n] + lines[n + 1 :])
    msg = f"Core memory block {block!r} has no line or heading {target!r}; nothing was removed."
    raise InvalidArgumentError(msg)


def _replaced(current: str, block: str, old: str, new: str) -> str:
    lines = current.split("\n")
    stripped = [line.strip() for line in lines]
    if old.strip() not in stripped or not old.strip():
        msg = f"Core memory block {block!r} has no line {old!r}; nothing was replaced."
        raise InvalidArgumentError(msg)
    at = stripped.index(old.strip())
    return "\n".join([*lines[:at], new, *lines[at + 1 :]])


def change_for(action: str, block: str, text: str, old: str | None = None) -> Callable[[str], str]:
    """The change an edit makes to a block's current text (checked when applied).

    ``append`` adds ``text`` as a line; ``remove`` deletes the line or section ``text``; ``replace`` puts ``text``
    in place of the line ``old`` (of the whole block when ``old`` is empty).

    Raises:
        InvalidArgumentError: A text that is not a string, an empty ``remove`` target, or an unknown action.
    """
    check_text("text", text)
    if action == "append":
        return lambda current: f"{current}\n{text}" if current else text
    if action == "remove":
        if not text.strip():
            msg = "remove() needs the line or heading to remove, got an empty text."
            raise InvalidArgumentError(msg)
        return lambda current: _without(current, text.strip(), block)
    if action == "replace" and old:
        check_text("old", old)
        return lambda current: _replaced(current, block, old, text)
    if action in {"replace", "write"}:
        return lambda _: text
    msg = f"Unknown core memory action {action!r}; actions: append, replace, remove."
    raise InvalidArgumentError(msg)
