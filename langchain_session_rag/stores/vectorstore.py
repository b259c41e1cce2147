"""The back end for any LangChain ``VectorStore`` (the store embeds texts itself)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_session_rag.errors import EmbeddingModelMismatchError, InvalidArgumentError, UnsupportedOperationError
from langchain_session_rag.models.embeddings import mismatch_hint
from langchain_session_rag.stores.adapter import chroma_collection_of
from langchain_session_rag.stores.base import (
    DAILY_LOGS,
    Capability,
    CompanionBackend,
    MemoryBackend,
    Probe,
    Record,
    RecordPage,
    Where,
    fingerprint,
    purge,
)
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.filters import matches


class VectorStoreBackend:
    """Any LangChain ``VectorStore``: the store embeds texts itself.

    Scoping: a ``filter`` on ``user_id`` is passed to the store as a speed hint (a callable for
    ``InMemoryVectorStore``, ``{"user_id": ...}`` otherwise), and every result is checked again
    here, so a store that ignores the filter can return fewer results but never another user's.
    Listing (``forget`` by session or date, export) works for stores that expose their records
    (Chroma, ``InMemoryVectorStore``); others support ``forget(ids=...)`` only.
    """

    embeds_itself = True

    def __init__(self, vectorstore: VectorStore, *, fetch_factor: int = 4) -> None:
        """Wrap a vector store; ``fetch_factor`` over-fetches to survive the post-filter."""
        self.vectorstore = vectorstore
        self.fetch_factor = fetch_factor

    @property
    def process_key(self) -> str:
        """Identifies the wrapped store object within this process."""
        return f"vectorstore|{id(self.vectorstore)}"

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Daily logs only: no companion stores, and no re-embedding, compaction or user listing through the API."""
        return frozenset({DAILY_LOGS})

    @property
    def single_process(self) -> bool:
        """``False``: other code may write to a LangChain vector store directly, so it is listed before each use."""
        return False

    def check_model(self, model_id: str, dimension: int | None, *, probe: Probe | None = None) -> None:  # noqa: ARG002
        """Refuse when stored chunks name another embedding model (checked on a sample).

        A LangChain vector store has no manifest to keep a fingerprint in: ``probe`` is not used (the model's
        identity is its id alone).
        """
        for record in self._all()[:1] if self._listable() else []:
            stored = record.metadata.get("embedding_model")
            if stored and stored != model_id:
                msg = (
                    f"This vector store holds chunks written by embedding model {stored!r}, but {model_id!r} "
                    "is in use: their vectors are incompatible. "
                    + (mismatch_hint(stored, model_id) or "Use the original model or re-embed the store.")
                )
                raise EmbeddingModelMismatchError(msg)

    def _listable(self) -> bool:
        return isinstance(getattr(self.vectorstore, "store", None), dict)

    def _all(self) -> list[Record]:
        if not self._listable():
            msg = (
                f"{type(self.vectorstore).__name__} cannot list its records, which this operation needs. "
                "Use forget(ids=...), or a Chroma store (SessionVectorMemory.local / .server)."
            )
            raise UnsupportedOperationError(msg)
        store: dict[str, dict[str, Any]] = self.vectorstore.store  # type: ignore[attr-defined]
        return [
            Record(
                id=key, text=str(v.get("text", "")), metadata=dict(v.get("metadata") or {}), embedding=v.get("vector")
            )
            for key, v in store.items()
        ]

    def _filter(self, user_id: str) -> Any:
        if self._listable():
            return lambda doc: doc.metadata.get("user_id") == user_id
        return {"user_id": user_id}

    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for another user.

        Raises:
            UnsupportedOperationError: The store cannot look ids up, so foreign ids cannot be ruled out.
        """
        try:
            owners = self._owners(ids)
        except NotImplementedError as exc:
            msg = (
                f"{type(self.vectorstore).__name__} cannot look ids up, so an import cannot check that no id "
                "belongs to another user; import into a Chroma store instead."
            )
            raise UnsupportedOperationError(msg) from exc
        return {i for i, owner in owners.items() if owner != user_id}

    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Ids among ``ids`` stored for this user."""
        try:
            owners = self._owners(ids)
        except NotImplementedError:  # the store cannot look ids up; adds then rely on its upsert
            return set()
        return {i for i, owner in owners.items() if owner == user_id}

    def _owners(self, ids: Sequence[str]) -> dict[str, object]:
        """Id → owning user of the records among ``ids`` (``NotImplementedError``: the store cannot look ids up)."""
        found = self.vectorstore.get_by_ids(list(ids)) if ids else []
        return {d.id: d.metadata.get("user_id") for d in found if d.id is not None}

    def add(self, user_id: str, records: Sequence[Record]) -> None:
        """Add records; the store embeds each text once."""
        if any(r.metadata.get("user_id") != user_id for r in records):
            msg = "Refusing to store a record whose user_id differs from the memory's user."
            raise InvalidArgumentError(msg)
        self.vectorstore.add_documents(
            [Document(page_content=r.text, metadata=r.metadata, id=r.id) for r in records], ids=[r.id for r in records]
        )

    def query(
        self,
        user_id: str,
        query: str,
        vector: list[float] | None,  # noqa: ARG002 - part of the MemoryBackend protocol
        k: int,
        where: Where,
    ) -> list[tuple[Record, float]]:
        """Nearest records of the user (post-filtered), with the store's relevance score."""
        scoped = {**where, "user_id": user_id}
        n, filt = k * self.fetch_factor, self._filter(user_id)
        try:
            hits = self.vectorstore.similarity_search_with_relevance_scores(query, k=n, filter=filt)
        except NotImplementedError:  # e.g. InMemoryVectorStore, whose raw score is already cosine similarity
            hits = self.vectorstore.similarity_search_with_score(query, k=n, filter=filt)
        out = [
            (Record(id=d.id or "", text=d.page_content, metadata=dict(d.metadata)), float(s))
            for d, s in hits
            if matches(d.metadata, scoped)
        ]
        return out[:k]

    def get(self, user_id: str, where: Where, *, with_embeddings: bool = False) -> list[Record]:
        """Every record of the user matching ``where`` (listable stores only)."""
        scoped = {**where, "user_id": user_id}
        records = [r for r in self._all() if matches(r.metadata, scoped)]
        return records if with_embeddings else [dataclasses.replace(r, embedding=None) for r in records]

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete the user's records among ``ids``."""
        owned = sorted(self.existing_ids(user_id, ids))
        if owned:
            self.vectorstore.delete(ids=owned)

    def all_ids(self, user_id: str) -> list[str]:
        """Ids of every record of the user (listable stores only)."""
        return [r.id for r in self._all() if r.metadata.get("user_id") == user_id]

    def fetch(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> list[Record]:
        """The user's records among ``ids`` (listable stores only)."""
        wanted = set(ids)
        return [r for r in self.get(user_id, {}, with_embeddings=with_embeddings) if r.id in wanted]

    def change_log(self, user_id: str) -> set[str] | None:  # noqa: ARG002 - part of the MemoryBackend protocol
        """``None``: other code may write to the vector store directly, so readers list it on every use."""
        return None

    def changed_ids(self, user_id: str, entries: Sequence[str]) -> set[str] | None:  # noqa: ARG002 - protocol
        """``None``: no change log is kept."""
        return None

    def listing(self, user_id: str) -> dict[str, str]:
        """Id → fingerprint of every record of the user (listable stores only)."""
        return {r.id: fingerprint(r.metadata) for r in self.get(user_id, {})}

    def pages(self, user_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> Iterator[RecordPage]:
        """The user's records among ``ids``, as one page (the store is in memory already)."""
        yield RecordPage(self.fetch(user_id, ids, with_embeddings=with_embeddings))

    def purge(self, user_id: str) -> int:
        """Delete every record of the user (listable stores only); return how many."""
        return purge(self, user_id)

    def compact(self) -> int:
        """Not possible through the ``VectorStore`` interface: raises UnsupportedOperationError."""
        msg = (
            f"compact() needs the default Chroma store; a {type(self.vectorstore).__name__} cannot be compacted "
            "through the VectorStore interface (use the store's own maintenance tools)."
        )
        raise UnsupportedOperationError(msg)

    def reembed(self, embed: Callable[[list[str]], list[list[float]]], model_id: str) -> int:  # noqa: ARG002
        """Not possible through the ``VectorStore`` interface: raises UnsupportedOperationError."""
        msg = (
            f"reembed() needs the default Chroma store; re-create the {type(self.vectorstore).__name__} with the "
            "new embedding model and import an export_jsonl() file into it instead."
        )
        raise UnsupportedOperationError(msg)

    def companion(self, suffix: str) -> CompanionBackend:
        """Not possible: core memory (a companion store) is kept next to a Chroma store only."""
        msg = (
            f"Core memory ({suffix!r}) is kept in a Chroma store next to the memories; this memory uses "
            f"a {type(self.vectorstore).__name__}. Use SessionVectorMemory.local(...) or .server(...)."
        )
        raise UnsupportedOperationError(msg)

    def users(self) -> dict[str, int]:
        """Not possible through the ``VectorStore`` interface: raises UnsupportedOperationError."""
        msg = f"A {type(self.vectorstore).__name__} cannot list its users through the VectorStore interface."
        raise UnsupportedOperationError(msg)

    def stores_beside(self) -> list[MemoryBackend]:
        """None: the vector store's files are its own business."""
        return []


def backend_for(vectorstore: VectorStore) -> MemoryBackend:
    """The back end of a LangChain vector store.

    A ``langchain_chroma.Chroma`` is used natively (its one collection, model manifest and in-process replica),
    any other store through :class:`VectorStoreBackend`.
    """
    parts = chroma_collection_of(vectorstore)
    if parts is not None:
        client, collection = parts
        return ChromaBackend(client, collection=collection)
    return VectorStoreBackend(vectorstore)
