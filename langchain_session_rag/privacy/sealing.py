"""Sealed values: text encrypted under a user's data key, keyed digests for filtering, and the vectors' rotation.

A sealed value is ``srag1:KEY_ID:BASE64`` (a random 96-bit nonce, then the AES-GCM ciphertext and tag), bound by
its associated data to the user and the field it belongs to: a ciphertext moved to another user or field does not
open. A blind index (``bi:...``) is an HMAC of a value under the user's index key: equal values give equal digests,
so an equality filter still works on the store, and nothing else about the value shows.

Vectors cannot be encrypted and still be searched. What they leak: embedding-inversion attacks recover much of a
short text from its vector (Morris et al., 2023, "Text Embeddings Reveal (Almost) As Much As Text"). The mitigation
offered keeps search exact: each user's vectors are multiplied by a secret random orthogonal matrix drawn from the
user's data key. Cosine similarity between two vectors of one user is unchanged, so the store's nearest-neighbour
search returns the same results; an inversion model trained on the public embedding model no longer applies to
the stored vectors as they are. Its limits: the rotation is a linear map, so anyone who holds a few hundred
(text, stored vector) pairs of one user can solve for it; distances between a user's own vectors still show
which of their memories are alike; it protects nothing in a process that holds the data key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from langchain_session_rag.errors import EncryptionKeyError

if TYPE_CHECKING:
    import numpy.typing as npt

    from langchain_session_rag.privacy.keyring import DataKey, Keyring

SEALED_PREFIX = "srag1:"
BLIND_PREFIX = "bi:"
_NONCE = 12


def is_sealed(value: object) -> bool:
    """Whether ``value`` is a sealed text."""
    return isinstance(value, str) and value.startswith(SEALED_PREFIX)


def key_id_of(value: str) -> str:
    """The id of the data key a sealed text was encrypted with."""
    return value[len(SEALED_PREFIX) :].split(":", 1)[0]


def seal(key: DataKey, text: str, field: str) -> str:
    """Encrypt ``text`` (a field of one of ``key.owner``'s records) under the user's data key."""
    nonce = secrets.token_bytes(_NONCE)
    aad = f"{key.owner}\x1f{field}".encode()
    body = nonce + key.cipher.encrypt(nonce, text.encode("utf-8", "surrogatepass"), aad)
    return f"{SEALED_PREFIX}{key.key_id}:{base64.b64encode(body).decode()}"


def unseal(key: DataKey, value: str, field: str) -> str:
    """Decrypt a sealed text of ``field``.

    Raises:
        EncryptionKeyError: The text was not sealed under ``key`` for this user and field (tampered, moved).
    """
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415 - cheap, and only on this path

    aad = f"{key.owner}\x1f{field}".encode()
    try:
        raw = base64.b64decode(value.rsplit(":", 1)[1], validate=True)
        return key.cipher.decrypt(raw[:_NONCE], raw[_NONCE:], aad).decode("utf-8", "surrogatepass")
    except (InvalidTag, ValueError):  # binascii.Error is a ValueError: a damaged value
        msg = f"A sealed {field!r} value does not open with its user's data key {key.key_id!r} (altered or moved)."
        raise EncryptionKeyError(msg) from None


def blind(key: DataKey, field: str, value: object) -> str:
    """The blind index of ``value`` in ``field``: equal for equal values of one user, meaningless otherwise."""
    digest = hmac.new(key.index_key, f"{field}\x1f{value}".encode("utf-8", "surrogatepass"), hashlib.sha256)
    return BLIND_PREFIX + base64.urlsafe_b64encode(digest.digest()[:18]).decode()


@lru_cache(maxsize=64)
def _rotation(seed: int, dimension: int) -> npt.NDArray[np.float64]:
    generator = np.random.Generator(np.random.PCG64(seed))
    q, r = np.linalg.qr(generator.standard_normal((dimension, dimension)))
    return q * np.sign(np.diag(r))  # a uniformly random orthogonal matrix (Mezzadri's sign fix)


def rotate(key: DataKey, vector: list[float]) -> list[float]:
    """The user's secret rotation of ``vector`` (cosine similarity between the user's vectors is unchanged)."""
    return rotate_rows(key, [vector])[0]


def rotate_rows(key: DataKey, vectors: list[list[float]]) -> list[list[float]]:
    """:func:`rotate` of many vectors of one dimension at once."""
    rows = np.asarray(vectors, dtype=np.float64)
    return (rows @ _rotation(key.rotation_seed, rows.shape[-1])).tolist()  # type: ignore[no-any-return]


def unrotate(key: DataKey, vectors: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Undo :func:`rotate` on rows of ``vectors`` (the stored vectors, read back for the in-process replica)."""
    matrix = _rotation(key.rotation_seed, vectors.shape[-1])
    if vectors.dtype == np.float32:  # the replica's float32 pages: one single-precision product
        return vectors @ matrix.T.astype(np.float32)
    return (vectors.astype(np.float64) @ matrix.T).astype(vectors.dtype)


@dataclass(frozen=True)
class UserCipher:
    """Seals and opens one user's texts outside the store (day files, exports) with the user's current key."""

    keyring: Keyring
    user_id: str

    def seal(self, text: str, field: str) -> str:
        """``text`` sealed under the user's current data key."""
        return seal(self.keyring.current(self.user_id), text, field)

    def open(self, value: str, field: str) -> str | None:
        """The plain text of a sealed ``value``; ``None`` when its key was destroyed (the user was forgotten).

        Raises:
            EncryptionKeyError: The value was altered, or sealed for another user or field.
        """
        key = self.keyring.find(self.user_id, key_id_of(value))
        return None if key is None else unseal(key, value, field)
