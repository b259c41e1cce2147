"""The default store: Chroma collections partitioned by user, with a manifest of the embedding model.

A store named ``NAME`` is a manifest collection ``NAME-manifest`` (which embedding model wrote the store, its
dimension, the shard count) and ``shards`` collections ``NAME-u00`` … each holding the chunks of the users whose
id hashes to it. Reads and writes name the user and filter on it; retrieval normally runs on the user's
in-process replica (:mod:`langchain_session_rag.memory.replica`), so the collections are the durable copy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_session_rag import _fork
from langchain_session_rag.errors import EmbeddingModelMismatchError, InvalidArgumentError, StoreLockedError
from langchain_session_rag.models import fingerprint
from langchain_session_rag.models.embeddings import mismatch_hint
from langchain_session_rag.stores import base as protocol
from langchain_session_rag.stores import change_log
from langchain_session_rag.stores.adapter import claim, client_location, is_embedded, persist_directory
from langchain_session_rag.stores.base import Capability, Probe, Record, RecordPage, Where, purge, shard_of
from langchain_session_rag.stores.chroma_calls import (
    files_guard,
    server_call,
    store_write,
    sweep_files,
)
from langchain_session_rag.stores.chroma_reads import PAGE, as_records, listing, read_pages, user_counts, user_ids
from langchain_session_rag.stores.filters import to_chroma_where
from langchain_session_rag.stores.migration import rebuild, recover, vacuum
from langchain_session_rag.stores.records import stamp

if TYPE_CHECKING:
    from chromadb import Collection
    from chromadb.api import ClientAPI

MANIFEST_VERSION = 1


_GENERATIONS: dict[str, int] = {}
"""Per store (process key): how often its collections were rebuilt in this process."""
_COMPANIONS: dict[str, ChromaBackend] = {}
"""Companion stores opened in this process, by their parent's process key and suffix."""


