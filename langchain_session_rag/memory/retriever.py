# mypy: disable-error-code="pydantic-field"
# (pydantic's mypy plugin takes the async twins made by in_thread below for untyped fields; pydantic does not)
"""``SessionVectorMemory``: past conversations as a retrievable, user-scoped corpus.

A thin ``BaseRetriever``: its fields are the settings; its methods turn a call (whose user, which options) into
calls of its :class:`~langchain_session_rag.memory.service.MemoryService` (the store, replicas, writers, runtime).
No base class but ``BaseRetriever``; the relational methods read the user's graph of
:mod:`~langchain_session_rag.memory.relational`.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, StrictInt, field_validator
from typing_extensions import Self

from langchain_session_rag._checks import (
    SYSTEM_PREFIX,
    check_ids,
    check_int,
    check_path,
    check_session_id,
    check_user_id,
)
from langchain_session_rag._time import TimestampLike, parse_timestamp
from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.messages import MessageLike
from langchain_session_rag.chunking.segmenter import SimilarityProfile, TopicSegmenter
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.identity import acting_user
from langchain_session_rag.memory import admin, opening, sessions
from langchain_session_rag.memory._threads import in_thread
from langchain_session_rag.memory.consolidation import Consolidation
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.core_text import DEFAULT_CORE_LIMITS, AgentEdits, check_core_limits
from langchain_session_rag.memory.erasure import ErasureReceipt, LinkableCache
from langchain_session_rag.memory.ingest import Chunking
from langchain_session_rag.memory.listing import (
    SessionInfo,
    check_page,
    listing_where,
    memory_documents,
    note_record,
    sessions_of,
)
from langchain_session_rag.memory.recall_policy import RecallPolicy
from langchain_session_rag.memory.relational import user_graph
from langchain_session_rag.memory.retrieval import RetrievalQuery, build_query
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.scoped import reset_replicas
from langchain_session_rag.memory.service import MemoryService
from langchain_session_rag.memory.settings import SourceType, check_query
from langchain_session_rag.memory.worth import Author
from langchain_session_rag.models.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.privacy.keyring import KeySource
from langchain_session_rag.relations.graph import EntityInfo, Relation
from langchain_session_rag.relations.model import Extractor
from langchain_session_rag.relations.patterns import PatternExtractor
from langchain_session_rag.stores.adapter import CONNECT_TIMEOUT, READ_TIMEOUT, open_chroma_client
from langchain_session_rag.stores.base import MemoryBackend
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.encryption import check_key_before_opening, open_encrypted

if TYPE_CHECKING:
    from datetime import datetime

    from chromadb.api import ClientAPI


class SessionVectorMemory(BaseRetriever):
    """Long-term conversational memory: past exchanges as a user-scoped, retrievable corpus.

    Every memory object is bound to one ``user_id``: it can never read, return or delete another
    user's memories. ``memory.for_user("bob")`` is the view for another user over the same store.

    Setup:
        .. code-block:: bash

            pip install langchain-session-rag

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

    Retrieval options (constructor defaults, overridable per call as ``invoke(q, **options)``): ``k``,
    ``session_ids`` / ``exclude_session_ids``, ``since`` / ``until`` (also phrases: "last tuesday"), ``source_type``,
    ``filter`` (metadata equality), ``score_threshold`` (on raw cosine similarity), ``lexical_weight``,
    ``half_life_days`` with ``recency_weight``, ``time_window`` / ``time_boost`` (see ``time_aware``),
    ``recall_policy``. The score: ``relevance = (1 − lexical_weight) × similarity + lexical_weight × bm25 / best``,
    times ``(1 − recency_weight) + recency_weight × 0.5 ** (age_days / half_life_days)``, then the recall policy.
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
    k: StrictInt = Field(default=4, ge=1)
    """How many memories to return."""
    fetch_k: StrictInt = Field(default=50, ge=1)
    """Candidates read (from the vector index, and from the lexical index) before fusion and decay re-rank them."""
    lexical_weight: float = Field(default=0.3, ge=0, le=1)
    """Weight of BM25 in the hybrid score ``(1 − w) × similarity + w × bm25 / best_bm25``; 0 for dense only. When not
    given, the embedding model's ``default_lexical_weight`` wins (``MultilingualEmbeddings``: 0)."""
    strip_speaker_names: bool = True
    """Leave the names of the memory's frequent speakers out of the dense query, keeping them for BM25 (see
    :mod:`~langchain_session_rag.memory.speakers`). ``False`` embeds the query as it is."""
    score_threshold: float | None = None
    """Minimum cosine similarity of a returned memory (before decay); ``None`` keeps all."""
    recall_policy: RecallPolicy | None = Field(default_factory=RecallPolicy)
    """How long use is ranked: by worth, repeats folded, corrections first (see
    :mod:`~langchain_session_rag.memory.recall_policy`). ``None`` ranks by score alone."""
    half_life_days: float | None = Field(default=None, gt=0)
    """Recency decay half-life in days; ``None`` (default) turns decay off."""
    recency_weight: float = Field(default=0.5, ge=0, le=1)
    """Share of the score that decays with age (see :func:`~langchain_session_rag.memory.ranking.decayed_score`)."""
    session_ids: list[str] | None = None
    exclude_session_ids: list[str] | None = None
    """Never return memories of these sessions (e.g. the current one, already in the prompt); ``session_ids``
    restricts retrieval to the sessions listed."""
    source_type: SourceType | list[SourceType] | None = None
    """Return only ``"session"`` memories, ``"document"`` chunks or ``"note"`` memories (saved with ``add_note``),
    or the types of a list."""
    chunker: ExchangeChunker = Field(default_factory=lambda: ExchangeChunker(min_tokens=0))
    """How conversations are cut into exchange chunks (by default one per exchange, however short)."""
    chunking: Chunking = "topic"
    """How ``add_messages`` stores a batch of several exchanges: ``"topic"`` segments (the default) or one chunk per
    ``"exchange"``. A batch of one exchange (live chat) is stored as an exchange either way, retrievable at once;
    :meth:`consolidate` groups a session's exchanges later."""
    max_message_chars: StrictInt = Field(default=1_000_000, ge=1)
    """The longest message ``add_messages`` accepts, in characters: a longer one raises
    ``MessageTooLargeError`` and nothing of its batch is stored (the chunker takes about 2 s a megabyte)."""
    segmenter: TopicSegmenter | None = None
    """Groups exchanges into topics. Default: ``TopicSegmenter(embeddings, max_tokens=128)``, calibrated per model."""
    daily_log_dir: str | None = None
    """Append every new message to ``DIR/<user>/<YYYY-MM-DD>.md``, the raw, lossless tier (embedded stores only;
    see :mod:`~langchain_session_rag.memory.daily_log`)."""
    importance_scorer: Callable[[str], float] | None = None
    """Scores each new chunk's ``importance`` in [0, 1] (e.g. with a model call); by default the heuristics of
    :mod:`~langchain_session_rag.memory.annotate`, which need no model."""
    core_limits: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CORE_LIMITS))
    """Core memory blocks and their token limits (``memory.core``); by default ``now`` 300 and ``memory`` 700."""
    core_agent_edits: AgentEdits = "approve"
    """What a model's core memory edits do: ``"approve"`` (default) stores proposals, pinned by
    ``memory.core.confirm(id)``; ``"unconfirmed"`` also shows them in prompts as the assistant's unconfirmed notes;
    ``"pin"`` pins them at once (choose it only for trusted inputs)."""
    time_aware: bool = True
    """Look for a time expression in each query ("What did we discuss last Tuesday?", "two weeks ago"; see
    :func:`~langchain_session_rag.memory.timewindow.find_time_window`) and boost the memories stamped inside the day,
    week, month or year it names by ``time_boost``; the window's best chunks are candidates even when the plain
    search missed them. A boost, not a filter: other memories stay reachable. Boosted documents carry
    ``metadata["time_window"]``. Phrases are read against the call's ``now`` (default: now, UTC). Per call:
    ``time_window="auto"`` (this), a phrase (``"last week"``) or ``None`` (off)."""
    time_boost: float = Field(default=0.5, ge=0)
    """What a ``time_aware`` window adds to the score of the memories inside it (scores are on the cosine scale:
    with 0.5 a memory outside the window still ranks first when it is more relevant by over 0.5)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Retrieval options applied to every call, as ``VectorStoreRetriever.search_kwargs`` are (``since``,
    ``filter``, ``source_type``, ...; see ``invoke``); options passed to a call override them."""
    user_from_run: bool = False
    """Serve the user the run names (``config["configurable"]["user_id"]`` or a LangGraph run's ``context``) instead
    of ``user_id``; a run naming no user is then refused. When ``False``, a run naming another user than ``user_id``
    is refused with ``IdentityConflictError``."""

    encryption_key: KeySource | None = Field(default=None, repr=False)
    """Encrypts the store at rest with per-user keys: the master key (base64 or hex text of 32 bytes, a key
    file's ``Path``, or a callable returning the key); ``None`` reads ``SESSION_RAG_MASTER_KEY``, and without either
    nothing is encrypted. See docs/privacy.md."""
    keyring_dir: str | None = None
    """The folder of the users' wrapped data keys; by default ``PATH.keys`` beside an embedded store."""
    redact_secrets: bool = False
    """Replace secrets (cloud keys, tokens, passwords, card numbers, IBANs) by ``[secret:KIND]`` before storing."""
    relation_extractor: Extractor | None = Field(default_factory=PatternExtractor)
    """Finds the entities and relations of each new session chunk and note, stored on the chunk (``facts``) for
    :meth:`relations`, :meth:`neighbours`, :meth:`paths` and ``entity_weight``: by default the documented patterns
    (no model call); any :class:`~langchain_session_rag.relations.Extractor` (``LLMExtractor(chat_model)``); ``None``
    stores none (chunks stored without are then read with the patterns)."""
    entity_weight: float = Field(default=0.0, ge=0, le=1)
    """What naming the question's entities adds to a chunk's score (times the share of them it names); above 0,
    the chunks naming them (and their one-hop neighbours) are candidates too. See docs/relations.md."""
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    """Process-side knobs of this memory: replica cache bounds, the write linger, background writes (see
    :class:`~langchain_session_rag.memory.runtime.RuntimeSettings`; the defaults are the usual behaviour)."""

    _service: MemoryService = PrivateAttr()

    @field_validator("core_limits", mode="before")
    @classmethod
    def _check_core_limits(cls, value: Any) -> Any:
        return check_core_limits(value)

    @field_validator("daily_log_dir", "keyring_dir", mode="before")
    @classmethod
    def _path_text(cls, value: object) -> object:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str) -> str:
        return check_user_id(value, system_ok=True)  # and the ids for_shared builds (the code's, never a run's)

    def model_post_init(self, context: Any, /) -> None:
        """Complete the settings from the embedding model, then open the store (the constructor's last step)."""
        super().model_post_init(context)
        self._service = opening.open_service(self)

    @property
    def service(self) -> MemoryService:
        """What this memory runs on: the opened store, its replicas and writers, the embedding model, the settings.

        Views (``for_user``, ``for_run``, ``model_copy``) share the store; a view with other write or runtime
        settings gets a service with those.
        """
        current = self._service
        service = current.with_settings(opening.write_settings(self), self.runtime)
        if service is not current:
            self._service = service
        return service

    @property
    def core(self) -> CoreMemory:
        """The pinned core memory of the user this call acts for (blocks ``core_limits``; see :class:`CoreMemory`).

        Raises:
            UnsupportedOperationError: The store keeps no core memory (no ``CORE_MEMORY`` capability).
        """
        user = admin.acting(self)
        return self.service.core(user, limits=self.core_limits, agent_edits=self.core_agent_edits)

    @property
    def backend(self) -> MemoryBackend:
        """The storage back end (for inspection and benchmarks)."""
        return self._service.backend

    @property
    def model_id(self) -> str:
        """The embedding model identity recorded in the store."""
        return self._service.model_id

    # -- constructors and views ------------------------------------------------------------------
    @classmethod
    def local(
        cls,
        path: str | os.PathLike[str] = "./session_memory",
        *,
        user_id: str,
        embeddings: Embeddings | None = None,
        collection_name: str = "session_memory",
        **kwargs: Any,
    ) -> Self:
        """Open (or create) an embedded Chroma store in ``path``.

        The embedding model defaults to the bundled all-MiniLM-L6-v2, loaded on first use.
        Other keyword arguments are the constructor's (``k``, ``half_life_days``, ``runtime``, ...).
        """
        check_key_before_opening(path, kwargs.get("encryption_key"), kwargs.get("keyring_dir"), collection_name)
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
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        **kwargs: Any,
    ) -> Self:
        """Use a Chroma server (``chroma run --path DIR --port 8000``), shared by many processes.

        The server must answer within ``connect_timeout`` seconds (5 by default), and each later call within
        ``read_timeout`` seconds (5 by default); past it the call raises ``StoreUnavailableError`` and, until the
        server answers its heartbeat again, so does every call of this process to that server, at once. Other
        keyword arguments are the constructor's (``k``, ``runtime``, ...).

        Raises:
            StoreUnavailableError: No Chroma server answers at ``host:port`` (refused, unreachable, silent past
                ``connect_timeout``, or another kind of server); the message names the address and the fix.
        """
        client = open_chroma_client(host=host, port=port, connect_timeout=connect_timeout, read_timeout=read_timeout)
        return cls(
            chroma_client=client, user_id=user_id, embeddings=embeddings, collection_name=collection_name, **kwargs
        )

    def for_user(self, user_id: str) -> Self:
        """The view of another user over the same store (same settings), serving ``user_id`` only, never the run's."""
        return self.model_copy(update={"user_id": check_user_id(user_id, system_ok=True), "user_from_run": False})

    def for_shared(self, name: str) -> Self:
        """A view over a shared scope: data every user may read (reference documents, policies), apart from users.

        No run can name a shared scope, so any user's run may use it (as the graph's ``documents=`` retriever, say).

        Raises:
            InvalidArgumentError: An empty name, or one longer than 200 characters.
        """
        if not isinstance(name, str) or not name.strip() or len(name) > 200:  # noqa: PLR2004
            msg = f"A shared scope needs a name of 1 to 200 characters, got {name!r}."
            raise InvalidArgumentError(msg)
        return self.for_user(SYSTEM_PREFIX + "shared" + SYSTEM_PREFIX + name)

    def for_run(self, config: RunnableConfig | None = None) -> Self:
        """The view of the user the run names, checked against this memory's user.

        With ``user_from_run=True`` the run's user (``config["configurable"]["user_id"]`` or the LangGraph run's
        ``context``) is served, and a run naming none is refused. Otherwise a run naming another user than
        ``user_id`` is refused; a run naming none, or this user, is served as ``user_id``. Every method of the
        memory applies the same rule (with the run its call is part of).

        Raises:
            IdentityConflictError: The run names another user (``user_from_run=False``), or two different users.
            InvalidArgumentError: ``user_from_run=True`` and the run names no user.
        """
        user = acting_user(self.user_id, from_run=self.user_from_run, config=config)
        return self if user == self.user_id and not self.user_from_run else self.for_user(user)

    # -- retrieval -------------------------------------------------------------------------------
    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:  # noqa: A002
        """Retrieve this user's memories for ``input`` (the current user message); see the class docstring.

        Raises:
            IdentityConflictError: The run's config or context names another user (see :meth:`for_run`).
        """
        target = self.for_run(config)
        return super(SessionVectorMemory, target).invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:  # noqa: A002
        """Async :meth:`invoke`."""
        target = self.for_run(config)
        return await super(SessionVectorMemory, target).ainvoke(input, config, **kwargs)

    def _query(self, options: dict[str, Any], text: str = "") -> RetrievalQuery:
        defaults = opening.query_defaults(self)
        return build_query({**self.search_kwargs, **options}, defaults, fetch_k=self.fetch_k, text=text)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = check_query(query)
        q = self._query(kwargs, query)
        service = self.service
        store = service.user(self.user_id)  # invoke checked the call's run
        text = store.dense_text(query) if self.strip_speaker_names else query
        vector = None if service.backend.embeds_itself else service.embeddings.embed_query(text)
        return store.search(query, vector, q, dense_text=text)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = check_query(query)
        q = await asyncio.to_thread(self._query, kwargs, query)  # may load dateparser (a time expression)
        service = self.service
        store = service.user(self.user_id)
        text = await asyncio.to_thread(store.dense_text, query) if self.strip_speaker_names else query
        vector = None if service.backend.embeds_itself else await service.embeddings.aembed_query(text)
        return await asyncio.to_thread(functools.partial(store.search, dense_text=text), query, vector, q)

    # -- writing ---------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until every write of this memory has reached the store.

        Writes made with ``wait=False`` (the graph's) are retrievable by this process at once and reach the store
        within ``runtime.write_linger`` (0.1 s by default), merged with the writes made meanwhile; other processes
        see them from then on.

        Raises:
            StoreWriteError: A write made with ``wait=False`` failed; its chunks are not stored.
        """
        self.service.flush()

    aflush = in_thread(flush)

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
        return sessions.add_session(
            self.service,
            admin.acting(self),
            messages,
            session_id=session_id,
            metadata=metadata,
            chunking=chunking or self.chunking,
            wait=wait,
        )

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
        return await sessions.aadd_session(
            self.service,
            admin.acting(self),
            messages,
            session_id=session_id,
            metadata=metadata,
            chunking=chunking or self.chunking,
            wait=wait,
        )

    def consolidate(self, session_id: str) -> Consolidation:
        """Replace a session's exchange chunks by topic segments (at the end of a live session).

        Stored exchange vectors are reused: only segments of several exchanges are embedded. Segments
        are written before the exchanges are deleted, with deterministic ids, so running it twice, or
        again after an interruption, leaves every message covered exactly once.
        """
        return sessions.consolidate(self.service, admin.acting(self), session_id)

    async def aconsolidate(self, session_id: str) -> Consolidation:
        """Async :meth:`consolidate`."""
        return await sessions.aconsolidate(self.service, admin.acting(self), session_id)

    def similarity_profile(self, session_id: str) -> SimilarityProfile:
        """The similarity series and topic boundaries of a session's stored exchanges, for plotting.

        Uses the stored vectors (no embedding call). A session already consolidated has no exchange
        chunks left and gives an empty profile.
        """
        return sessions.similarity_profile(self.service, admin.acting(self), session_id)

    def add_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Store reference documents (``source_type="document"``), returned with ``[D: name]`` markers.

        The name is the basename of ``metadata["name"]``, ``["source"]`` or ``["title"]``. Long
        documents are split at paragraphs to the chunker's ``max_tokens``.
        """
        return sessions.add_documents(self.service, admin.acting(self), documents, session_id)

    async def aadd_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Async :meth:`add_documents`."""
        return await sessions.aadd_documents(self.service, admin.acting(self), documents, session_id)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """This user's chunks among ``ids`` (unknown ids and other users' chunks are skipped), in ``ids`` order.

        Includes chunks still on their way to the store (``wait=False`` writes of this process).
        """
        return admin.user_store(self).get_by_ids(check_ids(ids))

    aget_by_ids = in_thread(get_by_ids)

    def warm_up(self) -> Self:
        """Load now what the first request would load, and return ``self``.

        That is the embedding model, this user's in-process index, the tokenizer and the date parser; a fresh
        process otherwise pays for them on its first question (``benchmarks/cold_start.py`` measures it). Call it
        once when a server starts.
        """
        from langchain_session_rag._time import utcnow  # noqa: PLC0415
        from langchain_session_rag.memory.timewindow import resolve_time_phrase  # noqa: PLC0415

        self.chunker.count("warm up")
        resolve_time_phrase("yesterday", now=utcnow())
        self.invoke("warm up", k=1)
        return self

    awarm_up = in_thread(warm_up)

    # -- maintenance -----------------------------------------------------------------------------
    # -- notes ------------------------------------------------------------------------------------------
    def add_note(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str = "",
        metadata: dict[str, Any] | None = None,
        timestamp: TimestampLike | None = None,
        author: Author = "user",
    ) -> str:
        """Save a note: a memory stated on purpose (a fact, a preference, a correction), not a conversation.

        Notes are retrieved with the sessions (``source_type="note"``, marked ``[S: date]`` by the date they were
        saved). Saving again with the same ``key`` (or, without a key, the same text) replaces the note.

        Args:
            text: The note.
            key: A stable name for the note, to replace it later; by default derived from the text.
            session_id: The session it was saved in (``""``: none).
            metadata: Extra metadata (scalar values; others are JSON-encoded).
            timestamp: When it was stated (default: now).
            author: Who wrote it. ``"user"`` (the default: application code saving what the user said or typed) makes
                it the user's statement, which recall ranks first and which may supersede an older one. ``"model"``
                (what the memory tools pass for a model's notes) makes it the assistant's claim: labelled "said by
                the assistant", ranked below the user's statements on its subject, superseding none of them.

        Returns:
            The note's id.

        Raises:
            InvalidArgumentError: Empty text or key, an unknown ``author``.
            MessageTooLargeError: Text longer than ``max_message_chars``.
            InvalidMetadataError: A reserved or unstorable metadata key, metadata over its limits (see
                :mod:`~langchain_session_rag.stores.limits`), a key over 1,024 characters.
            InvalidArgumentError: An unfit ``session_id`` (a line break, a control character, too long).
            InvalidArgumentError: With ``redact_secrets``, a ``key`` or ``session_id`` holding a secret (ids are not
                redacted: they must match exactly).
        """
        self.service.refuse_secret_ids(session_id=session_id, key=key)  # before the fit check, whose message shows it
        check_session_id(session_id, empty_ok=True)
        store = admin.user_store(self)
        record = note_record(
            user_id=store.user_id,
            model_id=self.model_id,
            text=self.service.redacted(text) if isinstance(text, str) else text,
            key=key,
            session_id=session_id,
            timestamp=timestamp,
            metadata=self.service.redacted_metadata(metadata),
            count=self.chunker.count,
            max_chars=self.max_message_chars,
            author=author,
        )
        store.save([record])
        return record.id

    aadd_note = in_thread(add_note)

    # -- listing ----------------------------------------------------------------------------------------
    def list_memories(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        session_id: str | None = None,
        since: TimestampLike | None = None,
        until: TimestampLike | None = None,
        source_type: str | Sequence[str] | None = None,
    ) -> list[Document]:
        """One page of this user's memories, newest first (by timestamp, then storage time, then id).

        Each document carries its metadata and ``marker``. Page with ``offset`` (``offset=20`` is the second page
        of 20); at most 1,000 a page.

        Args:
            limit: Page size (1..1000).
            offset: Memories to skip.
            session_id: Only this session's.
            since: Only memories at or after this time.
            until: Only memories at or before this time.
            source_type: Only ``"session"``, ``"document"`` or ``"note"`` memories (or a list of them).

        Raises:
            InvalidArgumentError: A malformed filter, or a page size out of range.
            UnsupportedOperationError: The vector store cannot list its records.
        """
        check_page(limit, offset)
        where = listing_where(session_id=session_id, since=since, until=until, source_type=source_type)
        store = admin.user_store(self)
        return memory_documents(store.records(where), user_id=store.user_id, limit=limit, offset=offset)

    alist_memories = in_thread(list_memories)

    def list_sessions(
        self, *, since: TimestampLike | None = None, until: TimestampLike | None = None
    ) -> list[SessionInfo]:
        """This user's sessions, most recently active first, with their dates and chunk and message counts.

        ``since`` / ``until`` keep the sessions with a chunk in that span.

        Raises:
            UnsupportedOperationError: The vector store cannot list its records.
        """
        store = admin.user_store(self)
        return sessions_of(store.records(listing_where(since=since, until=until)), user_id=store.user_id)

    alist_sessions = in_thread(list_sessions)

    # -- forgetting -------------------------------------------------------------------------------------
    def forget(
        self,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Delete this user's memories matching every given criterion; return how many were removed.

        Every tier goes with them: the daily log (``daily_log_dir``) is rewritten without the messages the
        removed chunks covered (and, without ``ids=``, without any message of the session / before the time),
        and linked caches (see ``SemanticCache.link_memory``) delete the answers derived from them.

        Args:
            session_id: Only chunks of this session.
            before: Only chunks whose timestamp is earlier than this.
            ids: Only these chunk ids (ids of other users are ignored).

        Raises:
            InvalidArgumentError: No criterion is given (use :meth:`forget_all`), or one is malformed.
            FileAccessError: The daily log could not be rewritten (the memories are gone; forget again to retry).
        """
        return self.service.forget(admin.acting(self), session_id=session_id, before=before, ids=ids)

    aforget = in_thread(forget)

    def forget_all(self) -> ErasureReceipt:
        """Delete every memory of this user (and only this user), core memory included; return how many chunks.

        The user's daily log folder is deleted and linked caches delete all of the user's entries. On an encrypted
        store the user's data keys are destroyed first (crypto-shredding): every earlier copy of the user's data is
        unreadable at once. The count returned is an :class:`~langchain_session_rag.memory.erasure.ErasureReceipt`
        (an ``int``) that also names the destroyed keys.
        """
        return self.service.forget_all(admin.acting(self))

    aforget_all = in_thread(forget_all)

    def compact(self, *, caches: Sequence[LinkableCache] = ()) -> int:
        """Erase what was forgotten from the store's files, for every user of the store, and from linked caches.

        ``forget`` and ``forget_all`` remove records from retrieval at once, but an embedded Chroma store
        keeps their text in its write-ahead log and in SQLite's free pages until its collections are rebuilt
        and its file vacuumed. ``compact()`` does both (crash-safe: copy, verify, switch), after which a byte
        scan of the folder finds none of the forgotten texts. Other stores in an embedded store's folder (a
        semantic cache kept there, another memory) are compacted with it. Caches linked to this memory
        (``SemanticCache.link_memory``, done by the graphs) and the ``caches`` given (linked from then on) are
        compacted first, in whatever folder they are. It copies the whole store: run it after forgetting, not
        after every write. On a Chroma server the collections are rebuilt; run ``chroma vacuum --path DIR`` on
        the server's host for its files. Returns the number of chunks kept.

        Raises:
            UnsupportedOperationError: The store cannot be compacted (no ``COMPACTION`` capability: not a Chroma store).
        """
        for cache in caches:
            cache.link_memory(self)
        return self.service.compact()

    acompact = in_thread(compact)

    def count(self) -> int:
        """How many chunks this user has stored (after :meth:`flush`)."""
        return admin.user_store(self).count()

    # -- portability ------------------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str], *, encrypt: bool | None = None) -> int:
        """Write every chunk of this user to a JSON Lines file; return how many were written.

        Each line holds ``id``, ``text``, ``metadata`` (``message_ids`` as a list), ``embedding``
        and ``embedding_model``. From an encrypted store each line is sealed under the user's data key (an export
        taken before ``forget_all`` is unreadable after it); ``encrypt=False`` writes the plain lines (to hand the
        user their data, or to move it to a store with another keyring).
        """
        return admin.user_store(self).export_jsonl(check_path("path", path), encrypt=encrypt)

    aexport_jsonl = in_thread(export_jsonl)

    def import_jsonl(
        self, path: str | os.PathLike[str], *, reassign: bool = False, trust_provenance: bool = False
    ) -> int:
        """Import an :meth:`export_jsonl` file into this user's memory; return how many chunks were added.

        The file is validated whole before anything is written. Chunks already stored are skipped;
        vectors are reused when the file was written with the same embedding model, and texts are
        re-embedded otherwise. An export of another user (its records' ``user_id``) is refused unless
        ``reassign=True`` makes its memories this user's.

        Who said what is not taken from the file unless ``trust_provenance=True`` (a file the user vouches for: their
        own export, kept where no one else could edit it): anyone who can edit a file can write the fields a chunk's
        worth is computed from. By default an imported note is the model's (``author="model"``: recalled as the
        assistant's claim, never superseding what the user stated) and a session chunk's ``exchange_count`` is not
        taken (a ``User:`` line after a reply is read as part of the reply).

        Raises:
            IdentityConflictError: The file holds another user's memories and ``reassign`` is off (nothing is
                imported).
            InvalidMessageError: A malformed line (nothing is imported).
            InvalidArgumentError: An id in the file belongs to another user of the same collection.
        """
        store = admin.user_store(self)
        return store.import_jsonl(check_path("path", path), reassign=reassign, trust_provenance=trust_provenance)

    aimport_jsonl = in_thread(import_jsonl)

    @classmethod
    def reembed(
        cls,
        store: str | os.PathLike[str] | ClientAPI,
        *,
        embeddings: Embeddings,
        collection_name: str = "session_memory",
        embedding_model_id: str | None = None,
        encryption_key: KeySource | None = None,
        keyring_dir: str | None = None,
    ) -> int:
        """Re-embed a whole store (every user) with a new model, from its stored texts.

        Args:
            store: The folder of an embedded store, or a chromadb client.
            embeddings: The new embedding model.
            collection_name: The store name.
            embedding_model_id: The identity to record; derived from ``embeddings`` when not given.
            encryption_key: An encrypted store's master key (else ``SESSION_RAG_MASTER_KEY``): texts are decrypted for
                the new model and the new vectors rotated, as the memory does.
            keyring_dir: An encrypted store's keyring folder (default: beside an embedded store).

        Returns:
            The number of chunks re-embedded.

        Raises:
            UnsupportedOperationError: The store cannot re-embed (see the ``REEMBED`` capability).
        """
        if isinstance(store, str | os.PathLike):
            check_key_before_opening(store, encryption_key, keyring_dir, collection_name)
        client = open_chroma_client(path=store) if isinstance(store, str | os.PathLike) else store
        backend = open_encrypted(ChromaBackend(client, name=collection_name), encryption_key, keyring_dir)
        try:
            return backend.reembed(embeddings.embed_documents, embedding_model_id or model_id_of(embeddings))
        finally:
            reset_replicas(backend)  # the in-process replicas hold the old vectors

    # -- the relational layer (the graph: memory/relational.py) ----------------------------------------
    def relations(self, entity: str, as_of: TimestampLike | None = None) -> list[Relation]:
        """What the memories say about ``entity``: its relations, each with validity and the markers of its chunks.

        ``as_of=None`` returns current and closed relations (``valid_to`` set, ``replaced_by`` naming what replaced
        them); an ISO 8601 date or time (``"2026-03-01"``) returns those valid then. Unknown entity: ``[]``.

        ``rel.render()`` is one line: ``analytics service — uses → ClickHouse [S: 2026-03-09]``.

        Raises:
            InvalidArgumentError: An empty entity name, or an ``as_of`` that is not a time.
        """
        graph = user_graph(self)
        return graph.relations(_name(entity), as_of=_when(as_of))

    arelations = in_thread(relations)

    def neighbours(self, entity: str, *, hops: int = 1, as_of: TimestampLike | None = None) -> list[Relation]:
        """Relations within ``hops`` (1 or 2) of ``entity`` ("what is connected to the billing API")."""
        hops = _hops(hops, "hops")
        graph = user_graph(self)
        return graph.neighbours(_name(entity), hops=hops, as_of=_when(as_of))

    aneighbours = in_thread(neighbours)

    def paths(
        self, source: str, target: str, *, max_hops: int = 2, as_of: TimestampLike | None = None
    ) -> list[list[Relation]]:
        """Chains of at most ``max_hops`` (1 or 2) relations linking two entities, shortest first.

        ("How is the outage related to Terraform?")
        """
        hops = _hops(max_hops, "max_hops")
        graph = user_graph(self)
        return graph.paths(_name(source, "source"), _name(target, "target"), max_hops=hops, as_of=_when(as_of))

    apaths = in_thread(paths)

    def entities(self, name: str | None = None) -> list[EntityInfo]:
        """The entities of this user's memories, the most mentioned first (``name``: only the one it names)."""
        graph = user_graph(self)
        if name is None:
            return graph.entities()
        found = graph.entity(_name(name))
        return [found] if found else []

    aentities = in_thread(entities)

    def relation_lines(self, question: str, *, limit: int = 8) -> list[str]:
        """The relations of the entities ``question`` names, one compact line each, with markers.

        The graph's ``relations`` prompt section: ``analytics service — uses → ClickHouse [S: 2026-03-09] (before:
        PostgreSQL until 2026-03-09)``.
        """
        check_query(question)
        check_int("limit", limit, 1)
        graph = user_graph(self)
        return graph.lines(graph.named_in(question), limit=limit)  # every entity it names, however often it is named

    arelation_lines = in_thread(relation_lines)


def check_memory(value: object) -> SessionVectorMemory:
    """``value`` as a memory, or :class:`InvalidArgumentError` (the tools, the store, the graph, the importers)."""
    if not isinstance(value, SessionVectorMemory):
        msg = f"memory must be a SessionVectorMemory, got {type(value).__name__}."
        raise InvalidArgumentError(msg)
    return value


def _when(as_of: TimestampLike | None) -> datetime | None:
    return None if as_of is None else parse_timestamp(as_of, what="as_of")


def _name(value: object, what: str = "entity") -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:  # noqa: PLR2004
        msg = f"{what} must be a name of 1 to 200 characters, got {value!r}."
        raise InvalidArgumentError(msg)
    return value


def _hops(value: object, what: str) -> int:
    if isinstance(value, bool) or value not in {1, 2}:
        msg = f"{what} must be 1 or 2, got {value!r}."
        raise InvalidArgumentError(msg)
    return int(value)
