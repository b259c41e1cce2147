"""Which stores are encrypted, and with which keyring: opening a store with (or without) a master key.

A Chroma store opened with a key for the first time records in its manifest that it is encrypted and the id of its
keyring; later openings check both before anything is read or written, so a missing key, another key, or a store
folder separated from its keyring is refused instead of looking empty.
"""

from __future__ import annotations

import os
from pathlib import Path

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_path
from langchain_session_rag.errors import EncryptionKeyError, InvalidArgumentError, UnsupportedOperationError
from langchain_session_rag.privacy.keyring import (
    MASTER_KEY_ENV,
    Keyring,
    KeySource,
    master_fingerprint,
    master_key_from,
)
from langchain_session_rag.stores.base import MemoryBackend
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.encrypted import CIPHER, EncryptedBackend
from langchain_session_rag.stores.locking import lock_embedded_store, read_chroma_db

ENCRYPTION_MARK = "encryption"
"""Manifest key of an encrypted Chroma store: the cipher and the fingerprint of its master key (not secret)."""
_KEYRINGS: dict[tuple[str, str], Keyring] = _fork.per_process({})
"""Open keyrings (a forked child reads them afresh: the parent may create or destroy keys after the fork)."""
_KEYRINGS_LOCK = _fork.lock()


def _beside(folder: str | os.PathLike[str]) -> str:
    """``FOLDER.keys`` beside an embedded store's folder (outside it: a copy of the store carries no key)."""
    return f"{os.path.realpath(folder).rstrip(os.sep)}.keys"


def keyring_for(folder: str | os.PathLike[str], master: bytes, *, create: bool = True) -> Keyring:
    """The process's keyring of ``folder`` under ``master`` (one per folder and key: keys are cached in it)."""
    where, fingerprint = os.path.realpath(folder), master_fingerprint(master)
    with _KEYRINGS_LOCK:
        ring = _KEYRINGS.get((where, fingerprint))
        if ring is not None and ring.fingerprint == fingerprint:
            ring.check()  # the key may have been rotated since, here or in another process
            return ring
        ring = Keyring(where, master, create=create)
        _KEYRINGS[(where, fingerprint)] = ring
        return ring


def check_key_before_opening(
    path: str | os.PathLike[str], key: KeySource | None, keyring_dir: str | os.PathLike[str] | None, name: str
) -> None:
    """Refuse to open the encrypted store ``name`` in the embedded folder ``path`` without its key, before Chroma does.

    Chroma writes to a folder's database whenever a client opens it (a row in its own ``acquire_write`` table), so
    the refusal must come first: the store's encryption mark is read from the database read-only, and the key
    checked against the keyring, as :func:`open_encrypted` checks them. The folder's one-writer lock is taken first,
    as opening takes it (its lock file is created if a folder has none). A folder without a store, or a store that
    is not encrypted, passes (the open that follows does the rest).

    Raises:
        EncryptionKeyError: The store is encrypted and the key is missing, malformed, another, or without its keyring.
        StoreLockedError: Another process holds the folder.
    """
    if not isinstance(path, str | os.PathLike):
        return  # not a folder: opening it refuses it
    folder = check_path("path", path)
    lock_embedded_store(folder)  # first: a folder held elsewhere (a forked child's parent) is refused unread
    rows = read_chroma_db(folder, _MARK_QUERY, (f"{name}-manifest", ENCRYPTION_MARK))
    mark = str(rows[0][0] or "") if rows else ""
    if mark:
        _keyring(mark, master_key_from(key), keyring_dir if keyring_dir is not None else _beside(path), name)


_MARK_QUERY = (
    "SELECT m.str_value FROM collection_metadata m JOIN collections c ON c.id = m.collection_id "
    "WHERE c.name = ? AND m.key = ?"
)


def _keyring(mark: str, master: bytes | None, folder: str | os.PathLike[str] | None, name: str) -> Keyring | None:
    """The keyring of the store ``name`` marked ``mark`` ('': not encrypted yet); ``None``: no key, not encrypted.

    Raises:
        EncryptionKeyError: An encrypted store and no key, another key, or not its keyring.
        InvalidArgumentError: A key and no keyring folder (a store on a server without ``keyring_dir``).
    """
    if master is None:
        if mark:
            msg = (
                f"The store {name!r} is encrypted: give its master key (encryption_key=, {MASTER_KEY_ENV}, or the "
                "command line's --key-file)."
            )
            raise EncryptionKeyError(msg)
        return None
    if folder is None:
        msg = (
            "An encrypted store on a server needs keyring_dir= (the command line's --keyring): a folder every process "
            "using the store can read; its users' wrapped data keys live there, apart from the store."
        )
        raise InvalidArgumentError(msg)
    expected = mark.rsplit("keyring:", 1)[1] if "keyring:" in mark else ""
    try:
        ring = keyring_for(folder, master, create=not mark)
    except EncryptionKeyError as exc:
        if (Path(folder) / "master.json").exists():
            raise
        msg = (
            f"This store is encrypted, and its keyring (id {expected or '?'}) is not in {os.fspath(folder)!r}: a store "
            "folder moved or restored without its PATH.keys folder? Put the keyring beside it, or pass keyring_dir= "
            "(--keyring) with its folder. Nothing was read or written."
        )
        raise EncryptionKeyError(msg) from exc
    if expected and ring.keyring_id != expected:
        msg = (
            f"The keyring in {os.fspath(folder)!r} (id {ring.keyring_id or '?'}) is not this store's (id {expected}): "
            "its records would not open. Pass keyring_dir= (--keyring) with the store's own keyring."
        )
        raise EncryptionKeyError(msg)
    return ring


def open_encrypted(
    backend: MemoryBackend, key: KeySource | None, keyring_dir: str | os.PathLike[str] | None
) -> MemoryBackend:
    """``backend`` encrypted with the master key ``key`` (else ``SESSION_RAG_MASTER_KEY``); as it is without one.

    A Chroma store records that it is encrypted, and the id of its keyring, in its manifest on first use; opened
    later without a key, with another key, or with another keyring (a store folder moved without its ``.keys``
    folder), it refuses before anything of the store is read or written (an embedded folder opened through
    ``SessionVectorMemory.local``, ``SemanticCache.local`` or the command line refuses before Chroma opens it:
    see :func:`check_key_before_opening`).

    Raises:
        EncryptionKeyError: A malformed key; an encrypted store opened without its key, with another key, or
            without its keyring.
        InvalidArgumentError: No ``keyring_dir`` for a store that is not an embedded Chroma folder.
        UnsupportedOperationError: A store that embeds texts itself.
    """
    master = master_key_from(key)
    chroma = backend if isinstance(backend, ChromaBackend) else None
    mark = str(chroma.manifest.get(ENCRYPTION_MARK) or "") if chroma is not None else ""
    if master is not None and backend.embeds_itself:
        msg = (
            f"{type(backend).__name__} embeds texts itself, so encrypted it would embed ciphertext: encryption needs "
            "a Chroma store (SessionVectorMemory.local(...) or .server(...))."
        )
        raise UnsupportedOperationError(msg)
    local = chroma.persist_directory if chroma is not None else None
    folder = keyring_dir if keyring_dir is not None else (_beside(local) if local else None)
    ring = _keyring(mark, master, folder, chroma.name if chroma is not None else "")
    if ring is None:
        return backend
    if chroma is not None and not mark:
        chroma.update_manifest({ENCRYPTION_MARK: f"{CIPHER}:keyring:{ring.keyring_id}"})
    return EncryptedBackend(backend, ring)
