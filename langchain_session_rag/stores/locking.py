"""The one-writer-process lock of an embedded store folder.

A child forked from the process holding a folder's lock does not hold it: at the fork its copy of the lock's
descriptor is closed (the parent keeps the lock) and the folder is recorded as inherited, so that the chromadb
clients opened before the fork refuse to work in the child (see ``stores/adapter.py``), and so does opening the
folder again in the child: chromadb keeps an open folder's state process-wide, with its threads in the parent,
and a child's new client for that folder hangs on its first count or read, even after the parent exited.
What the child must refuse (the folders, their collection ids and database files) is read by the parent just
before the fork: the child calls no SQLite to decide (another thread of the parent may have held SQLite's own
locks at the fork).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_session_rag import _fork
from langchain_session_rag.errors import InvalidStorePathError, StoreLockedError

_LOCKS: dict[str, tuple[int, int]] = {}
"""Embedded store folders this process holds: resolved path → (lock file descriptor, pid)."""
_LOCKS_GUARD = _fork.ChildLock()
_INHERITED: dict[str, int] = {}
"""In a forked child: the folders its parent (pid), or an earlier ancestor, had open at the fork."""
_HANDED_IN: dict[str, tuple[int, int] | None] = {}
"""Folders of embedded clients handed to the package in this process (not locked by it), resolved when handed in,
with their database file (found again where it is at a fork, if the folder moved since)."""
_INHERITED_IDS: dict[str, tuple[int, str]] = {}
"""In a forked child: the ids of the collections and segments in those folders (a copy has the same), with the
ancestor that had the folder open and the folder."""
_INHERITED_FILES: dict[tuple[int, int], tuple[int, str]] = {}
"""In a forked child: the device and inode of those folders' ``chroma.sqlite3`` (the folder moved: the same file)."""
_OPEN_ELSEWHERE: list[Callable[[], list[tuple[str, bool]]]] = []
"""Other embedded folders open in this process (chromadb's own clients, see ``stores/adapter.py``): each as its path
and whether it is judged by its path (an absolute one)."""
_AT_FORK: dict[str, tuple[frozenset[str], tuple[int, int] | None, bool, int]] = {}
"""Taken in the parent just before fork(): each open folder's ids, database file, whether judged by path, owner."""
_KNOWN_IDS: dict[str, set[str]] = {}
"""The ids last read from each open folder (a copy has at least the ids of the collections it was copied with)."""
_COPY_CHECKS: dict[tuple[int, int, int, int], frozenset[str]] = {}
"""In a forked child: the ids found in a folder's database, by its device, inode, size and modification time."""
FORK_READ_TIMEOUT = 0.2
"""Seconds the parent waits in all, just before a fork, for writers' locks on its open folders' databases."""
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


def _database_file(folder: str) -> tuple[int, int] | None:
    """The device and inode of ``folder``'s ``chroma.sqlite3`` (``None``: none there)."""
    try:
        found = os.stat(os.path.join(folder, "chroma.sqlite3"))  # noqa: PTH116, PTH118 - a system call, no more
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _open_database_folder(file: tuple[int, int]) -> str | None:
    """Where this process has the database file ``file`` open now (Linux; a folder moved since it was opened)."""
    with contextlib.suppress(OSError):
        for fd in Path("/proc/self/fd").iterdir():
            with contextlib.suppress(OSError):
                target = fd.resolve(strict=True)
                found = target.stat()
                if target.name == "chroma.sqlite3" and (found.st_dev, found.st_ino) == file:
                    return str(target.parent)
    return None


def _before_fork() -> None:
    """In the parent, just before fork(): the folders the child must refuse, their ids and database files.

    Read here, not in the child: a forked child must not call SQLite (a lock another thread of the parent held
    inside it at the fork stays held in the child for ever), and the folders may move after the fork.
    """
    folders: dict[str, tuple[bool, int]] = {}
    with _LOCKS_GUARD:
        locked = dict(_LOCKS)
    for key, (fd, owner) in locked.items():
        folders[key] = (True, owner)
        with contextlib.suppress(OSError):  # where the folder is now: it may have moved since it was opened
            folders.setdefault(str(Path(f"/proc/self/fd/{fd}").readlink().parent), (True, owner))
    for key, file in list(_HANDED_IN.items()):
        folders.setdefault(key, (True, os.getpid()))
        if file is not None and _database_file(key) != file:
            moved = _open_database_folder(file)
            if moved is None:
                _HANDED_IN[key] = None  # gone: not looked for at every fork
            else:
                folders.setdefault(moved, (True, os.getpid()))
    for provider in _OPEN_ELSEWHERE:
        with contextlib.suppress(Exception):  # a fork must not fail for it; the folders above still count
            for path, by_path in provider():
                folders.setdefault(os.path.realpath(path), (by_path, os.getpid()))
    _AT_FORK.clear()
    deadline = time.monotonic() + FORK_READ_TIMEOUT  # for all the folders together
    for folder, (by_path, owner) in folders.items():
        try:  # a writer holding the database: the last ids read; a failure must not lose the other folders
            left = max(deadline - time.monotonic(), 0.0)  # past it: still read, but wait for no writer
            ids = _folder_ids(folder, timeout=left)
        except Exception:  # noqa: BLE001 - anything raised in a hook before fork() is only printed by Python
            ids = set()
        _KNOWN_IDS[folder] = ids = ids or _KNOWN_IDS.get(folder, set())
        _AT_FORK[folder] = (frozenset(ids), _database_file(folder), by_path, owner)


