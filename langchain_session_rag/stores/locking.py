"""The one-writer-process lock of an embedded store folder.

A child forked from the process holding a folder's lock does not hold it: at the fork its copy of the lock's
descriptor is closed (the parent keeps the lock) and the folder is recorded as inherited, so that the chromadb
clients opened before the fork refuse to work in the child (see ``stores/adapter.py``), and so does opening the
folder again in the child: chromadb keeps an open folder's state process-wide, with its threads in the parent,
and a child's new client for that folder hangs on its first count or read, even after the parent exited.
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from pathlib import Path
from typing import Any

from langchain_session_rag import _fork
from langchain_session_rag.errors import InvalidStorePathError, StoreLockedError

_LOCKS: dict[str, tuple[int, int]] = {}
"""Embedded store folders this process holds: resolved path → (lock file descriptor, pid)."""
_LOCKS_GUARD = _fork.ChildLock()
_INHERITED: dict[str, int] = {}
"""In a forked child: the folders its parent (pid), or an earlier ancestor, had open at the fork."""
_HANDED_IN: set[str] = set()
"""Folders of embedded clients handed to the package in this process (not locked by it), resolved when handed in."""
_INHERITED_IDS: dict[str, tuple[int, str]] = {}
"""In a forked child: the ids of the collections and segments in those folders (a copy has the same), with the
ancestor that had the folder open and the folder; read on the first check, never in the fork's hook."""
_PENDING_IDS: dict[str, int] = {}
"""Folders whose ids are still to be read (the hook after fork() must not call SQLite: a lock another thread of
the parent held inside it would be held for ever in the child)."""
_INHERITED_FILES: dict[tuple[int, int], tuple[int, str]] = {}
"""In a forked child: the device and inode of those folders' ``chroma.sqlite3`` (the folder moved: the same file)."""
LOCK_FILE = ".session-rag.lock"


def lock_embedded_store(path: str | os.PathLike[str]) -> None:
    """Take the one-writer lock of an embedded store folder for this process (held until it exits).

    Embedded Chroma is not process-safe: two processes writing one folder corrupt it or serve stale data.
    Objects of one process share the lock; a second process gets :class:`StoreLockedError`. (On systems
    without ``fcntl`` no lock is taken.)

    Raises:
        StoreLockedError: Another process holds the folder, or this process was forked from one that had it open.
        InvalidStorePathError: The path is a file, or the folder cannot be created.
    """
    refuse_inherited(str(path))
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file there, no permission, a read-only or missing parent
        msg = f"Cannot use {str(folder)!r} as a store folder: {exc.strerror or exc}. Give a folder path."
        raise InvalidStorePathError(msg) from exc
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        return
    key = str(folder.resolve())
    with _LOCKS_GUARD:
        held = _LOCKS.get(key)
        if held is not None and held[1] == os.getpid():
            return
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            msg = (
                f"The embedded store {key!r} is open in another process. An embedded Chroma store has one "
                "writer process; for several processes run a Chroma server (`chroma run --path DIR`) and use "
                "SessionVectorMemory.server(host, port, ...)."
            )
            raise StoreLockedError(msg) from exc
        _LOCKS[key] = (fd, os.getpid())


def _release_in_child() -> None:
    """After fork(): the lock stays the parent's; the child closes its copy of the descriptor and records the folder.

    Only system calls here (no SQLite, no logging): this runs in the child before anything else.
    """
    for key, (fd, pid) in list(_LOCKS.items()):
        inherit(key, pid)
        with contextlib.suppress(OSError):  # where the folder is now: it may have moved since it was opened
            inherit(str(Path(f"/proc/self/fd/{fd}").readlink().parent), pid)
        with contextlib.suppress(OSError):
            os.close(fd)  # the parent's descriptor still holds the lock; this copy would keep it past the parent
    _LOCKS.clear()
    for key in _HANDED_IN:
        inherit(key, os.getppid())
    _HANDED_IN.clear()


def note_handed_in(path: str) -> None:
    """Record the folder of an embedded client handed to the package (a forked child then refuses to reopen it)."""
    _HANDED_IN.add(os.path.realpath(path))  # now: a relative path's working directory may change before a fork


_fork.on_fork_in_child(_release_in_child)


def read_chroma_db(folder: str, query: str) -> list[Any] | None:
    """The rows of ``query`` on an embedded folder's ``chroma.sqlite3``, read-only (``None``: no file, or it failed)."""
    import sqlite3  # noqa: PLC0415 - only for stores that compact, hand in a collection, or run in a forked child

    uri = "file:" + urllib.parse.quote(os.path.join(folder, "chroma.sqlite3")) + "?mode=ro"  # noqa: PTH118
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            return db.execute(query).fetchall()
    except sqlite3.Error:
        return None


