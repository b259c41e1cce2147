"""Envelope keys: one master key, and per user a data key wrapped by it in a file of its own (crypto-shredding).

The master key never touches the disk through this package: it is given as ``encryption_key=`` (raw 32 bytes,
their base64 or hex text, a path to a file holding that text, or a callable returning it) or read from the
environment variable ``SESSION_RAG_MASTER_KEY``. Each user's data key (32 random bytes) is wrapped with AES-GCM
under the master key and kept in ``KEYRING/users/<digest>.json``, outside the store's database: destroying that
small file (overwritten with random bytes, flushed, unlinked) makes every ciphertext of the user unreadable
everywhere it was copied (SQLite free pages, the write-ahead log, backups of the store, exports), without touching
them. ``KEYRING/master.json`` holds a check value that tells a wrong master key apart before anything is written.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from langchain_session_rag import _fork
from langchain_session_rag.errors import EncryptionKeyError, FileAccessError

MASTER_KEY_ENV = "SESSION_RAG_MASTER_KEY"
"""The environment variable read when no ``encryption_key`` is given (a key's base64 or hex text)."""
KEY_BYTES = 32
_NONCE = 12
_CHECK = b"langchain-session-rag keyring v1"
KeySource = str | bytes | os.PathLike[str] | Callable[[], str | bytes]
"""What ``encryption_key=`` accepts: the key (32 bytes, or their base64/hex text), a key file's path, a callable."""


def generate_master_key() -> str:
    """A new random master key as URL-safe base64 text (keep it in a secret manager, never beside the store)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode()


def _decode(text: str, where: str) -> bytes:
    text = text.strip()
    for decode in (bytes.fromhex, base64.urlsafe_b64decode, base64.b64decode):
        with contextlib.suppress(binascii.Error, ValueError):
            raw = decode(text if decode is bytes.fromhex else text + "=" * (-len(text) % 4))
            if len(raw) == KEY_BYTES:
                return raw
    msg = (
        f"The master key from {where} is not 32 bytes of base64 or hex text ({len(text)} characters). "
        "Make one with `session-rag keys new` (or generate_master_key())."
    )
    raise EncryptionKeyError(msg)


def master_key_from(source: KeySource | None) -> bytes | None:
    """The master key ``source`` names, else the one in ``SESSION_RAG_MASTER_KEY``; ``None`` when there is none.

    Raises:
        EncryptionKeyError: The key is not 32 bytes (raw, or as base64/hex text), or its file cannot be read.
    """
    where = "encryption_key="
    if source is None:
        env = os.environ.get(MASTER_KEY_ENV)
        if not env:
            return None
        return _decode(env, f"${MASTER_KEY_ENV}")
    if callable(source):
        source = source()
        where = "the encryption_key callable"
    if isinstance(source, os.PathLike):
        path = Path(source)
        try:
            return _decode(path.read_text(encoding="utf-8"), f"the key file {str(path)!r}")
        except OSError as exc:
            msg = f"Cannot read the master key file {str(path)!r}: {exc.strerror or exc}."
            raise EncryptionKeyError(msg) from exc
    if isinstance(source, bytes):
        if len(source) == KEY_BYTES:
            return source
        return _decode(source.decode("ascii", "replace"), where)
    if isinstance(source, str):
        return _decode(source, where)
    msg = f"encryption_key must be key text, bytes, a path or a callable, got {type(source).__name__}."
    raise EncryptionKeyError(msg)


def _derive(secret: bytes, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose.encode()).derive(secret)


def checkpoint_key(master: bytes) -> bytes:
    """The key of encrypted LangGraph checkpoints, derived from the master key."""
    return _derive(master, "checkpoints")


def master_fingerprint(master: bytes) -> str:
    """A non-secret id of a master key (which key a store or keyring was encrypted with)."""
    return hashlib.sha256(_derive(master, "check")).hexdigest()[:16]


@dataclass(frozen=True)
class DataKey:
    """One user's data key (unwrapped, in memory only) and the keys derived from it."""

    key_id: str
    owner: str
    secret: bytes = field(repr=False)

    @cached_property
    def cipher(self) -> AESGCM:
        """AES-256-GCM under the data key's encryption sub-key."""
        return AESGCM(_derive(self.secret, "encrypt"))

    @cached_property
    def index_key(self) -> bytes:
        """The sub-key of blind indexes (keyed digests of filterable values)."""
        return _derive(self.secret, "blind-index")

    @cached_property
    def rotation_seed(self) -> int:
        """The seed of the user's secret rotation of vectors."""
        return int.from_bytes(_derive(self.secret, "vector-rotation"), "big")


@dataclass(frozen=True)
class ShredReceipt:
    """What :meth:`Keyring.shred` destroyed: the user's data keys, by id, and the key file that held them."""

    user_id: str
    key_ids: tuple[str, ...]
    key_file: str
    destroyed_at: str


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text.encode())


