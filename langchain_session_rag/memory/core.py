"""Pinned core memory: a user's short, human-readable blocks (``now``, ``memory``) loaded into every prompt.

Blocks are markdown texts with token limits (``NOW.md``: the current focus; ``MEMORY.md``: curated long-term notes).
Every edit is a version (who, when, what); ``undo`` restores the previous text as a new version. They live in the
same Chroma store as the memories (a companion collection ``NAME-core``), so a Chroma server shares them between
processes, ``forget_all`` erases them and ``compact`` rebuilds their collection too.

A model's edit may wait as a pending proposal (``core_kind="pending"``) holding the edit, not its result: confirming
applies it to the block as it is then and deletes the proposal; rejecting deletes it. Blocks are also written out
to, and read back from, markdown files (``NOW.md``, ``MEMORY.md``).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from langchain_session_rag import _fork
from langchain_session_rag._time import parse_timestamp, utcnow
from langchain_session_rag.errors import (
    CoreMemoryConflictError,
    CoreMemoryFullError,
    FileAccessError,
    InvalidArgumentError,
)
from langchain_session_rag.memory._threads import in_thread
from langchain_session_rag.memory.core_text import (
    AGENT_AUTHORS,
    DEFAULT_CORE_LIMITS,
    AgentEdits,
    CoreProposal,
    CoreVersion,
    EditAction,
    change_for,
    check_agent_edits,
    check_core_limits,
    check_text,
    normal,
)
from langchain_session_rag.stores.base import Record
from langchain_session_rag.stores.records import chunk_id

if TYPE_CHECKING:
    from langchain_session_rag.stores.base import CompanionBackend

_VECTOR = [1.0]
"""Core records are read by id, never searched: one constant vector."""
RAISE = "shorten it (remove lines, summarise) or raise the limit"
"""The advice of a refusal past a block's limit to whoever can raise it (the application, an import)."""
MAX_PENDING = 20
"""Pending proposals a user may have at once; a model's further edits are refused until some are settled."""


_ATTEMPTS = 30
_BACKOFF = 0.005
"""Seconds of the random back-off after each lost race, times the attempt number (30 attempts: at most ~2 s)."""
_SEEN: dict[tuple[str, str, str], int] = _fork.per_process({})
"""The latest version of each block this process has seen (where the next read starts probing)."""
_TRUSTED: dict[tuple[str, str], dict[str, Record]] = _fork.per_process({})
"""Current blocks of embedded stores (only this process writes them), by store and user."""
_LOCKS: dict[tuple[str, str, str], threading.Lock] = _fork.per_process({})
"""Each block's lock. A forked child starts with none of these three (the parent may write blocks after the copy
was taken, and a block's lock may be held there)."""
_LOCKS_LOCK = _fork.lock()


def forget_cached(process_key: str, user_id: str) -> None:
    """Drop the in-process copy of a user's blocks (after an edit, or after the user was forgotten)."""
    _TRUSTED.pop((process_key, user_id), None)


