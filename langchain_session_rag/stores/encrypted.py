"""Encryption at rest for any memory back end: texts and content metadata sealed per user, vectors rotated.

:class:`EncryptedBackend` wraps a :class:`~langchain_session_rag.stores.base.MemoryBackend`. What it writes:

- the record's text, sealed (``srag1:KEY_ID:...``, AES-256-GCM under the user's data key);
- every string metadata value except the structural ones in :data:`PLAIN_KEYS`, sealed together in ``sealed``,
  and in its own key a blind index (a keyed digest), so equality filters (``session_id``, ``source_name``, a
  caller's tags) still run in the store; a range filter on such a key raises ``UnsupportedOperationError``;
- numbers and booleans (timestamps, counts, importance) as they are, and the vector turned by the user's secret
  rotation (see :mod:`langchain_session_rag.privacy.sealing` for what vectors leak and what this buys).

Reads decrypt, so the memory above (its replica included) sees plain records; a record whose key was destroyed
(its user forgotten) is dropped from what a read returns. Records stored before encryption was turned on are
returned as they are until re-encrypted (``session-rag keys encrypt``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from langchain_session_rag.errors import EncryptionKeyError, UnsupportedOperationError
from langchain_session_rag.privacy.keyring import (
    DataKey,
    Keyring,
)
from langchain_session_rag.privacy.sealing import (
    blind,
    is_sealed,
    key_id_of,
    rotate,
    rotate_rows,
    seal,
    unrotate,
    unseal,
)
from langchain_session_rag.stores.base import (
    CORE_MEMORY,
    REVISION_KEY,
    Capability,
    CompanionBackend,
    MemoryBackend,
    Probe,
    Record,
    RecordPage,
    Where,
)

logger = logging.getLogger(__name__)

CIPHER = "aes-256-gcm"
SEALED_KEY = "sealed"
"""Metadata key of a record's sealed metadata values (a JSON object, encrypted)."""
PLAIN_KEYS = frozenset(
    {"user_id", REVISION_KEY, "source_type", "chunking", "embedding_model", "segmentation", "worth", "llm_key",
     "source_digest", "timestamp"}
)  # fmt: skip
"""String metadata kept readable: scoping, structure and hashes, no user content (``timestamp``: the epoch twin is
stored as a number anyway)."""
_TEXT = "text"
_META = "metadata"