class ChromaBackend:
    """Chroma collections partitioned by user (or one given collection), with a model manifest."""

    embeds_itself = False
    _pid: int | None = None
    """The process that opened the store (``None`` while it opens)."""

    @server_call  # opening reads the manifest: a server that does not answer is a StoreUnavailableError
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
            raise InvalidArgumentError(msg)
        if shards < 1:
            msg = f"shards must be >= 1, got {shards!r}."
            raise InvalidArgumentError(msg)
        claim(client)  # an embedded store in a forked child is refused here
        self.client, self.name = client, name
        self._pid = os.getpid()
        self._single = collection
        self.files_guard = files_guard(client, collection)
        """Zeroes what Chroma writes from uninitialised memory into an embedded store's index files."""
        self._collections: dict[int, Collection] = {}
        self._fingerprinted: str | None = None
        """The model whose fingerprint this opening checked (or recorded)."""
        self._manifest = client.get_or_create_collection(
            f"{collection.name if collection is not None else name}-manifest",
            metadata={"store_version": MANIFEST_VERSION, "shards": 1 if collection is not None else shards},
        )
        meta = dict(self._manifest.metadata or {})
        self.shards = int(meta.get("shards", shards))
        self._generation = _GENERATIONS.get(self.process_key, 0)
        if meta.get("migration"):
            with self.guarded():
                recover(self)  # an interrupted re-embedding or compaction: finish or undo it first

    def in_this_process(self) -> None:
        """Before each call: in a forked child, refuse an embedded store, give a server's client its own connections.

        Raises:
            StoreLockedError: The store is embedded and was opened before this process was forked.
        """
        if self._pid in (None, os.getpid()):
            return
        if is_embedded(self.client):
            raise StoreLockedError(_fork.forked_message(persist_directory(self.client) or "", self._pid))
        claim(self.client)
        self._pid = os.getpid()

    @property
    def process_key(self) -> str:
        """Identifies this store among the stores a process opens (clients of one path share it)."""
        where = client_location(self.client)
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
        return is_embedded(self.client) and self._single is None

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Core memory, re-embedding, compaction and user listing; daily logs on an embedded store only."""
        local = {protocol.DAILY_LOGS} if is_embedded(self.client) else set()
        return frozenset({protocol.CORE_MEMORY, protocol.REEMBED, protocol.COMPACTION, protocol.USER_LISTING, *local})

    # -- manifest -------------------------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest: ``embedding_model``, ``embedding_dim``, ``shards``, ``store_version``."""
        return dict(self._manifest.metadata or {})

    def check_model(self, model_id: str, dimension: int | None, *, probe: Probe | None = None) -> None:
        """Record the model on first write; refuse a different one afterwards (by id, dimension and fingerprint).

        With ``probe``, the model's vectors for the fingerprint's probe texts are compared with those the store
        recorded (recorded now when it has none: a new store, or one made before fingerprints), once per opening.
        """
        meta = self.manifest
        stored_model = meta.get("embedding_model")
        stored_dim = int(meta.get("embedding_dim", -1))
        if stored_model is not None and stored_model != model_id:
            remedy = mismatch_hint(stored_model, model_id) or (
                "Open it with the model that wrote it, or re-embed it once with SessionVectorMemory.reembed("
                f"client_or_path, embeddings=<new model>, collection_name={self.name!r})."
            )
            msg = (
                f"Store {self.name!r} was written by embedding model {stored_model!r} (dimension {stored_dim}), "
                f"but {model_id!r} is in use: their vectors are incompatible. {remedy}"
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
            self.update_manifest(
                {"embedding_model": model_id, "embedding_dim": dimension if dimension is not None else stored_dim}
            )
        if probe is not None and self._fingerprinted != model_id:
            self._check_fingerprint(model_id, probe())
            self._fingerprinted = model_id

    def _check_fingerprint(self, model_id: str, vectors: list[list[float]]) -> None:
        recorded = str(self.manifest.get(fingerprint.MANIFEST_KEY) or "")
        found = fingerprint.agreement(recorded, vectors) if recorded else None
        if found is None:
            self.update_manifest({fingerprint.MANIFEST_KEY: fingerprint.encode(vectors)})
        elif found < fingerprint.TOLERANCE:
            msg = (
                f"Store {self.name!r} was written by a model named {model_id!r}, and the model in use has that "
                f"name but is another model: its vectors for the fixed probe texts differ from those the store "
                f"recorded (cosine {found:.3f}; the same model on any route gives at least {fingerprint.TOLERANCE}). "
                "Open it with the model that wrote it, or re-embed it once with SessionVectorMemory.reembed("
                f"client_or_path, embeddings=<new model>, collection_name={self.name!r}) under a new "
                "embedding_model_id."
            )
            raise EmbeddingModelMismatchError(msg)

    def set_model(self, model_id: str, dimension: int) -> None:
        """Overwrite the recorded model (after a re-embedding); its fingerprint is recorded on its first use."""
        self.update_manifest({"embedding_model": model_id, "embedding_dim": dimension, fingerprint.MANIFEST_KEY: ""})
        self._fingerprinted = None

    def update_manifest(self, values: dict[str, Any]) -> None:
        """Set manifest entries (scalars)."""
        meta = self.manifest
        meta.update(values)
        self._manifest.modify(metadata=meta)

    @property
    def persist_directory(self) -> str | None:
        """The folder of an embedded store (``None`` on a server)."""
        return persist_directory(self.client)

    @property
    def max_batch(self) -> int:
        """The client's largest write batch."""
        return max(1, self.client.get_max_batch_size())

    def collections_changed(self) -> None:
        """Forget cached collection handles here and in every backend of this store in the process."""
        key = self.process_key
        _GENERATIONS[key] = _GENERATIONS.get(key, 0) + 1
        self._forget_handles()

    def _forget_handles(self) -> None:
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
            self._forget_handles()
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

    def collection_names(self) -> set[str]:
        """The names of every collection on the client."""
        return {c.name for c in self.client.list_collections()}

    def all_collections(self) -> Iterator[Collection]:
        """Every data collection that exists (shards never written are skipped)."""
        if self._single is not None:
            yield self._single
            return
        existing = self.collection_names()
        for index in range(self.shards):
            if self.shard_name(index) in existing:
                yield self.client.get_collection(self.shard_name(index))

    @staticmethod
    def space_of(col: Collection) -> str:
        """The distance space of a collection."""
        config: Any = col.configuration or {}
        hnsw = config.get("hnsw") or {}
        space = hnsw.get("space") or (col.metadata or {}).get("hnsw:space") or "l2"
        return str(space)

    # -- data -----------------------------------------------------------------------------------
    @staticmethod
    def _scoped(user_id: str, where: Where) -> dict[str, Any]:
        return to_chroma_where({**where, "user_id": user_id})

    @staticmethod
    def _owners(col: Collection, ids: Sequence[str]) -> dict[str, object]:
        """Id → owning user of the records among ``ids`` stored in ``col`` (read by ids alone, in pages)."""
        owners = {}
        for start in range(0, len(ids), PAGE):
            got: Any = col.get(ids=list(ids[start : start + PAGE]), include=["metadatas"])
            owners.update(
                {i: (m or {}).get("user_id") for i, m in zip(got["ids"], got["metadatas"] or [], strict=False)}
            )
        return owners

    @server_call
    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for this user."""
        return {i for i, owner in self._owners(self._collection(user_id), ids).items() if owner == user_id}

    @server_call
    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for *another* user, in any shard: an id names one record in the whole store."""
        return {i for col in self.all_collections() for i, owner in self._owners(col, ids).items() if owner != user_id}

    def _changed(self, user_id: str, ids: Sequence[str]) -> None:
        """Log that the user's records ``ids`` changed (after the change landed): see :meth:`change_log`."""
        if self._single is None and not is_embedded(self.client):
            change_log.append(self._manifest, user_id, ids)

    @server_call
    def change_log(self, user_id: str) -> set[str] | None:
        """Ids of the user's change-log entries (see :mod:`~langchain_session_rag.stores.change_log`).

        ``None`` where no log is kept: a collection handed in by the caller, who may write to it directly, and
        embedded Chroma, which one process at a time opens (its replicas are kept current in process).
        """
        if self._single is not None or is_embedded(self.client):
            return None
        return change_log.entries(self._manifest, user_id)

    @server_call
    def changed_ids(self, user_id: str, entries: Sequence[str]) -> set[str] | None:  # noqa: ARG002 - protocol
        """The record ids the change-log ``entries`` name (``None``: list the user's revisions instead)."""
        return change_log.touched(self._manifest, entries)

    @server_call
    def listing(self, user_id: str) -> dict[str, str]:
        """Id → fingerprint (revision) of every record of the user: ids and metadata only, in pages."""
        return listing(self._collection(user_id), user_id)

    @server_call
    def pages(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> Iterator[RecordPage]:
        """The user's records among ``ids`` in pages of ``PAGE``, vectors as one float32 array per page."""
        source = read_pages(self._collection(user_id), user_id, ids, embeddings=with_embeddings)
        while True:  # each page read as one call of the index guard (the pages are read after this method returned)
            with self.guarded():
                page = next(source, None)
            if page is None:
                return
            yield page

    @store_write
    @server_call
    def add(self, user_id: str, records: Sequence[Record]) -> None:
        """Upsert records of one user in batches of the client's maximum size.

        A record replacing a stored one replaces its metadata whole: Chroma's upsert merges metadata, so keys the
        new record no longer has are sent as ``None`` (Chroma's way of deleting a key).
        """
        col = self._collection(user_id)
        stamp(records, keep=True)
        batch = self.max_batch
        for start in range(0, len(records), batch):
            part = records[start : start + batch]
            stored = col.get(ids=[r.id for r in part], include=["metadatas"])
            old_keys = {i: set(m or {}) for i, m in zip(stored["ids"], stored["metadatas"] or [], strict=False)}
            metadatas: Any = [
                {**dict.fromkeys(old_keys.get(r.id, set()) - set(r.metadata)), **r.metadata} for r in part
            ]
            vectors: Any = [r.embedding or [] for r in part]
            col.upsert(
                ids=[r.id for r in part], documents=[r.text for r in part], metadatas=metadatas, embeddings=vectors
            )
        self._changed(user_id, [r.id for r in records])

    @store_write
    @server_call
    def insert_new(self, user_id: str, records: Sequence[Record]) -> None:
        """Add records whose ids are not stored yet; an id already stored keeps its record (the first insert wins)."""
        col = self._collection(user_id)
        stamp(records, keep=True)
        vectors: Any = [r.embedding or [] for r in records]
        metadatas: Any = [r.metadata for r in records]
        col.add(
            ids=[r.id for r in records], documents=[r.text for r in records], metadatas=metadatas, embeddings=vectors
        )
        self._changed(user_id, [r.id for r in records])

    @server_call
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
            raise InvalidArgumentError(msg)
        col = self._collection(user_id)
        query_vectors: Any = [vector]
        res: Any = col.query(
            query_embeddings=query_vectors,
            n_results=k,
            where=self._scoped(user_id, where),
            include=["documents", "metadatas", "distances"],
        )
        scale = 0.5 if self.space_of(col) == "l2" else 1.0  # squared L2 of unit vectors is 2 - 2 cos; others 1 - cos
        return [
            (Record(id=i, text=t or "", metadata=dict(m or {})), 1.0 - float(d) * scale)
            for i, t, m, d in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]

    @server_call
    def get(self, user_id: str, where: Where, *, with_embeddings: bool = False) -> list[Record]:
        """Every record of the user matching ``where`` (ids first, then the records in bounded pages)."""
        col = self._collection(user_id)
        ids = user_ids(col, user_id, self._scoped(user_id, where))
        return as_records(read_pages(col, user_id, ids, embeddings=with_embeddings))

    @store_write
    @server_call
    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete the user's records among ``ids`` (others' records are never touched)."""
        owned = sorted(self.existing_ids(user_id, ids))
        col = self._collection(user_id)
        for start in range(0, len(owned), PAGE):
            col.delete(ids=owned[start : start + PAGE])
        if ids:
            self._changed(user_id, ids)

    @server_call
    def all_ids(self, user_id: str) -> list[str]:
        """Ids of every record of the user (an ids-only read)."""
        return user_ids(self._collection(user_id), user_id)

    @server_call
    def fetch(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> list[Record]:
        """The user's records among ``ids`` (read by ids in bounded pages)."""
        return as_records(read_pages(self._collection(user_id), user_id, ids, embeddings=with_embeddings))

    @store_write
    @server_call
    def purge(self, user_id: str) -> int:
        """Delete every record of the user; return how many."""
        return purge(self, user_id)

    @server_call
    def count(self) -> int:
        """Number of chunks in the whole store (all users)."""
        return sum(c.count() for c in self.all_collections())

    @server_call
    def users(self) -> dict[str, int]:
        """Every user of the store and how many chunks each has (reads every record's metadata: for statistics)."""
        return user_counts(self.all_collections(), self.max_batch)

    def reembed(self, embed: Callable[[list[str]], list[list[float]]], model_id: str) -> int:
        """Re-embed every chunk of every user with a new model; return how many were re-embedded.

        Crash-safe (copy, verify, switch; see :mod:`langchain_session_rag.stores.migration`): the old model keeps
        working until every copy is complete, and a run killed at any moment is repaired by the next open.
        """
        count = rebuild(self, embed=embed, model_id=model_id)
        self.sweep_index_files()
        return count

    def guarded(self) -> contextlib.AbstractContextManager[None]:
        """Run direct Chroma calls (a rebuild's steps) as one call of the index guard (no-op off an embedded store)."""
        return self.files_guard.using() if self.files_guard is not None else contextlib.nullcontext()

    def sweep_index_files(self) -> None:
        """Zero every index file's unused slots; remove deleted collections' index folders (see :func:`sweep_files`)."""
        sweep_files(self)

    def companion(self, suffix: str) -> ChromaBackend:
        """A store of its own next to this one (``NAME-SUFFIX``), on the same client: the core memory's."""
        key, base = f"{self.process_key}|{suffix}", self._single.name if self._single is not None else self.name
        if key not in _COMPANIONS:
            _COMPANIONS[key] = ChromaBackend(self.client, name=f"{base}-{suffix}", shards=1)
        return _COMPANIONS[key]

    def stores_beside(self) -> list[ChromaBackend]:
        """The other partitioned stores in an embedded store's folder (each has a manifest and shard collections)."""
        if self.persist_directory is None:
            return []
        names = self.collection_names()
        stores = {n.removesuffix("-manifest") for n in names if n.endswith("-manifest")}
        return [
            ChromaBackend(self.client, name=store)
            for store in sorted(stores)
            if store != self.name
            and not store.startswith(self.name + "-")  # the store's own companions are compacted with it
            and not self.name.startswith(store + "-")
            and any(n.startswith(store + "-u") and n[len(store) + 2 :].isdigit() for n in names)
        ]

    def compact(self) -> int:
        """Rebuild every collection from its live records, then vacuum an embedded store's files.

        Deleted records stay in Chroma's write-ahead log and in SQLite's free pages until then: after
        ``compact()`` a byte scan of the folder finds none of them. Returns the number of records kept.
        Companion stores (the core memory) are rebuilt too.
        """
        base = self._single.name if self._single is not None else self.name
        names = self.collection_names()
        for suffix in sorted({n[len(base) + 1 : -len("-manifest")] for n in names if n.startswith(base + "-")}):
            if suffix and f"{base}-{suffix}-manifest" in names and not suffix.startswith("u"):
                rebuild(self.companion(suffix))  # a companion opened by another process counts too
        kept = rebuild(self)
        path = self.persist_directory
        if path is not None:
            vacuum(path)
        self.sweep_index_files()
        return kept