def _release_in_child() -> None:
    """After fork(): the lock stays the parent's; the child closes its copy of the descriptor and records the folders.

    Only what the parent read before the fork is used here: this runs in the child before anything else.
    """
    for fd, _pid in _LOCKS.values():
        with contextlib.suppress(OSError):
            os.close(fd)  # the parent's descriptor still holds the lock; this copy would keep it past the parent
    _LOCKS.clear()
    _HANDED_IN.clear()
    for folder, (ids, file, by_path, owner) in _AT_FORK.items():
        if by_path:
            _INHERITED.setdefault(folder, owner)
        if file is not None:
            _INHERITED_FILES.setdefault(file, (owner, folder))
        for found in ids:
            _INHERITED_IDS.setdefault(found, (owner, folder))
    _AT_FORK.clear()


def note_handed_in(path: str) -> None:
    """Record the folder of an embedded client handed to the package (a forked child then refuses to reopen it)."""
    key = os.path.realpath(path)  # now: a relative path's working directory may change before a fork
    _HANDED_IN[key] = _database_file(key)


def note_open_elsewhere(provider: Callable[[], list[tuple[str, bool]]]) -> None:
    """Add a source of embedded folders open in this process that a forked child must refuse too."""
    _OPEN_ELSEWHERE.append(provider)


os.register_at_fork(before=_before_fork, after_in_parent=_AT_FORK.clear)
_fork.on_fork_in_child(_release_in_child)


def read_chroma_db(folder: str, query: str, params: tuple[Any, ...] = (), *, timeout: float = 5.0) -> list[Any] | None:
    """The rows of ``query`` on an embedded folder's ``chroma.sqlite3``, read-only (``None``: no file, or it failed).

    ``params``: the query's parameters; ``timeout``: how long to wait for a writer's lock on the database.
    """
    import sqlite3  # noqa: PLC0415 - only for stores that compact, hand in a collection, or fork

    try:
        uri = "file:" + urllib.parse.quote(os.path.join(folder, "chroma.sqlite3")) + "?mode=ro"  # noqa: PTH118
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=timeout)) as db:
            return db.execute(query, params).fetchall()
    except (sqlite3.Error, ValueError):  # ValueError: a path that is no text (UnicodeEncodeError)
        return None


_IDS_QUERY = "SELECT id FROM collections UNION SELECT id FROM segments"


def _folder_ids(folder: str, *, timeout: float = 5.0) -> set[str]:
    rows = read_chroma_db(folder, _IDS_QUERY, timeout=timeout)
    return {str(row[0]) for row in rows or ()}


def _inherited_by_content(key: str) -> tuple[int, str] | None:
    """The ancestor and folder whose database file, or collections, the folder ``key`` holds (``None``: none).

    The child reads no SQLite (see :func:`_before_fork`): a new interpreter reads the folder's ids for it.
    """
    file = _database_file(key)
    if file is None:
        return None  # a new folder
    if file in _INHERITED_FILES:
        return _INHERITED_FILES[file]
    if not _INHERITED_IDS:
        return None
    ids = _ids_read_elsewhere(key)
    if ids is None:
        return _CANNOT_TELL
    return next((_INHERITED_IDS[found] for found in sorted(ids) if found in _INHERITED_IDS), None)


_READ_IDS_SAYS = "session-rag: ids"
_READ_IDS = (
    "import sqlite3, sys, urllib.parse\n"
    "uri = 'file:' + urllib.parse.quote(sys.argv[1]) + '?mode=ro'\n"
    "db = sqlite3.connect(uri, uri=True, timeout=2)\n"
    f"ids = [str(row[0]) for row in db.execute({_IDS_QUERY!r})]\n"
    f"print({_READ_IDS_SAYS!r}, *ids, sep='\\n')\n"
)
_CANNOT_TELL = (0, "")
"""What :func:`_inherited_by_content` answers when the check could not run or failed (refused: it fails closed)."""


def _ids_read_elsewhere(folder: str) -> frozenset[str] | None:
    """The collection and segment ids of ``folder``, read by a new Python process (``None``: it could not say)."""
    database = os.path.join(folder, "chroma.sqlite3")  # noqa: PTH118
    try:
        found = os.stat(database)  # noqa: PTH116
    except OSError:
        return frozenset()
    stamp = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)
    if stamp in _COPY_CHECKS:
        return _COPY_CHECKS[stamp]
    if not Path(sys.executable or "none").name.lower().startswith(("python", "pypy")):
        return None  # an embedding host (uWSGI, mod_wsgi) names itself: nothing to run
    import subprocess  # noqa: PLC0415 - only in a forked child that opens a folder it did not create

    try:
        done = subprocess.run(  # noqa: S603 - this interpreter, a fixed program, the path as an argument
            [sys.executable, "-I", "-c", _READ_IDS, database],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    said = done.stdout.splitlines()
    if done.returncode != 0 or not said or said[0] != _READ_IDS_SAYS:
        return None  # not cached: a writer's lock, say, may be gone at the next look
    _COPY_CHECKS[stamp] = frozenset(line for line in said[1:] if line)
    return _COPY_CHECKS[stamp]


def refuse_inherited(path: str | None) -> None:
    """Refuse to open, in a forked child, an embedded store its parent (or an ancestor) had open.

    Raises:
        StoreLockedError: This process was forked from one that had the folder open.
    """
    if not path or not (_INHERITED or _INHERITED_IDS or _INHERITED_FILES):
        return
    key = os.path.realpath(path)
    if _LOCKS.get(key, (0, 0))[1] == os.getpid():
        return  # opened by this process, after the fork: checked then
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
        if found == _CANNOT_TELL:
            parent = _fork.forked_from() or 0
            what = (
                f"This process cannot tell whether the embedded store {key!r} is a copy of a folder process "
                f"{parent} had open (its check, in a new interpreter, could not run or failed; it is refused, not "
                "risked)"
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