def _lock_for(store: str, user_id: str, block: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault((store, user_id, block), _fork.lock())


class CoreMemory:
    """One user's pinned blocks, versioned, in the memory's Chroma store (``memory.core`` gives the bound user's).

    Example:
        .. code-block:: python

            import tempfile
            from langchain_session_rag import SessionVectorMemory

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="ana")
            core = memory.core
            core.append("memory", "- My name is Ana; I prefer metric units.")
            core.write("now", "Shipping the billing API v2.")
            core.append("memory", "- Deploys go to Fly.io.")
            core.remove("memory", "- Deploys go to Fly.io.")
            assert core.read("memory") == "- My name is Ana; I prefer metric units."
            core.undo("memory")                       # the removed line is back
            assert [v.action for v in core.history("memory")] == ["append", "append", "remove", "undo"]
            print(core.render())                      # what every prompt of Ana's gets

    Edits by a model (author ``agent`` or ``curator``: the core memory tool, curation) follow ``agent_edits``
    (:data:`~langchain_session_rag.memory.core_text.AgentEdits`): by default they wait as proposals
    (:meth:`propose`, :meth:`pending`) until the application or the user confirms them (:meth:`confirm`) or
    rejects them (:meth:`reject`); a retrieved memory telling the model to "save a standing order" cannot pin it.
    """

    def __init__(
        self,
        backend: CompanionBackend,
        user_id: str,
        *,
        limits: Mapping[str, int] | None = None,
        count: Callable[[str], int],
        agent_edits: AgentEdits = "approve",
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """Serve ``user_id``'s blocks from ``backend`` (a store's core collection); ``count`` counts tokens.

        ``agent_edits`` is the policy for a model's edits: ``"approve"`` (proposals, pinned once confirmed),
        ``"unconfirmed"`` (the same, and shown in prompts as unconfirmed notes) or ``"pin"`` (applied at once).
        ``redact`` rewrites every block text before it is stored (the memory's ``redact_secrets``).
        """
        self.backend = backend
        self.user_id = user_id
        self.limits = dict(check_core_limits(DEFAULT_CORE_LIMITS if limits is None else limits))
        self.count = count
        self.agent_edits = check_agent_edits(agent_edits)
        self.redact = redact

    # -- reading ---------------------------------------------------------------------------------
    def check_block(self, block: str) -> str:
        """``block`` when it is one of the blocks.

        Raises:
            InvalidArgumentError: An unknown block.
        """
        if block not in self.limits:
            msg = f"Unknown core memory block {block!r}; blocks: {sorted(self.limits)}."
            raise InvalidArgumentError(msg)
        return block

    def _head_id(self, block: str) -> str:
        return chunk_id(self.user_id, "", "core", [block, "head"], 0)

    def _version_id(self, block: str, version: int) -> str:
        return chunk_id(self.user_id, "", "core", [block, "version", str(version)], 0)

    def _current(self) -> dict[str, Record]:
        """The latest version of every written block.

        Kept in process for an embedded store, which only this process writes; read from the store otherwise.
        """
        key = (self.backend.process_key, self.user_id)
        if self.backend.single_process and key in _TRUSTED:
            return dict(_TRUSTED[key])
        latest = self._read_current()
        if self.backend.single_process:
            _TRUSTED[key] = dict(latest)
        return latest

    def _read_current(self) -> dict[str, Record]:
        """The latest version of every written block, from the store.

        The head record is a cache that may lag behind (another process's head write can land after a newer
        one): the versions after the latest one known are probed by id until one is missing. Heads and the first
        probe go in one read, so a turn costs one store read when nothing changed.
        """
        known = {b: _SEEN.get((self.backend.process_key, self.user_id, b), 0) for b in self.limits}
        ids = [self._head_id(b) for b in self.limits] + [self._version_id(b, v + 1) for b, v in known.items()]
        latest: dict[str, Record] = {}
        for record in self.backend.fetch(self.user_id, ids):
            block = str(record.metadata.get("core_block"))
            mine = latest.get(block)
            if mine is None or int(record.metadata.get("core_version", 0)) > int(mine.metadata.get("core_version", 0)):
                latest[block] = record
        probing = {b: int(r.metadata.get("core_version", 0)) for b, r in latest.items()}
        probing = {b: v for b, v in probing.items() if v != known[b]}  # something changed: look further
        while probing:
            wanted = [self._version_id(b, v + 1) for b, v in probing.items()]
            found = {str(r.metadata.get("core_block")): r for r in self.backend.fetch(self.user_id, wanted)}
            latest.update(found)
            probing = {b: probing[b] + 1 for b in found}
        for block, record in latest.items():
            _SEEN[(self.backend.process_key, self.user_id, block)] = int(record.metadata.get("core_version", 0))
        for block in self.limits:
            if block not in latest:  # never written, or forgotten: start probing from the beginning again
                _SEEN.pop((self.backend.process_key, self.user_id, block), None)
        return latest

    def read(self, block: str) -> str:
        """The block's current text (``""`` when never written)."""
        head = self._current().get(self.check_block(block))
        return head.text if head is not None else ""

    def blocks(self) -> dict[str, str]:
        """Every block's current text, in the order of ``limits``."""
        heads = self._current()
        return {b: heads[b].text if b in heads else "" for b in self.limits}

    def render(self) -> str:
        """The blocks as the prompt shows them: each non-empty block under a ``## NAME.md`` heading.

        Pending proposals are not part of it (see :meth:`render_unconfirmed`).
        """
        return "\n\n".join(f"## {b.upper()}.md\n{t}" for b, t in self.blocks().items() if t.strip())

    def history(self, block: str) -> list[CoreVersion]:
        """Every version of the block, oldest first."""
        records = self.backend.get(self.user_id, {"core_block": self.check_block(block), "core_kind": "version"})
        versions = [
            CoreVersion(
                block=block,
                version=int(r.metadata.get("core_version", 0)),
                text=r.text,
                action=str(r.metadata.get("core_action", "write")),
                author=str(r.metadata.get("core_author", "")),
                at=parse_timestamp(str(r.metadata.get("timestamp"))),
                confirmed=bool(
                    r.metadata.get("core_confirmed", str(r.metadata.get("core_author", "")) not in AGENT_AUTHORS)
                ),
            )
            for r in records
        ]
        return sorted(versions, key=lambda v: (v.version, v.at))

    # -- editing ---------------------------------------------------------------------------------
    def apply(
        self, block: str, change: Callable[[str], str], action: str, author: str, *, confirmed: bool | None = None
    ) -> CoreVersion:
        """Apply ``change`` to the block's current text and store the result as a new version.

        ``confirmed`` (default: whether ``author`` is not a model's) is recorded with the version.

        Edits of one block are serialised in this process; across processes an edit that lost a race (another
        process's head was written after its own) is re-applied to the winner's text, so no edit is lost.

        Raises:
            CoreMemoryFullError: The result is over the block's limit (nothing is stored).
            CoreMemoryConflictError: Other processes kept winning the race (after several attempts).
        """
        self.check_block(block)
        sure = str(author) not in AGENT_AUTHORS if confirmed is None else confirmed
        with _lock_for(self.backend.process_key, self.user_id, block):
            for attempt in range(_ATTEMPTS):
                if attempt:  # lost a race: back off a little, at random, so the writers spread out
                    time.sleep(random.uniform(0, _BACKOFF * attempt))  # noqa: S311 - jitter, not security
                head = self._current().get(block)
                text = normal(change(head.text if head is not None else ""))
                text = self.redact(text) if self.redact is not None else text
                tokens = self._fitting(block, text, f"{RAISE}; nothing was changed")
                version = int(head.metadata.get("core_version", 0)) + 1 if head is not None else 1
                edit_id, now, who = uuid.uuid4().hex, utcnow(), str(author)[:200]
                meta = {
                    "user_id": self.user_id,
                    "core_block": block,
                    "core_version": version,
                    "core_edit": edit_id,
                    "core_action": action,
                    "core_author": who,
                    "core_confirmed": sure,
                    "timestamp": now.isoformat(),
                    "timestamp_epoch": now.timestamp(),
                    "stored_epoch": time.time(),
                    "token_count": tokens,
                }
                claim = Record(self._version_id(block, version), text, {**meta, "core_kind": "version"}, list(_VECTOR))
                # Version N is claimed by inserting its id: the store keeps the first insert, so of two writers
                # building on the same text one wins and the other re-applies its edit to the winner's text.
                self.backend.insert_new(self.user_id, [claim])
                won = self.backend.fetch(self.user_id, [claim.id])
                if won and won[0].metadata.get("core_edit") == edit_id:
                    head_record = Record(self._head_id(block), text, {**meta, "core_kind": "head"}, list(_VECTOR))
                    self.backend.add(self.user_id, [head_record])
                    forget_cached(self.backend.process_key, self.user_id)
                    return CoreVersion(block, version, text, action, who, now, sure)
        msg = f"Core memory block {block!r} is being edited by other processes; try again."
        raise CoreMemoryConflictError(msg)

    def _fitting(self, block: str, text: str, advice: str) -> int:
        """The tokens of ``text``, or :class:`CoreMemoryFullError` past the limit (ending with ``advice``)."""
        tokens = self.count(text)
        if tokens > self.limits[block]:
            msg = (
                f"Core memory block {block!r} would hold {tokens} tokens, over its limit of {self.limits[block]}: "
                f"{advice}."
            )
            raise CoreMemoryFullError(msg)
        return tokens

    def write(self, block: str, text: str, *, author: str = "user", action: str = "write") -> CoreVersion:
        """Replace the block's text (a new version).

        Raises:
            CoreMemoryFullError: The text is over the block's token limit (nothing is stored).
            InvalidArgumentError: An unknown block, or text that is not a string.
        """
        return self.apply(block, change_for("write", block, text), action, author)

    def append(self, block: str, text: str, *, author: str = "user") -> CoreVersion:
        """Add ``text`` as a new line (or lines) at the end of the block."""
        return self.apply(block, change_for("append", block, text), "append", author)

    def remove(self, block: str, target: str, *, author: str = "user") -> CoreVersion:
        """Remove a line equal to ``target`` (stripped), or the markdown section whose heading is ``target``.

        Headings inside code fences are text, not sections.

        Raises:
            InvalidArgumentError: No such line or heading in the block, or an empty target (nothing is changed).
        """
        return self.apply(block, change_for("remove", block, target), "remove", author)

    def replace(self, block: str, old: str, new: str, *, author: str = "user") -> CoreVersion:
        """Put ``new`` in place of the first line equal to ``old`` (stripped).

        Raises:
            InvalidArgumentError: No such line (nothing is changed).
        """
        check_text("old", old)
        if not old.strip():
            msg = f"Core memory block {block!r} has no line {old!r}; nothing was replaced."
            raise InvalidArgumentError(msg)
        return self.apply(block, change_for("replace", block, new, old), "replace", author)

    def undo(self, block: str, *, author: str = "user") -> CoreVersion:
        """Restore the text before the block's last edit, as a new version.

        An undo is an edit too: undoing twice gives back the text the first undo replaced (one level, a toggle);
        ``history(block)`` holds every earlier text to ``write`` back.

        Raises:
            InvalidArgumentError: The block was never edited: nothing to undo.
        """

        def previous(_: str) -> str:  # read inside the edit: an edit landing meanwhile is the one undone
            versions = self.history(block)
            if not versions:
                msg = f"Core memory block {block!r} has never been edited: nothing to undo."
                raise InvalidArgumentError(msg)
            return versions[-2].text if len(versions) > 1 else ""

        return self.apply(block, previous, "undo", author)

    # -- a model's edits, waiting for confirmation -----------------------------------------------------
    def propose(
        self, action: EditAction, block: str, text: str, *, old: str | None = None, author: str = "agent"
    ) -> CoreProposal:
        """Store a model's edit as a pending proposal (checked now: the line exists, the result fits the block).

        Raises:
            CoreMemoryFullError: Over the block's limit, or too many proposals pending (nothing is stored).
            InvalidArgumentError: An unknown block or action, or a line that is not in the block.
        """
        if self.redact is not None and isinstance(text, str):  # a proposal is stored too: its secrets never are
            text = self.redact(text)
        change = change_for(action, self.check_block(block), text, old)
        advice = "shorten it or remove lines first; nothing was proposed"  # a model proposes: it cannot raise it
        self._fitting(block, normal(change(self.read(block))), advice)
        if len(self.pending()) >= MAX_PENDING:
            msg = (
                f"The user has {MAX_PENDING} core memory edits waiting for confirmation: confirm or reject some "
                "(core.pending(), core.confirm(id), core.reject(id)); nothing was proposed."
            )
            raise CoreMemoryFullError(msg)
        pid, now = uuid.uuid4().hex, utcnow()
        meta = {
            "user_id": self.user_id,
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
        self.backend.add(self.user_id, [Record(self._proposal_id(pid), text, meta, list(_VECTOR))])
        return _proposal(Record(self._proposal_id(pid), text, meta))

    def pending(self, block: str | None = None) -> list[CoreProposal]:
        """Proposals waiting for confirmation (of ``block``, or all), oldest first."""
        records = self.backend.get(self.user_id, {"core_kind": "pending"})
        found = sorted((_proposal(r) for r in records), key=lambda p: (p.at, p.id))
        return [p for p in found if block is None or p.block == block]

    def confirm(self, proposal_id: str) -> CoreVersion:
        """Pin a pending proposal: apply it to its block as it is now (``confirmed=True``), and drop the proposal.

        Raises:
            InvalidArgumentError: No such proposal, or its line is gone (it stays pending; reject it).
            CoreMemoryFullError: The block has no room for it now (it stays pending).
        """
        proposal = self._find(proposal_id)
        change = change_for(proposal.action, proposal.block, proposal.text, proposal.old)
        version = self.apply(proposal.block, change, proposal.action, proposal.author, confirmed=True)
        self.backend.delete(self.user_id, [self._proposal_id(proposal_id)])
        return version

    def reject(self, proposal_id: str) -> CoreProposal:
        """Drop a pending proposal without applying it; return it.

        Raises:
            InvalidArgumentError: No such proposal.
        """
        proposal = self._find(proposal_id)
        self.backend.delete(self.user_id, [self._proposal_id(proposal_id)])
        return proposal

    def render_unconfirmed(self) -> str:
        """Pending proposals as the prompt shows them with ``agent_edits="unconfirmed"`` (``""``: none)."""
        lines = []
        for p in self.pending():
            what = f"replace {p.old!r} with" if p.action == "replace" and p.old else p.action
            lines.append(f"{p.block}, {what}: {p.text}")
        return "\n".join(lines)

    def _proposal_id(self, pid: str) -> str:
        return chunk_id(self.user_id, "", "core", ["pending", pid], 0)

    def _find(self, proposal_id: str) -> CoreProposal:
        check_text("proposal id", proposal_id)
        found = self.backend.fetch(self.user_id, [self._proposal_id(proposal_id)])
        if not found:
            msg = f"No pending core memory edit {proposal_id!r} for user {self.user_id!r}; see core.pending()."
            raise InvalidArgumentError(msg)
        return _proposal(found[0])

    # -- files -----------------------------------------------------------------------------------
    def export_markdown(self, folder: str | Path) -> list[Path]:
        """Write each block to ``FOLDER/NAME.md`` (``NOW.md``, ``MEMORY.md``); return the files written.

        Raises:
            FileAccessError: The folder or a file cannot be written.
        """
        target = Path(folder)
        try:
            target.mkdir(parents=True, exist_ok=True)
            written = []
            for block, text in self.blocks().items():
                path = target / f"{block.upper()}.md"
                path.write_text(text + "\n" if text else "", encoding="utf-8")
                written.append(path)
        except OSError as exc:
            msg = f"Cannot write core memory files into {folder!s}: {exc}"
            raise FileAccessError(msg) from exc
        return written

    def import_markdown(self, folder: str | Path, *, author: str = "import") -> list[CoreVersion]:
        """Load ``FOLDER/NAME.md`` files into their blocks (a new version each; absent files are skipped).

        Every file is read and checked against its limit before any block changes.

        Raises:
            CoreMemoryFullError: A file is over its block's limit (nothing is changed).
            FileAccessError: A file cannot be read.
        """
        if not Path(folder).is_dir():
            msg = f"No core memory folder at {folder!s} (expected NOW.md / MEMORY.md files in it)."
            raise FileAccessError(msg)
        texts: dict[str, str] = {}
        for block in self.limits:
            path = Path(folder) / f"{block.upper()}.md"
            if path.is_file():
                try:
                    texts[block] = normal(path.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError) as exc:
                    msg = f"Cannot read core memory file {path}: {exc}"
                    raise FileAccessError(msg) from exc
        for block, text in texts.items():
            self._fitting(block, text, f"{RAISE}; {block.upper()}.md was not imported (nor any other file)")
        return [self.write(b, t, author=author, action="import") for b, t in texts.items() if t != self.read(b)]

    # -- async -----------------------------------------------------------------------------------
    aread = in_thread(read)
    arender = in_thread(render)
    awrite = in_thread(write)
    aappend = in_thread(append)
    aremove = in_thread(remove)
    aundo = in_thread(undo)
    ahistory = in_thread(history)
    apropose = in_thread(propose)
    apending = in_thread(pending)
    aconfirm = in_thread(confirm)
    areject = in_thread(reject)


def _proposal(record: Record) -> CoreProposal:
    """The proposal a pending record holds."""
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
