"""What forgetting reaches beyond the store: the daily logs, and the tiers linked to a store (semantic caches).

``forget`` and ``forget_all`` hand the chunks they remove to :func:`erase_everywhere`, which rewrites the user's
day files without the forgotten messages (atomically: a temporary file, ``fsync``, ``os.replace``) and tells
every tier linked to the store (:func:`link_tier`) to delete what it derived from them. A tier is anything with
the :class:`DerivedTier` methods; :class:`~langchain_session_rag.SemanticCache` is one, linked by
``cache.link_memory(memory)`` or by the graphs that wire a cache to a memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_session_rag import _fork
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.chunking.messages import Turn
from langchain_session_rag.errors import FileAccessError
from langchain_session_rag.memory.daily_log import (
    LOG_LOCK,
    LoggedMessage,
    read_day_file,
    render_entries,
    user_folder,
)
from langchain_session_rag.privacy.keyring import ShredReceipt
from langchain_session_rag.privacy.sealing import UserCipher
from langchain_session_rag.stores.base import Record, decode_message_ids


@dataclass(frozen=True)
class Forgotten:
    """What one ``forget`` call removed: the chunks' ids, the sessions and messages they covered, the criteria."""

    chunk_ids: frozenset[str] = frozenset()
    messages: frozenset[tuple[str, str]] = frozenset()
    """``(session_id, message_id)`` of every message a removed chunk covered."""
    sessions: frozenset[str] = frozenset()
    """Sessions of the removed chunks."""
    session_id: str | None = None
    before: datetime | None = None
    by_ids: bool = False

    @classmethod
    def of(
        cls, records: Iterable[Record], *, session_id: str | None, before: datetime | None, by_ids: bool
    ) -> Forgotten:
        """The forgotten chunks ``records`` (with their metadata), removed by these criteria."""
        chunks: set[str] = set()
        messages: set[tuple[str, str]] = set()
        sessions: set[str] = set()
        for record in records:
            session = str(record.metadata.get("session_id") or "")
            chunks.add(record.id)
            sessions.add(session)
            messages.update((session, m) for m in decode_message_ids(record.metadata.get("message_ids")))
        return cls(frozenset(chunks), frozenset(messages), frozenset(sessions), session_id, before, by_ids)

    def covers(self, message: LoggedMessage) -> bool:
        """Whether a logged message was forgotten.

        A message a removed chunk covered always is; without ``ids=`` a message matching the criteria itself
        (its session, and its own timestamp before ``before``) is too, so nothing matching is left in the log.
        """
        if (message.session_id, message.id) in self.messages:
            return True
        if self.by_ids or (self.session_id is None and self.before is None):
            return False
        if self.session_id is not None and message.session_id != self.session_id:
            return False
        if self.before is None:
            return True
        try:
            return parse_timestamp(message.timestamp) < self.before
        except ValueError:
            return False


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text``: a temporary file in the same folder, flushed to disk, renamed over it."""
    handle, temp = tempfile.mkstemp(prefix=".rewrite-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        Path(temp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temp).unlink()
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make a rename durable (where the platform lets a folder be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _rewrite_logs(
    folder: str | os.PathLike[str],
    user_id: str,
    change: Callable[[LoggedMessage], LoggedMessage | None],
    cipher: UserCipher | None,
    *,
    rewrite: bool = False,
) -> int:
    """Rewrite the user's day files through ``change`` (a message, its replacement, or ``None`` to drop it).

    Return how many entries were changed or dropped. A day file left with no message is deleted; each file is
    replaced atomically, so a crash leaves either the old file or the new one, never a torn one.
    """
    user_dir = Path(folder) / user_folder(user_id)
    changed = 0
    if not user_dir.is_dir():
        return 0
    try:
        with LOG_LOCK:
            for path in sorted(user_dir.glob("*.md")):
                messages = read_day_file(path, user_id, cipher)
                kept = [m for m in (change(m) for m in messages) if m is not None]
                if kept == messages and not rewrite:
                    continue
                changed += len(messages) - len(kept) + sum(1 for m in kept if m not in messages)
                if kept:
                    _write_atomically(path, f"# {path.stem}\n\n{render_entries(kept, cipher)}")
                else:
                    path.unlink()
                    _sync_folder(user_dir)
    except OSError as exc:
        msg = f"Cannot rewrite the daily log in {user_dir}: {exc}; forget again to retry."
        raise FileAccessError(msg) from exc
    return changed


def erase_logs(
    folder: str | os.PathLike[str], user_id: str, forgotten: Forgotten, cipher: UserCipher | None = None
) -> int:
    """Rewrite the user's day files without the forgotten messages; return how many log entries were removed.

    Raises:
        FileAccessError: A file cannot be read or written.
        InvalidMessageError: A day file is not a daily log (a broken fence): nothing of it is changed.
    """
    return _rewrite_logs(folder, user_id, lambda m: None if forgotten.covers(m) else m, cipher)


def replace_logged(
    folder: str | os.PathLike[str],
    user_id: str,
    session_id: str,
    turns: Sequence[Turn],
    cipher: UserCipher | None = None,
) -> set[str]:
    """Rewrite the logged entries of edited messages in place (new text, same place and time); return their ids.

    An edit replaces what the log holds, so the text it replaced is not kept in any file.

    Raises:
        FileAccessError: A file cannot be read or written.
        InvalidMessageError: A day file is not a daily log (a broken fence): nothing of it is changed.
    """
    edits = {t.id: t for t in turns}
    replaced: set[str] = set()

    def change(message: LoggedMessage) -> LoggedMessage:
        turn = edits.get(message.id) if message.session_id == session_id else None
        if turn is None:
            return message
        replaced.add(turn.id)
        return dataclasses.replace(message, role=turn.role, text=turn.text, name=turn.name)

    _rewrite_logs(folder, user_id, change, cipher)
    return replaced


def reseal_logs(folder: str | os.PathLike[str], user_id: str, cipher: UserCipher) -> None:
    """Rewrite every day file of the user under the user's current data key (after a new key was made).

    Raises:
        FileAccessError: A file cannot be read or written.
    """
    _rewrite_logs(folder, user_id, lambda m: m, cipher, rewrite=True)


def erase_user_logs(folder: str | os.PathLike[str], user_id: str) -> bool:
    """Delete the user's whole log folder (renamed away first, so no half-deleted folder is read); True if any.

    Raises:
        FileAccessError: The folder cannot be removed.
    """
    user_dir = Path(folder) / user_folder(user_id)
    if not user_dir.exists():
        return False
    try:
        with LOG_LOCK:
            doomed = Path(tempfile.mkdtemp(prefix=".forgotten-", dir=user_dir.parent))
            user_dir.replace(doomed / "user")
            shutil.rmtree(doomed)
            _sync_folder(user_dir.parent)
    except OSError as exc:
        msg = f"Cannot delete the daily log folder {user_dir}: {exc}; delete it by hand."
        raise FileAccessError(msg) from exc
    return True


class ErasureReceipt(int):
    """What ``forget_all`` destroyed. It is the number of chunks removed (an ``int``, as before), and says more.

    With encryption on, ``key_ids`` are the user's data keys destroyed first (the key file overwritten and
    unlinked): every ciphertext of the user, in the store's free pages and write-ahead log, in backups and
    exports taken earlier, was unreadable from that moment, before any record was deleted.
    """

    user_id: str
    key_ids: tuple[str, ...]
    """The destroyed data keys (empty when the store is not encrypted, or the user had none)."""
    key_files: tuple[str, ...]
    """The key files overwritten and unlinked (the memory's keyring, and linked caches' keyrings)."""
    cache_entries: int
    """Entries linked caches deleted."""
    daily_logs_deleted: bool
    destroyed_at: str
    """When (UTC, ISO 8601)."""

    def __new__(cls, chunks: int, **details: Any) -> ErasureReceipt:  # noqa: D102, PYI034
        receipt = super().__new__(cls, chunks)
        for name, value in details.items():
            object.__setattr__(receipt, name, value)
        return receipt

    @property
    def chunks(self) -> int:
        """Chunks removed."""
        return int(self)

    def __str__(self) -> str:
        """The number of chunks, as an ``int`` prints."""
        return str(int(self))

    def __repr__(self) -> str:
        """The receipt's fields."""
        return (
            f"ErasureReceipt(chunks={int(self)}, user_id={self.user_id!r}, key_ids={self.key_ids!r}, "
            f"cache_entries={self.cache_entries}, daily_logs_deleted={self.daily_logs_deleted}, "
            f"destroyed_at={self.destroyed_at!r})"
        )


