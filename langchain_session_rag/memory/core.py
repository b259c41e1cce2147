"""Pinned core memory: a user's short, human-readable blocks (``now``, ``memory``) loaded into every prompt.

Blocks are markdown texts with token limits (``NOW.md``: the current focus; ``MEMORY.md``: curated long-term notes).
Every edit is a version (who, when, what); ``undo`` restores the previous text as a new version. They live in the
same Chroma store as the memories (a companion collection ``NAME-core``), so a Chroma server shares them between
processes, ``forget_all`` erases them and ``compact`` rebuilds their collection too.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_session_rag._time import parse_timestamp, utcnow
from langchain_session_rag.errors import (
    CoreMemoryFullError,
    FileAccessError,
    InvalidArgumentError,
    InvalidRequestError,
)
from langchain_session_rag.stores.base import Record
from langchain_session_rag.stores.records import chunk_id

if TYPE_CHECKING:
    from langchain_session_rag.stores.chroma import ChromaBackend

__all__ = ["DEFAULT_CORE_LIMITS", "CoreMemory", "CoreVersion"]

DEFAULT_CORE_LIMITS: dict[str, int] = {"now": 300, "memory": 700}
"""Token limits of the default blocks: together they fit the default budget's ``core_memory`` allocation
(15 % of an 8K window less the answer's reserve: about 1,075 tokens)."""
_VECTOR = [1.0]
"""Core records are read by id, never searched: one constant vector."""
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


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
        self.limits = dict(DEFAULT_CORE_LIMITS if limits is None else limits)
        if not self.limits or any(
            not isinstance(n, str) or not n.isidentifier() or isinstance(v, bool) or not isinstance(v, int) or v < 1
            for n, v in self.limits.items()
        ):
            msg = f"core limits must map block names (identifiers) to positive token counts, got {limits!r}."
            raise InvalidArgumentError(msg)
        self.count = count

    # -- reading ---------------------------------------------------------------------------------
    def _check_block(self, block: str) -> str:
        if block not in self.limits:
            msg = f"Unknown core memory block {block!r}; blocks: {sorted(self.limits)}."
            raise InvalidRequestError(msg)
        return block

    def _head_id(self, block: str) -> str:
        return chunk_id(self.user_id, "", "core", [block, "head"], 0)

    def _heads(self) -> dict[str, Record]:
        found = self.backend.fetch(self.user_id, [self._head_id(b) for b in self.limits])
        return {str(r.metadata.get("core_block")): r for r in found}

    def read(self, block: str) -> str:
        """The block's current text (``""`` when never written)."""
        head = self._heads().get(self._check_block(block))
        return head.text if head is not None else ""

    def blocks(self) -> dict[str, str]:
        """Every block's current text, in the order of ``limits``."""
        heads = self._heads()
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
        return sorted(versions, key=lambda v: v.version)

    # -- editing ---------------------------------------------------------------------------------
    def write(self, block: str, text: str, *, author: str = "user", action: str = "write") -> CoreVersion:
        """Replace the block's text (a new version).

        Raises:
            CoreMemoryFullError: The text is over the block's token limit (nothing is stored).
            InvalidRequestError: An unknown block, or text that is not a string.
        """
        self._check_block(block)
        if not isinstance(text, str):
            msg = f"Core memory text must be a string, got {type(text).__name__}."
            raise InvalidRequestError(msg)
        text = text.strip("\n")
        tokens = self.count(text)
        if tokens > self.limits[block]:
            msg = (
                f"Core memory block {block!r} would hold {tokens} tokens, over its limit of {self.limits[block]}: "
                "shorten it (remove lines, summarise) or raise the limit; nothing was changed."
            )
            raise CoreMemoryFullError(msg)
        head = self._heads().get(block)
        version = int(head.metadata.get("core_version", 0)) + 1 if head is not None else 1
        now, who = utcnow(), str(author)[:200]
        meta = {
            "user_id": self.user_id,
            "core_block": block,
            "core_version": version,
            "core_action": action,
            "core_author": who,
            "timestamp": now.isoformat(),
            "timestamp_epoch": now.timestamp(),
            "stored_epoch": time.time(),
            "token_count": tokens,
        }
        version_record = Record(
            chunk_id(self.user_id, "", "core", [block, str(version)], 0),
            text,
            {**meta, "core_kind": "version"},
            list(_VECTOR),
        )
        head_record = Record(self._head_id(block), text, {**meta, "core_kind": "head"}, list(_VECTOR))
        self.backend.add(self.user_id, [version_record, head_record])  # the version first: history never lags
        return CoreVersion(block, version, text, action, who, now)

    def append(self, block: str, text: str, *, author: str = "user") -> CoreVersion:
        """Add ``text`` as a new line (or lines) at the end of the block."""
        current = self.read(block)
        return self.write(block, f"{current}\n{text}" if current else text, author=author, action="append")

    def remove(self, block: str, target: str, *, author: str = "user") -> CoreVersion:
        """Remove a line equal to ``target`` (stripped), or the markdown section whose heading is ``target``.

        Raises:
            InvalidRequestError: No such line or heading in the block (nothing is changed).
        """
        lines = self.read(block).split("\n")
        wanted = target.strip()
        for n, line in enumerate(lines):
            heading = _HEADING.match(line)
            if heading and wanted in (line.strip(), heading.group(2)):
                level = len(heading.group(1))
                end = next(
                    (
                        m
                        for m in range(n + 1, len(lines))
                        if (h := _HEADING.match(lines[m])) is not None and len(h.group(1)) <= level
                    ),
                    len(lines),
                )
                return self.write(block, "\n".join(lines[:n] + lines[end:]).strip("\n"), author=author, action="remove")
        for n, line in enumerate(lines):
            if line.strip() == wanted:
                return self.write(block, "\n".join(lines[:n] + lines[n + 1 :]), author=author, action="remove")
        msg = f"Core memory block {block!r} has no line or heading {target!r}; nothing was removed."
        raise InvalidRequestError(msg)

    def undo(self, block: str, *, author: str = "user") -> CoreVersion:
        """Restore the text before the block's last edit, as a new version (so an undo can be undone).

        Raises:
            InvalidRequestError: The block was never edited: nothing to undo.
        """
        versions = self.history(block)
        if not versions:
            msg = f"Core memory block {block!r} has never been edited: nothing to undo."
            raise InvalidRequestError(msg)
        previous = versions[-2].text if len(versions) > 1 else ""
        return self.write(block, previous, author=author, action="undo")

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
        texts: dict[str, str] = {}
        for block in self.limits:
            path = Path(folder) / f"{block.upper()}.md"
            if path.is_file():
                try:
                    texts[block] = path.read_text(encoding="utf-8").strip("\n")
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
