"""Vector-store back ends: user-partitioned Chroma collections, and any LangChain ``VectorStore``.

Chroma layout (the default): a store named ``NAME`` is a manifest collection ``NAME-manifest``
(which embedding model wrote the store, its dimension, the shard count) and ``shards`` collections
``NAME-u00`` … each holding the chunks of the users whose id hashes to it. A scoped search reads
one shard with a ``user_id`` filter: at 100k chunks that costs a few milliseconds, where one big
collection with a ``where`` filter costs about 60 ms, and one collection per user does not scale to
thousands of users in one process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from langchain_session_rag.errors import (
    EmbeddingModelMismatchError,
    InvalidStorePathError,
    StoreLockedError,
    StoreUnavailableError,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

__all__ = [
    "ChromaBackend",
    "MemoryBackend",
    "Record",
    "Where",
    "decode_message_ids",
    "lock_embedded_store",
    "matches",
    "open_chroma_client",
    "shard_of",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")
Where = dict[str, Any]
"""Equality / range conditions: ``{"key": value}`` or ``{"key": {"$in" | "$nin" | "$gte" | "$lte": v}}``."""

MANIFEST_VERSION = 1


@dataclass
class Record:
    """A stored chunk."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: list[float] | None = None


def shard_of(user_id: str, shards: int) -> int:
    """Return the shard index of a user (stable across processes and versions)."""
    return int(hashlib.sha256(user_id.encode()).hexdigest()[:8], 16) % shards


def _defined(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda value, arg: value is not None and test(value, arg)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$in": lambda value, arg: value in arg,
    "$nin": lambda value, arg: value not in arg,
    "$gte": _defined(operator.ge),
    "$lte": _defined(operator.le),
    "$gt": _defined(operator.gt),
    "$lt": _defined(operator.lt),
}


def matches(metadata: dict[str, Any], where: Where) -> bool:
    """Check a metadata dict against conditions in memory (the fail-closed post-filter)."""
    for key, cond in where.items():
        value = metadata.get(key)
        if isinstance(cond, dict):
            if not all(_OPS[op](value, arg) for op, arg in cond.items()):
                return False
        elif value != cond:
            return False
    return True


def to_chroma_where(where: Where) -> dict[str, Any]:
    """Turn flat conditions into Chroma's ``where`` syntax (``$and`` of single-key clauses)."""
    clauses: list[dict[str, Any]] = []
    for key, cond in where.items():
        if isinstance(cond, dict):
            clauses.extend({key: {op: arg}} for op, arg in cond.items())
        else:
            clauses.append({key: cond})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


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
    except (FileExistsError, NotADirectoryError, PermissionError) as exc:
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


def open_chroma_client(
    path: str | os.PathLike[str] | None = None, host: str | None = None, port: int = 8000
) -> ClientAPI:
    """A chromadb client: a server when ``host`` is given, else an embedded store in ``path``.

    An embedded store is locked to this process (see :func:`lock_embedded_store`).
    """
    import chromadb  # noqa: PLC0415 - chromadb is slow to import; only when a store is opened
    from chromadb.config import Settings  # noqa: PLC0415

    settings = Settings(anonymized_telemetry=False)
    if host is not None:
        try:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        except (ValueError, OSError) as exc:
            if not _is_connection_error(exc):
                raise
            msg = f"No Chroma server answers at {host}:{port} (start one with `chroma run --port {port}`): {exc}"
            raise StoreUnavailableError(msg) from exc
    if path is None:
        msg = "An embedded store needs a path (or give host= for a Chroma server)."
        raise InvalidStorePathError(msg)
    lock_embedded_store(path)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class MemoryBackend(Protocol):
    """What :class:`~langchain_session_rag.SessionVectorMemory` needs from a store.

    Every method takes the ``user_id`` it acts for; implementations touch nothing else.
    """

    embeds_itself: bool

    @property
    def single_process(self) -> bool:
        """Whether every write to the store comes through this process (so in-process state can be trusted)."""
        ...

    @property
    def process_key(self) -> str:
        """Identifies the store within this process."""
        ...

    """True when the store embeds texts itself (``add`` then ignores ``embeddings``)."""

    def check_model(self, model_id: str, dimension: int | None) -> None:
        """Raise :class:`EmbeddingModelMismatchError` if the store was written by another model."""

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

    def purge(self, user_id: str) -> int:
        """Delete every record of the user; return how many."""


