"""Pending core memory edits: a model's proposals, stored apart from the blocks until confirmed or rejected.

A proposal is a record of the core collection (``core_kind="pending"``) holding the edit, not its result: confirming
applies it to the block as it is then (so edits made meanwhile are kept) and deletes the proposal; rejecting deletes
it. A proposal is checked when it is made (the line to replace or remove exists, the result fits the block), so a
model hears at once when its edit cannot apply. ``forget_all`` erases proposals with the blocks.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, cast

from langchain_session_rag._time import parse_timestamp, utcnow
from langchain_session_rag.errors import CoreMemoryFullError, InvalidArgumentError
from langchain_session_rag.memory.core_text import CoreProposal, EditAction, change_for, check_text, normal
from langchain_session_rag.stores.base import Record
from langchain_session_rag.stores.records import chunk_id

if TYPE_CHECKING:
    from langchain_session_rag.memory.core import CoreMemory
    from langchain_session_rag.memory.core_text import CoreVersion

MAX_PENDING = 20
"""Pending proposals a user may have at once; a model's further edits are refused until some are settled."""
_VECTOR = [1.0]


def _proposal_id(core: CoreMemory, pid: str) -> str:
    return chunk_id(core.user_id, "", "core", ["pending", pid], 0)


def _proposal(record: Record) -> CoreProposal:
    meta = record.metadata
    old = str(meta.get("core_old") or "")
    return CoreProposal(
        id=str(meta.get("core_pending")),
        block=str(meta.get("core_block")),
        action=cast("EditAction", str(meta.get("core_action"))),
        text=record.text,
        old=old or None,
        author=str(meta.get("core_author", "")),
        at=parse_timestamp(str(meta.get("timestamp"))),
    )


def pending(core: CoreMemory, block: str | None = None) -> list[CoreProposal]:
    """The user's pending proposals (of ``block``, or of every block), oldest first."""
    records = core.backend.get(core.user_id, {"core_kind": "pending"})
    found = sorted((_proposal(r) for r in records), key=lambda p: (p.at, p.id))
    return [p for p in found if block is None or p.block == block]


def propose(
    core: CoreMemory, action: EditAction, block: str, text: str, *, old: str | None, author: str
) -> CoreProposal:
    """Store a model's edit as a pending proposal after checking it would apply to the block now.

    Raises:
        CoreMemoryFullError: The edit would put the block over its limit, or the user has ``MAX_PENDING``
            proposals already (nothing is stored).
        InvalidArgumentError: An unknown block or action, a line that is not in the block, a text that is not a
            string.
    """
    if core.redact is not None and isinstance(text, str):  # a proposal is stored too: its secrets never are
        text = core.redact(text)
    change = change_for(action, core.check_block(block), text, old)
    result = normal(change(core.read(block)))
    tokens = core.count(result)
    if tokens > core.limits[block]:
        msg = (
            f"Core memory block {block!r} would hold {tokens} tokens with this edit, over its limit of "
            f"{core.limits[block]}: shorten it or remove lines first; nothing was proposed."
        )
        raise CoreMemoryFullError(msg)
    if len(pending(core)) >= MAX_PENDING:
        msg = (
            f"The user has {MAX_PENDING} core memory edits waiting for confirmation: confirm or reject some "
            "(core.pending(), core.confirm(id), core.reject(id)); nothing was proposed."
        )
        raise CoreMemoryFullError(msg)
    pid, now = uuid.uuid4().hex, utcnow()
    meta = {
        "user_id": core.user_id,
        "core_kind": "pending",
        "core_pending": pid,
        "core_block": block,
        "core_action": action,
        "core_old": old or "",
        "core_author": str(author)[:200],
        "timestamp": now.isoformat(),
        "timestamp_epoch": now.timestamp(),
        "stored_epoch": time.time(),
    }
    core.backend.add(core.user_id, [Record(_proposal_id(core, pid), text, meta, list(_VECTOR))])
    return _proposal(Record(_proposal_id(core, pid), text, meta))


def _find(core: CoreMemory, proposal_id: str) -> CoreProposal:
    check_text("proposal id", proposal_id)
    found = core.backend.fetch(core.user_id, [_proposal_id(core, proposal_id)])
    if not found:
        msg = f"No pending core memory edit {proposal_id!r} for user {core.user_id!r}; see core.pending()."
        raise InvalidArgumentError(msg)
    return _proposal(found[0])


def confirm(core: CoreMemory, proposal_id: str) -> CoreVersion:
    """Apply a pending proposal to its block (a version by its author, ``confirmed=True``) and drop it.

    Raises:
        InvalidArgumentError: No such proposal, or its edit no longer applies (the line is gone): it stays pending.
        CoreMemoryFullError: The block has no room for it any more: it stays pending.
    """
    proposal = _find(core, proposal_id)
    change = change_for(proposal.action, proposal.block, proposal.text, proposal.old)
    version = core.apply(proposal.block, change, proposal.action, proposal.author, confirmed=True)
    core.backend.delete(core.user_id, [_proposal_id(core, proposal_id)])
    return version


def reject(core: CoreMemory, proposal_id: str) -> CoreProposal:
    """Drop a pending proposal; return it.

    Raises:
        InvalidArgumentError: No such proposal.
    """
    proposal = _find(core, proposal_id)
    core.backend.delete(core.user_id, [_proposal_id(core, proposal_id)])
    return proposal


def render_unconfirmed(core: CoreMemory) -> str:
    """Pending proposals as lines (``memory, append: TEXT``), for the prompt's unconfirmed-notes section."""
    lines = []
    for p in pending(core):
        what = f"replace {p.old!r} with" if p.action == "replace" and p.old else p.action
        lines.append(f"{p.block}, {what}: {p.text}")
    return "\n".join(lines)
