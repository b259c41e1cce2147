# mypy: disable-error-code="pydantic-field"
# (pydantic's mypy plugin takes the methods bound from module functions below for untyped fields; pydantic does not)
"""``SessionVectorMemory``: past conversations as a retrievable, user-scoped corpus.

A thin ``BaseRetriever``: its fields are the settings; its methods turn a call (whose user, which options) into
calls of its :class:`~langchain_session_rag.memory.service.MemoryService` (the store, replicas, writers, runtime).
The write and maintenance methods are functions of :mod:`~langchain_session_rag.memory.writing` and
:mod:`~langchain_session_rag.memory.admin` bound here (no base class but ``BaseRetriever``).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, StrictInt, field_validator
from typing_extensions import Self

from langchain_session_rag._checks import SYSTEM_PREFIX
from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.identity import acting_user
from langchain_session_rag.memory import admin, opening, relational, writing
from langchain_session_rag.memory._threads import in_thread
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.core_text import DEFAULT_CORE_LIMITS, AgentEdits, check_core_limits
from langchain_session_rag.memory.ingest import Chunking
from langchain_session_rag.memory.recall_policy import RecallPolicy
from langchain_session_rag.memory.retrieval import RetrievalQuery, build_query
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.service import MemoryService, path_text
from langchain_session_rag.memory.settings import SourceType, check_query, check_user_id
from langchain_session_rag.privacy.keyring import KeySource
from langchain_session_rag.relations.model import Extractor
from langchain_session_rag.relations.patterns import PatternExtractor
from langchain_session_rag.stores.adapter import CONNECT_TIMEOUT, READ_TIMEOUT, open_chroma_client
from langchain_session_rag.stores.base import MemoryBackend
from langchain_session_rag.stores.encryption import check_key_before_opening


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
        return path_text(value)

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str) -> str:
        return check_user_id(value)

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
        return self.model_copy(update={"user_id": check_user_id(user_id), "user_from_run": False})

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

    # -- writing (memory/writing.py) -------------------------------------------------------------
    flush = writing.flush
    aflush = in_thread(writing.flush)
    add_messages = writing.add_messages
    aadd_messages = writing.aadd_messages
    consolidate = writing.consolidate
    aconsolidate = writing.aconsolidate
    similarity_profile = writing.similarity_profile
    add_documents = writing.add_documents
    aadd_documents = writing.aadd_documents
    get_by_ids = writing.get_by_ids
    aget_by_ids = in_thread(writing.get_by_ids)
    warm_up = writing.warm_up
    awarm_up = in_thread(writing.warm_up)

    # -- maintenance (memory/admin.py) -----------------------------------------------------------
    add_note = admin.add_note
    aadd_note = in_thread(admin.add_note)
    list_memories = admin.list_memories
    alist_memories = in_thread(admin.list_memories)
    list_sessions = admin.list_sessions
    alist_sessions = in_thread(admin.list_sessions)
    forget = admin.forget
    aforget = in_thread(admin.forget)
    forget_all = admin.forget_all
    aforget_all = in_thread(admin.forget_all)
    compact = admin.compact
    acompact = in_thread(admin.compact)
    count = admin.count
    export_jsonl = admin.export_jsonl
    aexport_jsonl = in_thread(admin.export_jsonl)
    import_jsonl = admin.import_jsonl
    aimport_jsonl = in_thread(admin.import_jsonl)
    reembed = classmethod(admin.reembed)

    # -- the relational layer (memory/relational.py) -----------------------------------------------
    relations, arelations = relational.relations, in_thread(relational.relations)
    neighbours, aneighbours = relational.neighbours, in_thread(relational.neighbours)
    paths, apaths = relational.paths, in_thread(relational.paths)
    entities, aentities = relational.entities, in_thread(relational.entities)
    relation_lines, arelation_lines = relational.relation_lines, in_thread(relational.relation_lines)


def check_memory(value: object) -> SessionVectorMemory:
    """``value`` as a memory, or :class:`InvalidArgumentError` (the tools, the store, the graph, the importers)."""
    if not isinstance(value, SessionVectorMemory):
        msg = f"memory must be a SessionVectorMemory, got {type(value).__name__}."
        raise InvalidArgumentError(msg)
    return value
