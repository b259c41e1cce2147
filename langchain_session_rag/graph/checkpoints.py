"""Purging a user's threads from the app's checkpointer: what forgetting cannot reach by itself.

The graphs return an uncompiled ``StateGraph``; the checkpointer is the application's. With LangGraph's default
durability every super-step of a turn is checkpointed, and the intermediate checkpoints hold what the turn had
in its state: the question, the retrieved memories, the pinned core memory, the prompt (the last checkpoint of a
turn drops the prompt and the core memory; ``durability="exit"`` writes only that one). ``forget_all`` cannot find
those checkpoints: the application knows which threads are the user's. :func:`purge_threads` deletes them
through LangGraph's ``delete_thread`` and, for a SQLite checkpointer, erases them from the file as well.

Example:
    .. code-block:: python

        import sqlite3, tempfile
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langchain_session_rag.graph import purge_threads

        saver = SqliteSaver(sqlite3.connect(tempfile.mktemp(suffix=".sqlite"), check_same_thread=False))
        saver.setup()
        assert purge_threads(saver, ["alice-thread-1", "alice-thread-2"]) == 2
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sqlite3
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langchain_session_rag.errors import EncryptionKeyError, InvalidArgumentError
from langchain_session_rag.privacy.keyring import MASTER_KEY_ENV, KeySource, checkpoint_key, master_key_from


def _check(checkpointer: object, thread_ids: object) -> list[str]:
    if not isinstance(checkpointer, BaseCheckpointSaver):
        msg = f"checkpointer must be a LangGraph BaseCheckpointSaver, got {type(checkpointer).__name__}."
        raise InvalidArgumentError(msg)
    if (
        isinstance(thread_ids, str | bytes)
        or not isinstance(thread_ids, Sequence)
        or not all(isinstance(t, str) and t for t in thread_ids)
    ):
        msg = f"thread_ids must be a list of non-empty thread id strings, got {thread_ids!r}."
        raise InvalidArgumentError(msg)
    return list(dict.fromkeys(thread_ids))


_ERASE = ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)")
"""Move the WAL into the file, rebuild the file without free pages, empty the WAL again."""


def _erase_locked(checkpointer: object, conn: sqlite3.Connection) -> None:
    """Erase under the saver's own lock (a ``SqliteSaver`` serialises its connection with it)."""
    lock = getattr(checkpointer, "lock", None)
    with lock if lock is not None and hasattr(lock, "__enter__") else contextlib.nullcontext():
        conn.commit()  # VACUUM cannot run inside a transaction
        for statement in _ERASE:
            conn.execute(statement).close()


def purge_threads(checkpointer: BaseCheckpointSaver[Any], thread_ids: Sequence[str], *, erase: bool = True) -> int:
    """Delete every checkpoint and pending write of these threads; return how many threads were purged.

    With a ``SqliteSaver`` and ``erase=True`` (the default) the database is then checkpointed, vacuumed and its
    write-ahead log truncated, so a byte scan of the ``.sqlite`` file and its ``-wal`` finds none of the
    threads' text (it rewrites the whole file: purge in batches, not thread by thread). Other checkpointers
    delete through their own ``delete_thread``; erasing their storage is theirs to do (for Postgres,
    ``VACUUM`` the checkpoint tables).

    Raises:
        InvalidArgumentError: ``checkpointer`` is not a LangGraph checkpointer.
        InvalidArgumentError: ``thread_ids`` is not a list of thread id strings.
        NotImplementedError: The checkpointer cannot delete threads (LangGraph's base class).
    """
    threads = _check(checkpointer, thread_ids)
    for thread in threads:
        checkpointer.delete_thread(thread)
    conn = getattr(checkpointer, "conn", None)
    if erase and isinstance(conn, sqlite3.Connection):
        _erase_locked(checkpointer, conn)
    return len(threads)


async def apurge_threads(
    checkpointer: BaseCheckpointSaver[Any], thread_ids: Sequence[str], *, erase: bool = True
) -> int:
    """Async :func:`purge_threads` (``adelete_thread``; an ``AsyncSqliteSaver``'s file is erased the same way)."""
    threads = _check(checkpointer, thread_ids)
    for thread in threads:
        await checkpointer.adelete_thread(thread)
    conn = getattr(checkpointer, "conn", None)
    if erase and isinstance(conn, sqlite3.Connection):
        await asyncio.to_thread(_erase_locked, checkpointer, conn)
    elif erase and type(conn).__module__.startswith("aiosqlite"):
        async with checkpointer.lock:  # type: ignore[attr-defined]
            await conn.commit()  # type: ignore[union-attr]
            for statement in _ERASE:
                cursor = await conn.execute(statement)  # type: ignore[union-attr]
                await cursor.fetchall()  # a PRAGMA's row: read and closed, or VACUUM finds a statement running
                await cursor.close()
    return len(threads)


class _AesGcm(CipherProtocol):
    """AES-256-GCM (``cryptography``) under a key derived from the master key, for LangGraph's serializer."""

    name = "aes-256-gcm"

    def __init__(self, masters: Sequence[bytes]) -> None:
        self._ciphers = [AESGCM(checkpoint_key(master)) for master in masters]

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        nonce = secrets.token_bytes(12)
        return self.name, nonce + self._ciphers[0].encrypt(nonce, plaintext, None)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername != self.name:
            msg = f"A checkpoint was encrypted with {ciphername!r}, not {self.name!r}."
            raise EncryptionKeyError(msg)
        for cipher in self._ciphers:  # the current key, then the keys it replaced
            with contextlib.suppress(InvalidTag):
                return cipher.decrypt(ciphertext[:12], ciphertext[12:], None)
        msg = "A checkpoint does not open with the master key (nor previous_keys): another key, or altered."
        raise EncryptionKeyError(msg)


def encrypted_serde(
    encryption_key: KeySource | None = None, *, previous_keys: Sequence[KeySource] = ()
) -> EncryptedSerializer:
    """A LangGraph serializer that encrypts every checkpoint (AES-256-GCM), for ``SqliteSaver(conn, serde=...)``.

    The key is derived from the master key (``encryption_key``, else ``SESSION_RAG_MASTER_KEY``). A checkpoint holds
    a turn's question, retrieved memories and prompt; encrypted, the checkpointer's file holds none of them in clear.
    The key is the application's, not a user's (a serializer does not know whose thread it writes): forgetting a
    user still needs :func:`purge_threads` for their threads. After a master-key rotation pass the old key in
    ``previous_keys``: checkpoints written under it still open (new ones use the new key). Checkpoint *metadata*
    (the run's config values, LangGraph's step counters) is not serialized through ``serde`` and stays in clear:
    keep content out of ``configurable`` and run metadata.

    Example:
        .. code-block:: python

            import sqlite3, tempfile
            from langgraph.checkpoint.sqlite import SqliteSaver
            from langchain_session_rag.graph import encrypted_serde
            from langchain_session_rag.privacy import generate_master_key

            conn = sqlite3.connect(tempfile.mktemp(suffix=".sqlite"), check_same_thread=False)
            saver = SqliteSaver(conn, serde=encrypted_serde(generate_master_key()))

    Raises:
        EncryptionKeyError: No key given nor in the environment, or a malformed one.
    """
    master = master_key_from(encryption_key)
    if master is None:
        msg = f"encrypted_serde needs the master key: pass encryption_key= or set {MASTER_KEY_ENV}."
        raise EncryptionKeyError(msg)
    older = [m for m in (master_key_from(k) for k in previous_keys) if m is not None]
    return EncryptedSerializer(_AesGcm([master, *older]))
