"""Core memory for agents: a tool that edits the run's user's pinned blocks, and end-of-session curation.

The user comes from the run (``config["configurable"]["user_id"]`` or the LangGraph ``context``), as for the memory
tools; the model names only the block, the action and the text. Curation asks a chat model for edits once (bounded
calls) and applies them only when approved, or when told to apply them automatically.

A model's edits follow the ``agent_edits`` policy (default: the memory's ``core_agent_edits``, ``"approve"``): they
are stored as proposals that the application confirms (``memory.core.pending()`` / ``confirm(id)`` /
``reject(id)``), not pinned, so a retrieved text telling the model to save a "standing order" cannot put it in
every later prompt. ``"pin"`` restores immediate pinning.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field

from langchain_session_rag._checks import check_int
from langchain_session_rag.agents.tools import check_tool_args, structured_tool
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.core_text import AgentEdits, CoreProposal, CoreVersion, change_for, check_agent_edits
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.quoting import quote_data, quote_field

CoreAction = Literal["append", "replace", "remove"]
CORE_DESCRIPTION = (
    "Edit the user's pinned core memory, which is shown in every prompt: block 'now' holds the current focus, "
    "block 'memory' long-term facts, preferences and standing decisions. action='append' adds text as a line; "
    "action='replace' puts text in place of the line 'old' (or of the whole block when old is empty); "
    "action='remove' deletes the line (or markdown section) given as text. Keep it short: blocks have a limit."
)


class CoreMemoryInput(BaseModel):
    """Arguments the model gives the core memory tool."""

    action: CoreAction = Field(description="append, replace or remove.")
    block: str = Field(default="memory", description="The block: 'now' or 'memory'.")
    text: str = Field(description="The line to add, the new text, or the line/heading to remove.")
    old: str | None = Field(default=None, description="For replace: the exact line to replace.")


@dataclass(frozen=True)
class CoreEdit:
    """An edit of the core memory proposed by curation."""

    action: CoreAction
    block: str
    text: str
    old: str | None = None


def edit_core(core: CoreMemory, edit: CoreEdit, author: str, policy: AgentEdits | None = None) -> str:
    """Make one edit of a model's, as ``policy`` says (default: the core memory's); return what the model is told.

    Under ``"approve"`` and ``"unconfirmed"`` the edit is stored as a proposal (nothing is pinned); under ``"pin"``
    it is applied at once.
    """
    action, block, text, old = edit.action, edit.block, edit.text, edit.old
    if (policy or core.agent_edits) != "pin":
        proposal = core.propose(action, block, text, old=old or None, author=author)
        return (
            f"Proposed (pending the user's confirmation, not pinned yet) as edit {proposal.id} of core memory "
            f"{block!r}."
        )
    version = apply_edit(core, edit, author, confirmed=False)
    head = f"Core memory {quote_field(block)} is now version {version.version} (quoted as data):"
    return f"{head}\n{quote_data(version.text)}"


def apply_edit(core: CoreMemory, edit: CoreEdit, author: str, *, confirmed: bool) -> CoreVersion:
    """Pin one edit now (a version by ``author``; ``confirmed``: whether the application approved it)."""
    change = change_for(edit.action, core.check_block(edit.block), edit.text, edit.old)
    return core.apply(edit.block, change, edit.action, author, confirmed=confirmed)


def create_core_memory_tool(
    memory: SessionVectorMemory,
    *,
    name: str = "edit_core_memory",
    description: str = CORE_DESCRIPTION,
    actions: tuple[CoreAction, ...] = ("append", "replace", "remove"),
    agent_edits: AgentEdits | None = None,
) -> BaseTool:
    """A tool that edits the run's user's core memory (sync and async), as author ``agent``.

    ``agent_edits`` (default: the memory's ``core_agent_edits``, ``"approve"``) decides what an edit does:
    ``"approve"`` stores it as a proposal the application confirms (``memory.core.confirm(id)``) before it is
    pinned; ``"unconfirmed"`` does the same and the graph's prompt shows it apart, as an unconfirmed note written
    by the assistant; ``"pin"`` pins it at once (a version with ``confirmed=False``).

    Errors (a full block, an unknown block or line) reach the model as the tool's answer; the user can always
    ``memory.core.undo(block)``.

    Raises:
        InvalidArgumentError: An unknown action or policy.
    """
    allowed = check_tool_args(memory, actions, ("append", "replace", "remove"))
    policy = None if agent_edits is None else check_agent_edits(agent_edits)

    def edit(
        config: RunnableConfig, action: CoreAction, text: str, block: str = "memory", old: str | None = None
    ) -> str:
        if action not in allowed:
            return f"Nothing changed: this tool may only {', '.join(allowed)}."
        try:
            return edit_core(memory.for_run(config).core, CoreEdit(action, block, text, old), "agent", policy)
        except SessionRAGError as exc:
            raise ToolException(str(exc)) from exc

    return structured_tool(edit, None, name, description, CoreMemoryInput, artifact=False)


@dataclass
class Curation:
    """What a curation proposed and what it applied."""

    proposed: list[CoreEdit] = field(default_factory=list)
    applied: list[CoreEdit] = field(default_factory=list)
    """Edits pinned: approved by ``approve``, or applied by ``auto_apply`` under ``agent_edits="pin"``."""
    pending: list[CoreProposal] = field(default_factory=list)
    """Edits ``auto_apply`` stored as proposals (the default ``agent_edits="approve"``): ``memory.core.confirm``."""
    rejected: list[tuple[CoreEdit, str]] = field(default_factory=list)
    """Edits not applied, with why (not approved, or refused by the block: full, unknown line)."""
    model_calls: int = 0


CURATION_PROMPT = (
    "You maintain a user's pinned core memory: short markdown blocks shown in every prompt. Blocks now:\n{blocks}\n\n"
    "From the conversation below, propose at most {max_edits} edits that keep the blocks true and short: append a "
    "lasting fact, preference or standing decision the user stated; replace or remove a line the conversation made "
    "wrong. Propose nothing for small talk. Answer with JSON only: a list of objects with keys action "
    "(append|replace|remove), block ({names}), text and, for replace, old."
)


def _first_list(text: str) -> list[Any] | None:
    """The first JSON list in ``text`` (models wrap it in prose or code fences)."""
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\[", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value)):
            return value  # an empty list (no edits) or a list of edits; "[2]" in prose is skipped
    return None


def _parse_edits(text: str, blocks: Sequence[str], max_edits: int) -> list[CoreEdit] | None:
    raw = _first_list(text)
    if raw is None:
        return None
    edits = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        action, block, body = item.get("action"), item.get("block", "memory"), item.get("text")
        old = item.get("old")
        if action == "replace" and not (isinstance(old, str) and old.strip()):
            continue  # a model never replaces a whole block: it names the line it corrects
        if action in ("append", "replace", "remove") and block in blocks and isinstance(body, str) and body.strip():
            edits.append(CoreEdit(action, block, body.strip(), old if isinstance(old, str) else None))
    return edits[:max_edits]


def curate_core_memory(
    memory: SessionVectorMemory,
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    approve: Callable[[CoreEdit], bool] | None = None,
    auto_apply: bool = False,
    max_calls: int = 1,
    max_edits: int = 5,
    agent_edits: AgentEdits | None = None,
) -> Curation:
    """Ask ``model`` for core memory edits from a session's ``messages``; apply the approved ones.

    The model is called at most ``max_calls`` times (again only when its answer is not a JSON list of edits).
    An edit is pinned when ``approve(edit)`` returns ``True`` (the application's confirmation; every edit is put
    to ``approve`` before any is applied). Without ``approve``, ``auto_apply`` hands the edits to the
    ``agent_edits`` policy (default: the memory's ``core_agent_edits``, ``"approve"``): they are stored as
    proposals (``Curation.pending``; ``memory.core.confirm(id)`` pins one), or pinned at once under ``"pin"``.
    Otherwise they are only returned as proposed. A proposed ``replace`` must name the line it corrects (``old``):
    a model never rewrites a whole block. Pinned edits are versions by author ``curator`` (``core.undo`` reverts).

    Raises:
        InvalidArgumentError: ``max_calls`` or ``max_edits`` below 1, or an unknown policy.
    """
    check_int("max_calls", max_calls, 1)
    check_int("max_edits", max_edits, 1)
    policy = check_agent_edits(agent_edits if agent_edits is not None else memory.core_agent_edits)
    core = memory.core
    blocks = core.blocks()
    shown = "\n".join(f"## {b.upper()}.md\n{t or '(empty)'}" for b, t in blocks.items())
    prompt = CURATION_PROMPT.format(blocks=shown, max_edits=max_edits, names="|".join(blocks))
    conversation = "\n".join(f"{m.type} said:\n{quote_data(m.text)}" for m in messages)  # no text starts a role line
    result = Curation()
    for _ in range(max_calls):
        answer = model.invoke([SystemMessage(prompt), HumanMessage(conversation)])
        result.model_calls += 1
        edits = _parse_edits(answer.text, list(blocks), max_edits)
        if edits is not None:
            result.proposed = edits
            break
    decisions = [approve(e) if approve is not None else auto_apply for e in result.proposed]  # asked before any edit
    for edit, approved in zip(result.proposed, decisions, strict=True):
        if not approved:
            result.rejected.append((edit, "not approved"))
            continue
        try:
            if approve is None and policy != "pin":
                result.pending.append(core.propose(edit.action, edit.block, edit.text, old=edit.old, author="curator"))
                continue
            apply_edit(core, edit, "curator", confirmed=approve is not None)
        except SessionRAGError as exc:
            result.rejected.append((edit, str(exc)))
        else:
            result.applied.append(edit)
    return result


async def acurate_core_memory(
    memory: SessionVectorMemory,
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    approve: Callable[[CoreEdit], bool] | None = None,
    auto_apply: bool = False,
    max_calls: int = 1,
    max_edits: int = 5,
    agent_edits: AgentEdits | None = None,
) -> Curation:
    """Async :func:`curate_core_memory` (in a worker thread)."""
    return await asyncio.to_thread(
        curate_core_memory,
        memory,
        model,
        messages,
        approve=approve,
        auto_apply=auto_apply,
        max_calls=max_calls,
        max_edits=max_edits,
        agent_edits=agent_edits,
    )