class EncryptedBackend:
    """A back end whose records are encrypted per user with keys from a :class:`Keyring` (see the module doc)."""

    def __init__(self, inner: MemoryBackend, keyring: Keyring, *, rotate_vectors: bool = True) -> None:
        """Wrap ``inner``; ``rotate_vectors=False`` stores vectors as the model gave them.

        Raises:
            UnsupportedOperationError: ``inner`` embeds texts itself (it would embed ciphertext).
        """
        if inner.embeds_itself:
            msg = (
                f"{type(inner).__name__} embeds texts itself: encrypted, it would embed ciphertext. Use a Chroma "
                "store (SessionVectorMemory.local/server) or a vector store given an embedding model."
            )
            raise UnsupportedOperationError(msg)
        self.inner = inner
        self.keyring = keyring
        self.rotate_vectors = rotate_vectors
        self.embeds_itself = False

    # -- delegated ---------------------------------------------------------------------------------
    @property
    def capabilities(self) -> frozenset[Capability]:
        """The wrapped store's capabilities."""
        return self.inner.capabilities

    @property
    def single_process(self) -> bool:
        """As the wrapped store."""
        return self.inner.single_process

    @property
    def process_key(self) -> str:
        """The wrapped store's key, marked: a plain and an encrypted view never share in-process state."""
        return f"{self.inner.process_key}|encrypted"

    def check_model(self, model_id: str, dimension: int | None, *, probe: Probe | None = None) -> None:
        """As the wrapped store (the probe vectors are of fixed public texts: nothing to seal)."""
        self.inner.check_model(model_id, dimension, probe=probe)

    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """As the wrapped store."""
        return self.inner.existing_ids(user_id, ids)

    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """As the wrapped store."""
        return self.inner.foreign_ids(user_id, ids)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """As the wrapped store."""
        self.inner.delete(user_id, ids)

    def all_ids(self, user_id: str) -> list[str]:
        """As the wrapped store."""
        return self.inner.all_ids(user_id)

    def change_log(self, user_id: str) -> set[str] | None:
        """As the wrapped store."""
        return self.inner.change_log(user_id)

    def changed_ids(self, user_id: str, entries: Sequence[str]) -> set[str] | None:
        """As the wrapped store."""
        return self.inner.changed_ids(user_id, entries)

    def listing(self, user_id: str) -> dict[str, str]:
        """As the wrapped store (fingerprints are revisions: nothing sealed is read)."""
        return self.inner.listing(user_id)

    def purge(self, user_id: str) -> int:
        """As the wrapped store."""
        return self.inner.purge(user_id)

    def compact(self) -> int:
        """As the wrapped store (it copies ciphertext as it is)."""
        return self.inner.compact()

    def users(self) -> dict[str, int]:
        """As the wrapped store."""
        return self.inner.users()

    def stores_beside(self) -> Sequence[MemoryBackend]:
        """As the wrapped store."""
        return self.inner.stores_beside()

    def companion(self, suffix: str) -> EncryptedCompanion:
        """The wrapped store's companion, encrypted with the same keyring."""
        return EncryptedCompanion(self.inner.companion(suffix), self.keyring, rotate_vectors=self.rotate_vectors)

    def rotate_master_key(self, new_master: bytes) -> int:
        """Wrap every data key under ``new_master`` and record its fingerprint; return how many users' keys.

        The data itself is not touched (its data keys are unchanged): a rotation takes a moment at any size. Every
        store sharing this keyring (a cache given the same ``keyring_dir``) opens with the new key from then on.
        """
        return self.keyring.rewrap(new_master)

    def reencrypt(self, user_id: str, *, also: Callable[[], object] | None = None) -> int:
        """Re-encrypt every record of the user (and their companion records) under a new data key; destroy the old.

        Records stored before encryption was turned on are encrypted too. ``also`` runs while both keys are held
        (``memory.service.reencrypt`` re-seals the user's day files there: call that one). Returns how many records
        were rewritten. Run it with no writer of the user at work: a record written meanwhile under the old key would
        be lost with it.
        """
        stores: list[EncryptedBackend] = [self]
        if CORE_MEMORY in self.capabilities:
            stores.append(self.companion("core"))
        plain = [(store, store.get(user_id, {}, with_embeddings=True)) for store in stores]
        self.keyring.add_key(user_id)
        for store, records in plain:
            for start in range(0, len(records), 500):
                store.add(user_id, records[start : start + 500])
        if also is not None:
            also()
        self.keyring.drop_old(user_id)
        return sum(len(records) for _, records in plain)

    # -- writing -----------------------------------------------------------------------------------
    def sealed(self, user_id: str, records: Sequence[Record]) -> list[Record]:
        """Copies of ``records`` as they are stored: text and content metadata sealed, vectors rotated."""
        key = self.keyring.current(user_id)
        out = []
        for record in records:
            meta: dict[str, Any] = {}
            hidden: dict[str, str] = {}
            for name, value in record.metadata.items():
                if isinstance(value, str) and name not in PLAIN_KEYS:
                    hidden[name] = value
                    meta[name] = blind(key, name, value)
                else:
                    meta[name] = value
            if hidden:
                meta[SEALED_KEY] = seal(key, json.dumps(hidden, sort_keys=True), _META)
            out.append(Record(record.id, seal(key, record.text, _TEXT), meta, record.embedding))
        rows = [n for n, r in enumerate(out) if r.embedding is not None]
        if rows and self.rotate_vectors:  # one product for the batch
            turned = rotate_rows(key, [out[n].embedding or [] for n in rows])
            for n, vector in zip(rows, turned, strict=True):
                out[n].embedding = vector
        return out

    def add(self, user_id: str, records: Sequence[Record]) -> None:
        """Store records of one user, encrypted."""
        stored = self.sealed(user_id, records)
        self.inner.add(user_id, stored)
        _copy_revisions(stored, records)

    # -- reading -----------------------------------------------------------------------------------
    def _keys(self, user_id: str) -> dict[str, DataKey]:
        """The user's keys by id, read once for a whole read (one look at the key file, not one per record)."""
        return {k.key_id: k for k in self.keyring.keys(user_id)}

    def opened(self, record: Record, keys: dict[str, DataKey]) -> Record | None:
        """The plain record of a stored one (its vector turned back); ``None`` when its data key was destroyed."""
        text, meta, vector = record.text, dict(record.metadata), record.embedding
        try:
            if is_sealed(text):
                key = keys.get(key_id_of(text))
                if key is None:
                    return None
                text = unseal(key, text, _TEXT)
                if vector is not None and self.rotate_vectors:
                    vector = unrotate(key, np.asarray(vector, dtype=np.float64)).tolist()
            hidden = meta.pop(SEALED_KEY, None)
            if is_sealed(hidden):
                key = keys.get(key_id_of(hidden))
                if key is None:
                    return None
                meta.update(json.loads(unseal(key, hidden, _META)))
        except EncryptionKeyError as exc:
            logger.warning("Record %s of a user was dropped from a read: %s", record.id, exc)
            return None
        return Record(record.id, text, meta, vector)

    def _plain_records(self, user_id: str, records: Sequence[Record]) -> list[Record]:
        keys = self._keys(user_id)
        return [opened for record in records if (opened := self.opened(record, keys)) is not None]

    def _page(self, user_id: str, page: RecordPage) -> RecordPage:
        """A page decrypted; its vectors (one array) turned back row by row with each record's own key."""
        keys = self._keys(user_id)
        kept = [(n, r) for n, rec in enumerate(page.records) if (r := self.opened(rec, keys)) is not None]
        vectors = page.vectors
        if vectors is None or not len(vectors):
            return RecordPage([r for _, r in kept], vectors)
        vectors = vectors[[n for n, _ in kept]]
        if self.rotate_vectors:
            ids = [key_id_of(page.records[n].text) if is_sealed(page.records[n].text) else "" for n, _ in kept]
            for key_id in set(ids) - {""}:  # each a key that opened its record's text (else it was dropped)
                rows_of_key = [i for i, k in enumerate(ids) if k == key_id]
                vectors[rows_of_key] = unrotate(keys[key_id], vectors[rows_of_key])
        return RecordPage([r for _, r in kept], vectors)

    def where(self, user_id: str, where: Where, listed: list[DataKey] | None = None) -> Where:
        """``where`` as the store holds the values: sealed keys' values as blind indexes.

        Raises:
            UnsupportedOperationError: A range condition on a text value of a sealed key.
        """
        keys = self.keyring.keys(user_id) if listed is None else listed
        if not keys or not where:
            return where
        out: Where = {}
        for name, cond in where.items():
            if name in PLAIN_KEYS or name.startswith("$"):
                out[name] = cond
            elif isinstance(cond, dict):
                out[name] = dict(_blinded(keys, name, op, arg) for op, arg in cond.items())
            elif isinstance(cond, str):
                out[name] = {"$in": [cond, *(blind(key, name, cond) for key in keys)]}
            else:
                out[name] = cond
        return out

    def query(
        self, user_id: str, query: str, vector: list[float] | None, k: int, where: Where
    ) -> list[tuple[Record, float]]:
        """Nearest records of the user (the query vector turned by the user's rotation), decrypted."""
        listed = self.keyring.keys(user_id)
        if vector is not None and self.rotate_vectors and listed:
            vector = rotate(listed[-1], vector)
        hits = self.inner.query(user_id, query, vector, k, self.where(user_id, where, listed))
        keys = {key.key_id: key for key in listed}
        return [(opened, score) for record, score in hits if (opened := self.opened(record, keys)) is not None]

    def get(self, user_id: str, where: Where, *, with_embeddings: bool = False) -> list[Record]:
        """Every record of the user matching ``where``, decrypted."""
        records = self.inner.get(user_id, self.where(user_id, where), with_embeddings=with_embeddings)
        return self._plain_records(user_id, records)

    def fetch(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> list[Record]:
        """The user's records among ``ids``, decrypted."""
        return self._plain_records(user_id, self.inner.fetch(user_id, ids, with_embeddings=with_embeddings))

    def pages(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> Iterator[RecordPage]:
        """The user's records among ``ids`` in pages, decrypted (a dropped record's vector row goes with it)."""
        for page in self.inner.pages(user_id, ids, with_embeddings=with_embeddings):
            yield self._page(user_id, page)

    def reembed(self, embed: Callable[[list[str]], list[list[float]]], model_id: str) -> int:
        """Re-embed every record with a new model: texts decrypted for the model, the new vectors rotated."""
        owners = {k.key_id: k for k in self.keyring.every_key()}

        def plain_embed(texts: list[str]) -> list[list[float]]:
            keys = [owners.get(key_id_of(t)) if is_sealed(t) else None for t in texts]
            plain = [unseal(k, t, _TEXT) if k is not None else t for k, t in zip(keys, texts, strict=True)]
            vectors = embed(plain)
            if not self.rotate_vectors:
                return vectors
            current = {k.owner: self.keyring.keys(k.owner)[-1] for k in keys if k is not None}
            return [rotate(current[k.owner], v) if k else v for k, v in zip(keys, vectors, strict=True)]

        return self.inner.reembed(plain_embed, model_id)


class EncryptedCompanion(EncryptedBackend):
    """An encrypted companion store (the core memory's)."""

    inner: CompanionBackend

    def insert_new(self, user_id: str, records: Sequence[Record]) -> None:
        """Store records whose ids are new, encrypted."""
        stored = self.sealed(user_id, records)
        self.inner.insert_new(user_id, stored)
        _copy_revisions(stored, records)


def _copy_revisions(stored: Sequence[Record], records: Sequence[Record]) -> None:
    """The store stamps the copies it was given; the caller's records get the same revisions."""
    for copy, record in zip(stored, records, strict=True):
        revision = copy.metadata.get(REVISION_KEY)
        if revision is not None:
            record.metadata[REVISION_KEY] = revision


_WIDER = {"$eq": "$in", "$ne": "$nin", "$in": "$in", "$nin": "$nin"}


def _blinded(keys: list[DataKey], name: str, op: str, arg: Any) -> tuple[str, Any]:
    """A condition on a sealed key as the store can test it: the value itself, or its blind index.

    Records stored before encryption was turned on hold the value itself; encrypted records, its blind index.
    """
    if op in _WIDER:
        values = list(arg) if isinstance(arg, list | tuple) else [arg]
        return _WIDER[op], [*values, *(blind(k, name, v) for k in keys for v in values if isinstance(v, str))]
    if any(isinstance(v, str) for v in (arg if isinstance(arg, list | tuple) else [arg])):
        msg = (
            f"The filter {{{name!r}: {{{op!r}: {arg!r}}}}} compares text, which an encrypted store holds sealed: "
            "only equality conditions ($eq, $ne, $in, $nin) run on sealed keys."
        )
        raise UnsupportedOperationError(msg)
    return op, arg
