"""The one-writer-process lock of an embedded store folder.

A child forked from the process holding a folder's lock does not hold it: right after the fork the child closes its
copy of the lock's descriptor (the parent keeps the lock), and it refuses every embedded store (see
:mod:`langchain_session_rag._fork`).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from pathlib import Path
from typing import Any

from langchain_session_rag import _fork
from langchain_session_rag.errors import InvalidStorePathError, StoreLockedError

_LOCKS: dict[str, int] = _fork.per_process({})
"""Embedded store folders this process holds: resolved path → lock file descriptor."""
_LOCKS_GUARD = _fork.lock()
LOCK_FILE = ".session-rag.lock"


def lock_embedded_store(path: str | os.PathLike[str]) -> None:
    """Take the one-writer lock of an embedded store folder for this process (held until it exits).

    Embedded Chroma is not process-safe: two processes writing one folder corrupt it or serve stale data.
    Objects of one process share the lock; a second process gets :class:`StoreLockedError`. (On systems
    without ``fcntl`` no lock is taken.)

    Raises:
        StoreLockedError: Another process holds the folder, or this process was forked from one that had an
            embedded store open.
        InvalidStorePathError: The path is a file, or the folder cannot be created.
    """
    folder = Path(path)
    _fork.refuse_embedded(os.path.realpath(folder))
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
        if key in _LOCKS:
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
        _LOCKS[key] = fd
        _fork.note_embedded_open(fd)


def read_chroma_db(folder: str, query: str, params: tuple[Any, ...] = (), *, timeout: float = 5.0) -> list[Any] | None:
    """The rows of ``query`` on an embedded folder's ``chroma.sqlite3``, read-only (``None``: no file, or it failed).

    ``params``: the query's parameters; ``timeout``: how long to wait for a writer's lock on the database.
    """
    import sqlite3  # noqa: PLC0415 - only for stores that compact, hand in a collection, or are encrypted

    try:
        uri = "file:" + urllib.parse.quote(os.path.join(folder, "chroma.sqlite3")) + "?mode=ro"  # noqa: PTH118
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=timeout)) as db:
            return db.execute(query, params).fetchall()
    except (sqlite3.Error, ValueError):  # ValueError: a path that is no text (UnicodeEncodeError)
        return None
