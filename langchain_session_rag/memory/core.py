"""Pinned core memory: a user's short, human-readable blocks (``now``, ``memory``) loaded into every prompt.

Blocks are markdown texts with token limits (``NOW.md``: the current focus; ``MEMORY.md``: curated long-term notes).
Every edit is a version (who, when, what); ``undo`` restores the previous text as a new version. They live in the
same Chroma store as the memories (a companion collection ``NAME-core``), so a Chroma server shares them between
processes, ``forget_all`` erases them and ``compact`` rebuilds their collection too.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_session_rag._time import parse_timestamp, utcnow
from langchain_session_rag.errors import (
    CoreMemoryConflictError,
    CoreMemoryFullError,
    FileAccessError,
    InvalidArgumentError,
    InvalidRequestError,
)
from langchain_session_rag.stores.base import Record
from langchain_session_rag.stores.records import chunk_id

if TYPE_CHECKING:
    from langchain_session_rag.stores.chroma import ChromaBackend

__all__ = ["DEFAULT_CORE_LIMITS", "CoreMemory", "CoreVersion", "check_core_limits", "forget_cached"]

DEFAULT_CORE_LIMITS: dict[str, int] = {"now": 300, "memory": 700}
"""Token limits of the default blocks: together they fit the default budget's ``core_memory`` allocation
(15 % of an 8K window less the answer's reserve: about 1,075 tokens)."""
_VECTOR = [1.0]
"""Core records are read by id, never searched: one constant vector."""
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


_ATTEMPTS = 30
_BACKOFF = 0.005
"""Seconds of the random back-off after each lost race, times the attempt number (30 attempts: at most ~2 s)."""
_SEEN: dict[tuple[str, str, str], int] = {}
_TRUSTED: dict[tuple[str, str], dict[str, Record]] = {}
"""Current blocks of embedded stores (only this process writes them), by store and user."""


def forget_cached(process_key: str, user_id: str) -> None:
    """Drop the in-process copy of a user's blocks (after an edit, or after the user was forgotten)."""
    _TRUSTED.pop((process_key, user_id), None)


"""The latest version of each block this process has seen (where the next read starts probing)."""
_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()
_FENCE = re.compile(r"^\s*(```|~~~)")


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


def _lock_for(store: str, user_id: str, block: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault((store, user_id, block), threading.Lock())


def _normal(text: str) -> str:
    """Block text as stored: LF line ends, no leading or trailing blank lines."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        msg = f"Core memory {name} must be a string, got {type(value).__name__}."
        raise InvalidRequestError(msg)


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
    raise InvalidRequestError(msg)


@dataclass(frozen=True)
class CoreVersion:
    """One version of a block: its text after an edit, who made it, when and how."""

    block: str
    version: int
    text: str
    action: str
    """``write``, ``append``, ``remove``, ``undo`` or ``import``."""
    author: str
    at: datetime


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
    """

    def __init__(
        self,
        backend: ChromaBackend,
        user_id: str,
        *,
        limits: Mapping[str, int] | None = None,
        count: Callable[[str], int],
    ) -> None:
        """Serve ``user_id``'s blocks from ``backend`` (a store's core collection); ``count`` counts tokens."""
        self.backend = backend
        self.user_id = user_id
        self.limits = dict(check_core_limits(DEFAULT_CORE_LIMITS if limits is None else limits))
        self.count = count

    # -- reading ---------------------------------------------------------------------------------
    def _check_block(self, block: str) -> str:
        if block not in self.limits:
            msg = f"Unknown core memory block {block!r}; blocks: {sorted(self.limits)}."
            raise InvalidRequestError(msg)
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
        head = self._current().get(self._check_block(block))
        return head.text if head is not None else ""

    def blocks(self) -> dict[str, str]:
        """Every block's current text, in the order of ``limits``."""
        heads = self._current()
        return {b: heads[b].text if b in heads else "" for b in self.limits}

    def render(self) -> str:
        """The blocks as the prompt shows them: each non-empty block under a ``## NAME.md`` heading."""
        return "\n\n".join(f"## {b.upper()}.md\n{t}" for b, t in self.blocks().items() if t.strip())

    def history(self, block: str) -> list[CoreVersion]:
        """Every version of the block, oldest first."""
        records = self.backend.get(self.user_id, {"core_block": self._check_block(block), "core_kind": "version"})
        versions = [
            CoreVersion(
                block=block,
                version=int(r.metadata.get("core_version", 0)),
                text=r.text,
                action=str(r.metadata.get("core_action", "write")),
                author=str(r.metadata.get("core_author", "")),
                at=parse_timestamp(str(r.metadata.get("timestamp"))),
            )
            for r in records
        ]
        return sorted(versions, key=lambda v: (v.version, v.at))

    # -- editing ---------------------------------------------------------------------------------
    def _edit(self, block: str, change: Callable[[str], str], action: str, author: str) -> CoreVersion:
        """Apply ``change`` to the block's current text and store the result as a new version.

        Edits of one block are serialised in this process; across processes an edit that lost a race (another
        process's head was written after its own) is re-applied to the winner's text, so no edit is lost.

        Raises:
            CoreMemoryFullError: The result is over the block's limit (nothing is stored).
            CoreMemoryConflictError: Other processes kept winning the race (after several attempts).
        """
        self._check_block(block)
        with _lock_for(self.backend.process_key, self.user_id, block):
            for attempt in range(_ATTEMPTS):
                if attempt:  # lost a race: back off a little, at random, so the writers spread out
                    time.sleep(random.uniform(0, _BACKOFF * attempt))  # noqa: S311 - jitter, not security
                head = self._current().get(block)
                text = _normal(change(head.text if head is not None else ""))
                tokens = self.count(text)
                if tokens > self.limits[block]:
                    msg = (
                        f"Core memory block {block!r} would hold {tokens} tokens, over its limit of "
                        f"{self.limits[block]}: shorten it (remove lines, summarise) or raise the limit; "
                        "nothing was changed."
                    )
                    raise CoreMemoryFullError(msg)
                version = int(head.metadata.get("core_version", 0)) + 1 if head is not None else 1
                edit_id, now, who = uuid.uuid4().hex, utcnow(), str(author)[:200]
                meta = {
                    "user_id": self.user_id,
                    "core_block": block,
                    "core_version": version,
                    "core_edit": edit_id,
                    "core_action": action,
                    "core_author": who,
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
                    return CoreVersion(block, version, text, action, who, now)
        msg = f"Core memory block {block!r} is being edited by other processes; try again."
        raise CoreMemoryConflictError(msg)

    def write(self, block: str, text: str, *, author: str = "user", action: str = "write") -> CoreVersion:
        """Replace the block's text (a new version).

        Raises:
            CoreMemoryFullError: The text is over the block's token limit (nothing is stored).
            InvalidRequestError: An unknown block, or text that is not a string.
        """
        _check_text("text", text)
        return self._edit(block, lambda _: text, action, author)

    def append(self, block: str, text: str, *, author: str = "user") -> CoreVersion:
        """Add ``text`` as a new line (or lines) at the end of the block."""
        _check_text("text", text)
        return self._edit(block, lambda current: f"{current}\n{text}" if current else text, "append", author)

    def remove(self, block: str, target: str, *, author: str = "user") -> CoreVersion:
        """Remove a line equal to ``target`` (stripped), or the markdown section whose heading is ``target``.

        Headings inside code fences are text, not sections.

        Raises:
            InvalidRequestError: No such line or heading in the block, or an empty target (nothing is changed).
        """
        _check_text("target", target)
        if not target.strip():
            msg = "remove() needs the line or heading to remove, got an empty text."
            raise InvalidRequestError(msg)
        return self._edit(block, lambda current: _without(current, target.strip(), block), "remove", author)

    def replace(self, block: str, old: str, new: str, *, author: str = "user") -> CoreVersion:
        """Put ``new`` in place of the first line equal to ``old`` (stripped).

        Raises:
            InvalidRequestError: No such line (nothing is changed).
        """
        _check_text("old", old)
        _check_text("new", new)

        def change(current: str) -> str:
            lines = current.split("\n")
            stripped = [line.strip() for line in lines]
            if old.strip() not in stripped or not old.strip():
                msg = f"Core memory block {block!r} has no line {old!r}; nothing was replaced."
                raise InvalidRequestError(msg)
            at = stripped.index(old.strip())
            return "\n".join([*lines[:at], new, *lines[at + 1 :]])

        return self._edit(block, change, "replace", author)

    def undo(self, block: str, *, author: str = "user") -> CoreVersion:
        """Restore the text before the block's last edit, as a new version.

        An undo is an edit too: undoing twice gives back the text the first undo replaced (one level, a toggle);
        ``history(block)`` holds every earlier text to ``write`` back.

        Raises:
            InvalidRequestError: The block was never edited: nothing to undo.
        """

        def previous(_: str) -> str:  # read inside the edit: an edit landing meanwhile is the one undone
            versions = self.history(block)
            if not versions:
                msg = f"Core memory block {block!r} has never been edited: nothing to undo."
                raise InvalidRequestError(msg)
            return versions[-2].text if len(versions) > 1 else ""

        return self._edit(block, previous, "undo", author)

    # -- files -----------------------------------------------------------------------------------
    def export_markdown(self, folder: str | Path) -> list[Path]:
        """Write each block to ``FOLDER/NAME.md`` (``NOW.md``, ``MEMORY.md``); return the files written."""
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
                    texts[block] = _normal(path.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError) as exc:
                    msg = f"Cannot read core memory file {path}: {exc}"
                    raise FileAccessError(msg) from exc
        for block, text in texts.items():
            if self.count(text) > self.limits[block]:
                msg = f"{block.upper()}.md holds {self.count(text)} tokens, over the limit of {self.limits[block]}."
                raise CoreMemoryFullError(msg)
        return [self.write(b, t, author=author, action="import") for b, t in texts.items() if t != self.read(b)]

    # -- async -----------------------------------------------------------------------------------
    async def aread(self, block: str) -> str:
        """Async :meth:`read`."""
        return await asyncio.to_thread(self.read, block)

    async def arender(self) -> str:
        """Async :meth:`render`."""
        return await asyncio.to_thread(self.render)

    async def awrite(self, block: str, text: str, *, author: str = "user") -> CoreVersion:
        """Async :meth:`write`."""
        return await asyncio.to_thread(self.write, block, text, author=author)

    async def aappend(self, block: str, text: str, *, author: str = "user") -> CoreVersion:
        """Async :meth:`append`."""
        return await asyncio.to_thread(self.append, block, text, author=author)

    async def aremove(self, block: str, target: str, *, author: str = "user") -> CoreVersion:
        """Async :meth:`remove`."""
        return await asyncio.to_thread(self.remove, block, target, author=author)

    async def aundo(self, block: str, *, author: str = "user") -> CoreVersion:
        """Async :meth:`undo`."""
        return await asyncio.to_thread(self.undo, block, author=author)

    async def ahistory(self, block: str) -> list[CoreVersion]:
        """Async :meth:`history`."""
        return await asyncio.to_thread(self.history, block)