def _folder_ids(folder: str) -> set[str]:
    rows = read_chroma_db(folder, "SELECT id FROM collections UNION SELECT id FROM segments")
    return {str(row[0]) for row in rows or ()}


def inherit(path: str, parent: int, *, by_path: bool = True) -> None:
    """In a forked child: record that ``parent`` had the embedded store ``path`` open at the fork.

    chromadb keeps its state by collection, so the folder's collection and segment ids count too (read on the first
    check): a copy of the folder made before the fork hangs the child as the folder does. So does the folder moved:
    its database file is recorded. ``by_path=False`` records only the ids (for a relative path given to chromadb:
    the working directory may have changed since the folder was opened).
    """
    key = os.path.realpath(path)
    _PENDING_IDS.setdefault(key, parent)
    if not by_path:
        return
    _INHERITED.setdefault(key, parent)
    with contextlib.suppress(OSError):
        found = os.stat(os.path.join(key, "chroma.sqlite3"))  # noqa: PTH116, PTH118 - a system call, no more
        _INHERITED_FILES.setdefault((found.st_dev, found.st_ino), (parent, key))


def _inherited_by_content(key: str) -> tuple[int, str] | None:
    """The ancestor and folder whose database file, or collections, the folder ``key`` holds (``None``: none)."""
    with contextlib.suppress(OSError):
        found = os.stat(os.path.join(key, "chroma.sqlite3"))  # noqa: PTH116, PTH118
        if (found.st_dev, found.st_ino) in _INHERITED_FILES:
            return _INHERITED_FILES[found.st_dev, found.st_ino]
    for folder, parent in list(_PENDING_IDS.items()):
        for found_id in _folder_ids(folder):
            _INHERITED_IDS.setdefault(found_id, (parent, folder))
        _PENDING_IDS.pop(folder, None)
    return next((_INHERITED_IDS[i] for i in _folder_ids(key) if i in _INHERITED_IDS), None) if _INHERITED_IDS else None


def refuse_inherited(path: str | None) -> None:
    """Refuse to open, in a forked child, an embedded store its parent (or an ancestor) had open.

    Raises:
        StoreLockedError: This process was forked from one that had the folder open.
    """
    if not path or not (_INHERITED or _INHERITED_IDS or _PENDING_IDS):
        return
    key = os.path.realpath(path)
    parent = _INHERITED.get(key)
    what = f"The embedded store {key!r} was open in process {parent}"
    if parent is None:
        found = _inherited_by_content(key)
        if found is None:
            return
        parent, opened = found
        what = (
            f"The embedded store {key!r} holds the collections of {opened!r} (the same folder moved, one copied "
            f"from the other, or both from one folder), which process {parent} had open"
        )
    msg = (
        f"{what}, and this "
        "process was forked from it: a forked child cannot open that folder again (chromadb keeps an open "
        "store's state for the whole process, with its threads in the parent; the child's calls would hang, even "
        "after the parent exits). "
        "Open the store only in processes whose parent never opened it (gunicorn: without --preload or in "
        "post_fork; multiprocessing: the 'spawn' start method; a daemon: open it after daemonizing), or run a "
        "Chroma server (`chroma run --path DIR`) and use SessionVectorMemory.server(host, port, ...)."
    )
    raise StoreLockedError(msg)


def forked_store_message(path: str | None) -> str:
    """Why a chromadb client opened before fork() refuses to work in the child, and what to do instead."""
    key = os.path.realpath(path) if path else ""
    parent = _INHERITED.get(key, _fork.forked_from())
    if not key:
        return (
            f"An in-memory Chroma store was created in process {parent} before fork(); this forked child cannot use "
            "it (its threads stay in the parent). Create the memory or cache in the child (a new in-memory store "
            "works there), or use the 'spawn' start method, or run a Chroma server (`chroma run`) and use "
            "SessionVectorMemory.server(host, port, ...) or SemanticCache.server(...)."
        )
    return (
        f"The embedded store {key!r} was opened in process {parent} before fork(); this forked child cannot use "
        "it (embedded Chroma is not process-safe, and its threads stay in the parent), nor open the folder again. "
        "Open it only in processes whose parent never opened it (gunicorn: without --preload or in "
        "post_fork; multiprocessing: the 'spawn' start method), with one writer process per folder, or run a "
        "Chroma server (`chroma run --path DIR`) and use SessionVectorMemory.server(host, port, ...)."
    )