@runtime_checkable
class DerivedTier(Protocol):
    """Something derived from a store's memories that forgetting must reach (a semantic cache)."""

    @property
    def tier_key(self) -> str:
        """Identifies the tier's own storage (two objects over one storage share it)."""
        ...

    def forget_derived(self, user_id: str, forgotten: Forgotten | None) -> int:
        """Delete what was derived from ``forgotten`` (``None``: everything of ``user_id``); return how many."""
        ...

    def compact(self) -> int:
        """Erase deleted entries from the tier's files."""
        ...


@runtime_checkable
class ShreddingTier(Protocol):
    """A derived tier that encrypts per user: forgetting a user destroys its key for the user too."""

    def shred(self, user_id: str) -> list[ShredReceipt]:
        """Destroy the tier's data keys of ``user_id``."""
        ...


@runtime_checkable
class LinkableCache(Protocol):
    """A cache that can follow a memory's forgetting (``SemanticCache``)."""

    def link_memory(self, memory: Any) -> None:
        """Link the cache to ``memory``'s store."""
        ...


_LINKS: dict[str, weakref.WeakSet[DerivedTier]] = {}
_LINKS_LOCK = _fork.lock()


def link_tier(store_key: str, tier: DerivedTier) -> None:
    """Make ``tier`` follow the forgetting and compaction of the store ``store_key`` (for its lifetime).

    Raises:
        StoreLockedError: The tier's store cannot be used in this process (an embedded cache its parent opened).
    """
    _check_usable(tier)
    with _LINKS_LOCK:
        _LINKS.setdefault(store_key, weakref.WeakSet()).add(tier)


def linked_tiers(store_key: str, extra: Collection[DerivedTier] = ()) -> list[DerivedTier]:
    """The live tiers linked to a store, plus ``extra``, one per storage.

    Each tier that can tell (``check_usable()``, as a semantic cache's) is checked first, so that a forget refuses
    before it erases anything rather than stop halfway with a tier still holding what it derived.

    Raises:
        StoreLockedError: A tier's store cannot be used in this process (an embedded cache in a forked child).
    """
    with _LINKS_LOCK:
        tiers = [*_LINKS.get(store_key, ()), *extra]
    unique: dict[str, DerivedTier] = {}
    for tier in tiers:
        unique.setdefault(tier.tier_key, tier)
    for tier in unique.values():
        _check_usable(tier)
    return list(unique.values())


def _check_usable(tier: DerivedTier) -> None:
    check = getattr(tier, "check_usable", None)  # a semantic cache's: not part of the protocol
    if check is not None:
        check()
