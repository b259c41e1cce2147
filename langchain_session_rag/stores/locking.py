"""The one-writer-process lock of an embedded store folder."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from langchain_session_rag.errors import InvalidStorePathError, StoreLockedError

__all__ = ["LOCK_FILE", "lock_embedded_store"]

_LOCKS: dict[str, tuple[int, int]] = {}
"""Embedded store folders this process holds: resolved path → (lock file descriptor, pid)."""
_LOCKS_GUARD = threading.Lock()
LOCK_FILE = ".session-rag.lock"


def lock_embedded_store(path: str | os.PathLike[str]) -> None:
    """Take the one-writer lock of an embedded store folder for this process (held until it exits).

    Embedded Chroma is not process-safe: two processes writing one folder corrupt it or serve stale data.
    Objects of one process share the lock; a second process gets :class:`StoreLockedError`. (On systems
    without ``fcntl`` no lock is taken.)

    Raises:
        StoreLockedError: Another process holds the folder.
        InvalidStorePathError: The path is a file, or the folder cannot be created.
    """
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