def _write_atomic(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` through a flushed temporary file; with ``exclusive``, only if it does not exist."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            with contextlib.suppress(FileExistsError):  # another writer's file came first: it stays
                os.link(tmp, path)
        else:
            Path(tmp).replace(path)
            tmp = ""
    finally:
        if tmp:
            Path(tmp).unlink(missing_ok=True)


class Keyring:
    """The data keys of a store's users, wrapped by one master key, one file per user in ``folder``.

    Every process using the store must see the same folder (a shared file system for a Chroma server reached
    from many machines). Keep the folder out of the store's backups, or back it up apart with a short retention:
    a backup holding a user's key file can decrypt that user's data with the master key even after forgetting.
    """

    def __init__(self, folder: str | os.PathLike[str], master: bytes, *, create: bool = True) -> None:
        """Open the keyring in ``folder`` under ``master`` (with ``create``, a new one when there is none).

        Raises:
            EncryptionKeyError: ``master`` is not the key the keyring was created with, or there is no keyring and
                ``create`` is off (nothing is written either way).
            FileAccessError: The folder cannot be created or read.
        """
        self.folder = Path(folder)
        self._master = AESGCM(_derive(master, "wrap"))
        self._check_id = master_fingerprint(master)
        self._keys: dict[str, tuple[tuple[int, int, int], list[DataKey]]] = {}
        self._lock = _fork.lock()
        self.keyring_id = ""
        """A random id of this keyring, recorded by the stores it serves (a store opened with another refuses)."""
        if not create and not (self.folder / "master.json").exists():
            msg = f"There is no keyring in {str(self.folder)!r}."
            raise EncryptionKeyError(msg)
        try:
            (self.folder / "users").mkdir(parents=True, exist_ok=True)
            self.check()
        except OSError as exc:
            msg = f"Cannot use the keyring folder {str(self.folder)!r}: {exc.strerror or exc}."
            raise FileAccessError(msg) from exc

    @property
    def fingerprint(self) -> str:
        """A non-secret id of the master key (which key opened this keyring)."""
        return self._check_id

    def check(self) -> None:
        """Check the master key against the keyring's check value (made on first use); read the keyring's id.

        Raises:
            EncryptionKeyError: The key does not open the keyring (another key, or one rotated since).
        """
        path = self.folder / "master.json"
        if not path.exists():
            _write_atomic(path, _check_file(self._master, secrets.token_hex(8)), exclusive=True)
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            raw = _unb64(body["check"])
        except (ValueError, KeyError, TypeError) as exc:
            msg = f"The keyring's {str(path)!r} is damaged ({type(exc).__name__}); restore it from its backup."
            raise EncryptionKeyError(msg) from exc
        try:
            self._master.decrypt(raw[:_NONCE], raw[_NONCE:], None)
        except InvalidTag:
            msg = (
                f"The master key does not open the keyring in {str(self.folder)!r}: it was created with another key "
                "(or the key was rotated since this process opened it). Nothing was read or written. Pass the key "
                "the store was encrypted with (encryption_key=, SESSION_RAG_MASTER_KEY, or --key-file)."
            )
            raise EncryptionKeyError(msg) from None
        self.keyring_id = str(body.get("id", ""))

    def _path(self, user_id: str) -> Path:
        digest = hashlib.sha256(("session-rag-user\x1f" + user_id).encode()).hexdigest()[:40]
        return self.folder / "users" / f"{digest}.json"

    def _read(self, user_id: str) -> list[DataKey] | None:
        path = self._path(user_id)
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            return [_unwrap(self._master, user_id, entry) for entry in body["keys"]]
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:  # cut short, edited by hand: not the file this package wrote
            msg = f"The key file {str(path)!r} is damaged ({type(exc).__name__}); restore it from its backup."
            raise EncryptionKeyError(msg) from exc

    def _store(self, user_id: str, keys: list[DataKey], *, exclusive: bool) -> None:
        """Write the user's key file under the master key, checked first (another process may have rotated it)."""
        with self._lock:
            self.check()
            _write_atomic(self._path(user_id), _key_file(self._master, user_id, keys), exclusive=exclusive)

    def keys(self, user_id: str) -> list[DataKey]:
        """The user's data keys, the current (newest) last; empty when the user has none (never written, shredded).

        The key file is looked at on every call (one ``stat``): keys another process renewed, destroyed or
        re-wrapped are read again, never served from this process's memory.
        """
        path = self._path(user_id)
        with self._lock:
            try:
                info = path.stat()
            except FileNotFoundError:
                self._keys.pop(user_id, None)
                return []
            signature = (info.st_ino, info.st_mtime_ns, info.st_size)
            cached = self._keys.get(user_id)
            if cached is not None and cached[0] == signature:
                return cached[1]
            keys = self._read(user_id) or []
            self._keys[user_id] = (signature, keys)
            return keys

    def current(self, user_id: str) -> DataKey:
        """The key new data of the user is encrypted with, created on the user's first write."""
        keys = self.keys(user_id)
        if keys:
            return keys[-1]
        fresh = DataKey(secrets.token_hex(8), user_id, secrets.token_bytes(KEY_BYTES))
        self._store(user_id, [fresh], exclusive=True)  # another process may have created one first: it wins
        return self.keys(user_id)[-1]

    def find(self, user_id: str, key_id: str) -> DataKey | None:
        """The user's data key ``key_id``; ``None`` when it was destroyed (or never existed)."""
        return next((k for k in self.keys(user_id) if k.key_id == key_id), None)

    def add_key(self, user_id: str) -> DataKey:
        """Give the user a new current data key (re-encryption), keeping the older ones until :meth:`drop_old`."""
        fresh = DataKey(secrets.token_hex(8), user_id, secrets.token_bytes(KEY_BYTES))
        self._store(user_id, [*self.keys(user_id), fresh], exclusive=False)
        return fresh

    def drop_old(self, user_id: str) -> list[str]:
        """Destroy every data key of the user but the current one; return the destroyed ids."""
        keys = self.keys(user_id)
        if len(keys) < 2:  # noqa: PLR2004
            return []
        self._store(user_id, keys[-1:], exclusive=False)
        return [k.key_id for k in keys[:-1]]

    def every_key(self) -> list[DataKey]:
        """Every user's data keys (re-embedding a whole store reads them all)."""
        bodies = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((self.folder / "users").glob("*.json"))]
        return [_unwrap(self._master, str(body["owner"]), entry) for body in bodies for entry in body["keys"]]

    def users(self) -> int:
        """How many users have a key file."""
        return sum(1 for _ in (self.folder / "users").glob("*.json"))

    def shred(self, user_id: str) -> ShredReceipt:
        """Destroy the user's data keys: overwrite the key file with random bytes, flush it, unlink it.

        Every ciphertext of the user, wherever a copy of it lies, is unreadable from then on. What the file system
        keeps below the file (a copy-on-write or journaling file system's old blocks, an SSD's remapped pages, a
        snapshot) is out of this package's reach: keep the keyring on storage you can trust to forget.
        """
        path = self._path(user_id)
        with self._lock:
            try:
                body = json.loads(path.read_text(encoding="utf-8"))
                ids = tuple(entry["id"] for entry in body["keys"])
                size = path.stat().st_size
                with path.open("r+b") as handle:
                    handle.write(secrets.token_bytes(size))
                    handle.flush()
                    os.fsync(handle.fileno())
                path.unlink()
                dir_fd = os.open(path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            except FileNotFoundError:
                ids = ()
            self._keys.pop(user_id, None)
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return ShredReceipt(user_id, ids, str(path) if ids else "", when)

    def rewrap(self, new_master: bytes) -> int:
        """Wrap every data key under ``new_master`` (master-key rotation); return how many users' files changed.

        Each file is replaced atomically, the check value last: a run cut short leaves files under both keys, the
        old key still opens the keyring, and running it again with the same two keys finishes it.
        """
        newer = AESGCM(_derive(new_master, "wrap"))
        changed = 0
        with self._lock:
            for path in sorted((self.folder / "users").glob("*.json")):
                body = json.loads(path.read_text(encoding="utf-8"))
                owner = str(body["owner"])
                try:
                    keys = [_unwrap(self._master, owner, entry) for entry in body["keys"]]
                except EncryptionKeyError:  # already wrapped under the new key by a run cut short
                    keys = [_unwrap(newer, owner, entry) for entry in body["keys"]]
                _write_atomic(path, _key_file(newer, owner, keys))
                changed += 1
            _write_atomic(self.folder / "master.json", _check_file(newer, self.keyring_id))
            self._master, self._check_id, self._keys = newer, master_fingerprint(new_master), {}
        return changed


def _check_file(master: AESGCM, keyring_id: str) -> bytes:
    """The keyring's ``master.json``: its id, and a value only the master key opens."""
    nonce = secrets.token_bytes(_NONCE)
    return json.dumps(
        {"version": 1, "id": keyring_id, "check": _b64(nonce + master.encrypt(nonce, _CHECK, None))}
    ).encode()


def _unwrap(master: AESGCM, user_id: str, entry: dict[str, str]) -> DataKey:
    raw = _unb64(entry["wrapped"])
    aad = f"{user_id}\x1f{entry['id']}".encode()
    try:
        secret = master.decrypt(raw[:_NONCE], raw[_NONCE:], aad)
    except InvalidTag:
        msg = (
            f"The master key does not open the data key {entry['id']!r} of this keyring: a wrong key, or one rotated "
            "since this process opened it (reopen with the current key)."
        )
        raise EncryptionKeyError(msg) from None
    return DataKey(entry["id"], user_id, secret)


def _key_file(master: AESGCM, user_id: str, keys: list[DataKey]) -> bytes:
    """A user's key file: the data keys wrapped by the master key, bound to the user and each key's id."""
    wrapped = []
    for key in keys:
        nonce = secrets.token_bytes(_NONCE)
        aad = f"{user_id}\x1f{key.key_id}".encode()
        wrapped.append({"id": key.key_id, "wrapped": _b64(nonce + master.encrypt(nonce, key.secret, aad))})
    return json.dumps({"version": 1, "owner": user_id, "keys": wrapped}).encode()