def purge(backend: MemoryBackend, user_id: str) -> int:
    """Delete every record of ``user_id`` through ``backend`` (ids first, so the count is exact)."""
    ids = backend.all_ids(user_id)
    backend.delete(user_id, ids)
    return len(ids)


# ---------------------------------------------------------------------------------------------
# Chroma


def _distance_to_similarity(space: str) -> Callable[[float], float]:
    if space == "l2":  # squared L2 of unit vectors: 2 - 2 cos
        return lambda d: 1.0 - d / 2.0
    return lambda d: 1.0 - d  # cosine and inner product (of unit vectors)


def _is_connection_error(exc: BaseException) -> bool:
    """Whether an exception means the server did not answer (httpx transport errors, refused connections)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    transport = {"TransportError", "ConnectError", "ReadError", "WriteError", "RemoteProtocolError", "TimeoutException"}
    return bool(names & transport) or isinstance(exc, ConnectionError) or "Could not connect" in str(exc)


def _server_call(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn a lost server connection into :class:`StoreUnavailableError` (typed, retryable)."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            if isinstance(exc, StoreUnavailableError) or not _is_connection_error(exc):
                raise
            name = getattr(args[0], "name", "?") if args else "?"
            msg = f"The Chroma server of store {name!r} did not answer ({type(exc).__name__}: {exc}); retry later."
            raise StoreUnavailableError(msg) from exc

    return call


_GENERATIONS: dict[str, int] = {}
"""Per store (process key): how often its collections were rebuilt in this process."""


class ChromaBackend:
    """Chroma collections partitioned by user (or one given collection), with a model manifest."""

    embeds_itself = False

    def __init__(
        self,
        client: ClientAPI,
        *,
        name: str = "session_memory",
        shards: int = 32,
        collection: Collection | None = None,
    ) -> None:
        """Open (or create lazily) a partitioned store.

        Args:
            client: A chromadb client (``PersistentClient``, ``HttpClient``, ...).
            name: The store name; collections are ``{name}-manifest`` and ``{name}-uNN``.
            shards: Shard count for a new store; an existing store keeps its own.
            collection: Use this single collection instead of shards (e.g. a ``langchain_chroma.Chroma``'s).
        """
        if not 3 <= len(name) <= 500:  # noqa: PLR2004 - Chroma's collection name limits, minus suffixes
            msg = f"Store name must be 3-500 characters, got {name!r}."
            raise ValueError(msg)
        if shards < 1:
            msg = f"shards must be >= 1, got {shards!r}."
            raise ValueError(msg)
        self.client = client
        self.name = name
        self._single = collection
        self._collections: dict[int, Collection] = {}
        self._manifest = client.get_or_create_collection(
            f"{collection.name if collection is not None else name}-manifest",
            metadata={"store_version": MANIFEST_VERSION, "shards": 1 if collection is not None else shards},
        )
        meta = dict(self._manifest.metadata or {})
        self.shards = int(meta.get("shards", shards))
        self._generation = _GENERATIONS.get(self.process_key, 0)
        if meta.get("migration"):
            from langchain_session_rag.migration import recover  # noqa: PLC0415 - migration imports this module

            recover(self)  # an interrupted re-embedding or compaction: finish or undo it first

    @property
    def process_key(self) -> str:
        """Identifies this store among the stores a process opens (clients of one path share it)."""
        settings = self.client.get_settings()
        where = (
            getattr(self.client, "_identifier", None)
            or f"{settings.chroma_server_host}:{settings.chroma_server_http_port}"
        )
        tenant = getattr(self.client, "tenant", "")
        database = getattr(self.client, "database", "")
        target = f"collection:{self._single.id}" if self._single is not None else f"store:{self.name}"
        return f"chroma|{where}|{tenant}|{database}|{target}"

    @property
    def single_process(self) -> bool:
        """Whether this store's writes all come through this memory code in this process.

        True for the sharded collections on embedded Chroma, which is not process-safe. False on a Chroma
        server (``HttpClient``), which serves many processes, and for a collection handed in by the caller
        (a ``langchain_chroma.Chroma``), which the caller may also write to directly.
        """
        embedded = "fastapi" not in str(self.client.get_settings().chroma_api_impl).lower()
        return embedded and self._single is None

    # -- manifest -------------------------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest: ``embedding_model``, ``embedding_dim``, ``shards``, ``store_version``."""
        return dict(self._manifest.metadata or {})

    def check_model(self, model_id: str, dimension: int | None) -> None:
        """Record the model on first write; refuse a different one afterwards."""
        meta = self.manifest
        stored_model = meta.get("embedding_model")
        stored_dim = int(meta.get("embedding_dim", -1))
        if stored_model is not None and stored_model != model_id:
            msg = (
                f"Store {self.name!r} was written by embedding model {stored_model!r} "
                f"(dimension {stored_dim}), but {model_id!r} is in use: their vectors are incompatible. "
                f"Open it with the model that wrote it, or re-embed it once with "
                f"SessionVectorMemory.reembed(client_or_path, embeddings=<new model>, collection_name={self.name!r})."
            )
            raise EmbeddingModelMismatchError(msg)
        if dimension is not None and stored_dim not in (-1, dimension):
            msg = (
                f"Store {self.name!r} holds {stored_dim}-dimensional vectors from {stored_model!r}, "
                f"but the model in use returned {dimension} dimensions. Re-embed the store with "
                f"SessionVectorMemory.reembed(...) or use the original model."
            )
            raise EmbeddingModelMismatchError(msg)
        if stored_model is None or (dimension is not None and stored_dim == -1):
            meta.update(
                {"embedding_model": model_id, "embedding_dim": dimension if dimension is not None else stored_dim}
            )
            self._manifest.modify(metadata=meta)

    def set_model(self, model_id: str, dimension: int) -> None:
        """Overwrite the recorded model (after a re-embedding)."""
        self.update_manifest({"embedding_model": model_id, "embedding_dim": dimension})

    def update_manifest(self, values: dict[str, Any]) -> None:
        """Set manifest entries (scalars)."""
        meta = self.manifest
        meta.update(values)
        self._manifest.modify(metadata=meta)

    @property
    def persist_directory(self) -> str | None:
        """The folder of an embedded store (``None`` on a server)."""
        settings = self.client.get_settings()
        embedded = "fastapi" not in str(settings.chroma_api_impl).lower()
        return str(settings.persist_directory) if embedded and settings.is_persistent else None

    @property
    def max_batch(self) -> int:
        """The client's largest write batch."""
        return max(1, self.client.get_max_batch_size())

    def space_of(self, col: Collection) -> str:
        """The distance space of a collection."""
        return self._space(col)

    def collections_changed(self) -> None:
        """Forget cached collection handles here and in every backend of this store in the process."""
        key = self.process_key
        _GENERATIONS[key] = _GENERATIONS.get(key, 0) + 1
        self._collections.clear()
        if self._single is not None:
            self._single = self.client.get_collection(self._single.name)

    # -- collections ----------------------------------------------------------------------------
    def shard_name(self, index: int) -> str:
        """The collection name of a shard."""
        return f"{self.name}-u{index:02d}"

    def _collection(self, user_id: str) -> Collection:
        generation = _GENERATIONS.get(self.process_key, 0)
        if generation != self._generation:  # another backend rebuilt the store's collections
            self._generation = generation
            self._collections.clear()
            if self._single is not None:
                self._single = self.client.get_collection(self._single.name)
        if self._single is not None:
            return self._single
        index = shard_of(user_id, self.shards)
        col = self._collections.get(index)
        if col is None:
            col = self.client.get_or_create_collection(
                self.shard_name(index), configuration={"hnsw": {"space": "cosine"}}
            )
            self._collections[index] = col
        return col

    def all_collections(self) -> Iterator[Collection]:
        """Every data collection that exists (shards never written are skipped)."""
        if self._single is not None:
            yield self._single
            return
        existing = {c.name if hasattr(c, "name") else str(c) for c in self.client.list_collections()}
        for index in range(self.shards):
            if self.shard_name(index) in existing:
                yield self.client.get_collection(self.shard_name(index))

    @staticmethod
    def _space(col: Collection) -> str:
        config: Any = col.configuration or {}
        hnsw = config.get("hnsw") or {}
        space = hnsw.get("space") or (col.metadata or {}).get("hnsw:space") or "l2"
        return str(space)

    # -- data -----------------------------------------------------------------------------------
    @staticmethod
    def _scoped(user_id: str, where: Where) -> dict[str, Any]:
        return to_chroma_where({**where, "user_id": user_id})

    @_server_call
    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for this user."""
        if not ids:
            return set()
        got = self._collection(user_id).get(ids=list(ids), where={"user_id": user_id}, include=[])
        return set(got["ids"])

    @_server_call
    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for *another* user of the same collection."""
        if not ids:
            return set()
        not_mine: Any = {"user_id": {"$ne": user_id}}
        got = self._collection(user_id).get(ids=list(ids), where=not_mine, include=[])
        return set(got["ids"])

    @_server_call
    def add(self, user_id: str, records: Sequence[Record]) -> None:
        """Upsert records of one user in batches of the client's maximum size."""
        col = self._collection(user_id)
        batch = max(1, self.client.get_max_batch_size())
        for start in range(0, len(records), batch):
            part = records[start : start + batch]
            vectors: Any = [r.embedding or [] for r in part]
            col.upsert(
                ids=[r.id for r in part],
                documents=[r.text for r in part],
                metadatas=[r.metadata for r in part],
                embeddings=vectors,
            )

    @_server_call
    def query(
        self,
        user_id: str,
        query: str,  # noqa: ARG002 - part of the MemoryBackend protocol
        vector: list[float] | None,
        k: int,
        where: Where,
    ) -> list[tuple[Record, float]]:
        """Nearest records of the user, with cosine similarity."""
        if vector is None:
            msg = "ChromaBackend.query needs a query vector."
            raise ValueError(msg)
        col = self._collection(user_id)
        query_vectors: Any = [vector]
        res: Any = col.query(
            query_embeddings=query_vectors,
            n_results=k,
            where=self._scoped(user_id, where),
            include=["documents", "metadatas", "distances"],
        )
        to_sim = _distance_to_similarity(self._space(col))
        return [
            (Record(id=i, text=t or "", metadata=dict(m or {})), to_sim(float(d)))
            for i, t, m, d in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]

    @_server_call
    def get(self, user_id: str, where: Where, *, with_embeddings: bool = False) -> list[Record]:
        """Every record of the user matching ``where``."""
        include: Any = ["documents", "metadatas", "embeddings"] if with_embeddings else ["documents", "metadatas"]
        res: Any = self._collection(user_id).get(where=self._scoped(user_id, where), include=include)
        return self._records(res, with_embeddings=with_embeddings)

    @_server_call
    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete the user's records among ``ids`` (others' records are never touched)."""
        if ids:
            self._collection(user_id).delete(ids=list(ids), where={"user_id": user_id})

    @_server_call
    def all_ids(self, user_id: str) -> list[str]:
        """Ids of every record of the user (an ids-only read)."""
        return list(self._collection(user_id).get(where={"user_id": user_id}, include=[])["ids"])

    @_server_call
    def fetch(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> list[Record]:
        """The user's records among ``ids``."""
        if not ids:
            return []
        include: Any = ["documents", "metadatas", "embeddings"] if with_embeddings else ["documents", "metadatas"]
        res: Any = self._collection(user_id).get(ids=list(ids), where={"user_id": user_id}, include=include)
        return self._records(res, with_embeddings=with_embeddings)

    @staticmethod
    def _records(res: Any, *, with_embeddings: bool) -> list[Record]:
        embeddings = res.get("embeddings") if with_embeddings else None
        return [
            Record(
                id=res["ids"][n],
                text=res["documents"][n] or "",
                metadata=dict(res["metadatas"][n] or {}),
                embedding=_floats(embeddings[n]) if embeddings is not None else None,
            )
            for n in range(len(res["ids"]))
        ]

    @_server_call
    def purge(self, user_id: str) -> int:
        """Delete every record of the user; return how many."""
        return purge(self, user_id)

    @_server_call
    def count(self) -> int:
        """Number of chunks in the whole store (all users)."""
        return sum(c.count() for c in self.all_collections())

    def reembed(self, embed: Callable[[list[str]], list[list[float]]], model_id: str) -> int:
        """Re-embed every chunk of every user with a new model; return how many were re-embedded.

        Crash-safe (copy, verify, switch; see :mod:`langchain_session_rag.migration`): the old model keeps
        working until every copy is complete, and a run killed at any moment is repaired by the next open.
        """
        from langchain_session_rag.migration import rebuild  # noqa: PLC0415 - migration imports this module

        return rebuild(self, embed=embed, model_id=model_id)

    def compact(self) -> int:
        """Rebuild every collection from its live records, then vacuum an embedded store's files.

        Deleted records stay in Chroma's write-ahead log and in SQLite's free pages until then: after
        ``compact()`` a byte scan of the folder finds none of them. Returns the number of records kept.
        """
        from langchain_session_rag.migration import rebuild, vacuum  # noqa: PLC0415

        kept = rebuild(self)
        path = self.persist_directory
        if path is not None:
            vacuum(path)
        return kept


def _floats(vector: Any) -> list[float]:
    """A stored vector as a list of floats (numpy rows convert in C)."""
    return vector.tolist() if hasattr(vector, "tolist") else [float(x) for x in vector]


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
