"""What a memory store is: the stored record, the back-end protocol every store implements, and the shard rule."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

REVISION_KEY = "store_revision"
"""Metadata key holding a record's revision: a new random value on every write of the record."""

Capability = str
"""A feature a back end declares in :attr:`MemoryBackend.capabilities` (one of the constants below)."""
CORE_MEMORY: Final[Capability] = "core_memory"
"""Companion stores next to the memories (:meth:`MemoryBackend.companion`): pinned core memory lives there."""
REEMBED: Final[Capability] = "reembed"
"""The whole store can be re-embedded with another model from its stored texts (:meth:`MemoryBackend.reembed`)."""
DAILY_LOGS: Final[Capability] = "daily_logs"
"""Every writer runs on this machine, so a raw daily log kept in a local folder sees every message."""
COMPACTION: Final[Capability] = "compaction"
"""Forgotten records can be erased from the store's files (:meth:`MemoryBackend.compact`)."""
USER_LISTING: Final[Capability] = "user_listing"
"""The store can list its users with their chunk counts (:meth:`MemoryBackend.users`)."""

Where = dict[str, Any]
"""Equality / range conditions: ``{"key": value}`` or ``{"key": {"$in" | "$nin" | "$gte" | "$lte": v}}``."""


@dataclass
class Record:
    """A stored chunk."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: list[float] | None = None


@dataclass
class RecordPage:
    """One bounded page of a user's records, their vectors (if asked for) as one array, row ``n`` for record ``n``."""

    records: list[Record]
    vectors: npt.NDArray[np.floating[Any]] | None = None


def fingerprint(metadata: dict[str, Any]) -> str:
    """What tells two versions of a record apart without reading its text: its revision, else its metadata.

    Every write through this package stamps a new ``REVISION_KEY``; a record stored by an older version has
    none, and its metadata (which an edit through this package always changes, by adding the revision) stands in.
    """
    revision = metadata.get(REVISION_KEY)
    if isinstance(revision, str) and revision:
        return revision
    raw = json.dumps(metadata, sort_keys=True, default=str)
    return "m" + hashlib.sha256(raw.encode()).hexdigest()[:24]


def shard_of(user_id: str, shards: int) -> int:
    """Return the shard index of a user (stable across processes and versions)."""
    return int(hashlib.sha256(user_id.encode()).hexdigest()[:8], 16) % shards


Probe = Callable[[], list[list[float]]]
"""The model's vectors for the fingerprint's probe texts (called only when a store needs them)."""


class MemoryBackend(Protocol):
    """What :class:`~langchain_session_rag.SessionVectorMemory` needs from a store.

    Every method takes the ``user_id`` it acts for; implementations touch nothing else.
    """

    embeds_itself: bool
    """True when the store embeds texts itself (``add`` then ignores ``embeddings``)."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What the store can do beyond the required methods (``CORE_MEMORY``, ``REEMBED``, ``DAILY_LOGS``, ...).

        Callers test these instead of the back end's class; a method whose capability is missing raises
        :class:`~langchain_session_rag.errors.UnsupportedOperationError`.
        """

    @property
    def single_process(self) -> bool:
        """Whether every write to the store comes through this process (so in-process state can be trusted)."""

    @property
    def process_key(self) -> str:
        """Identifies the store within this process."""

    def check_model(self, model_id: str, dimension: int | None, *, probe: Probe | None = None) -> None:
        """Raise :class:`EmbeddingModelMismatchError` if the store was written by another model.

        ``probe`` gives the model's vectors for the probe texts of :mod:`~langchain_session_rag.models.fingerprint`:
        a store that records fingerprints compares them with its record (recording them when it has none).
        """

    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Return which of ``ids`` are stored."""

    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Return which of ``ids`` are stored for another user (an import must never overwrite them)."""

    def add(self, user_id: str, records: Sequence[Record]) -> None:
        """Store records (their ``embedding`` set unless ``embeds_itself``)."""

    def query(
        self, user_id: str, query: str, vector: list[float] | None, k: int, where: Where
    ) -> list[tuple[Record, float]]:
        """Return up to ``k`` records of the user matching ``where``, with cosine similarity."""

    def get(self, user_id: str, where: Where, *, with_embeddings: bool = False) -> list[Record]:
        """Return every record of the user that matches ``where``."""

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete records of the user."""

    def all_ids(self, user_id: str) -> list[str]:
        """Ids of every record of the user (raises UnsupportedOperationError if the store cannot list)."""

    def fetch(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> list[Record]:
        """The user's records among ``ids``."""

    def change_log(self, user_id: str) -> set[str] | None:
        """Ids of the user's change-log entries, one per write through this package (an ids-only read).

        ``None`` when the store keeps none (other code may write to it, or one process owns it).
        """

    def changed_ids(self, user_id: str, entries: Sequence[str]) -> set[str] | None:
        """The record ids the change-log ``entries`` name; ``None`` when unknown (list the user instead)."""

    def listing(self, user_id: str) -> dict[str, str]:
        """Id → :func:`fingerprint` of every record of the user (a metadata-only read, in bounded pages)."""

    def pages(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> Iterator[RecordPage]:
        """The user's records among ``ids``, in pages of bounded size (so memory and SQL variables stay bounded)."""

    def purge(self, user_id: str) -> int:
        """Delete every record of the user; return how many."""

    def compact(self) -> int:
        """Erase deleted records from the store's files (every user); return how many records are kept.

        Raises UnsupportedOperationError when the store cannot do it.
        """

    def reembed(self, embed: Callable[[list[str]], list[list[float]]], model_id: str) -> int:
        """Re-embed every record of every user with a new model; return how many.

        Raises UnsupportedOperationError when the store cannot do it.
        """

    def companion(self, suffix: str) -> CompanionBackend:
        """A store of its own next to this one (``CORE_MEMORY``: the core memory's); else UnsupportedOperationError."""

    def users(self) -> dict[str, int]:
        """Every user of the store and their chunk counts (``USER_LISTING``); else UnsupportedOperationError."""

    def stores_beside(self) -> Sequence[MemoryBackend]:
        """Other stores sharing this one's files (compacted with it); empty when there are none."""


class CompanionBackend(MemoryBackend, Protocol):
    """A companion store (``MemoryBackend.companion``): it can also insert a record only if its id is new."""

    def insert_new(self, user_id: str, records: Sequence[Record]) -> None:
        """Store records whose ids are not stored yet (a stored id keeps its record)."""


def purge(backend: MemoryBackend, user_id: str) -> int:
    """Delete every record of ``user_id`` through ``backend`` (ids first, so the count is exact)."""
    ids = backend.all_ids(user_id)
    backend.delete(user_id, ids)
    return len(ids)


def decode_message_ids(value: Any) -> list[str]:
    """Decode ``message_ids`` from whatever the store returned (JSON text, list, comma text)."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    text = str(value)
    if text.startswith("["):
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, list):
            return [str(v) for v in decoded]
    return [part for part in text.split(",") if part]
