"""The settings of :class:`~langchain_session_rag.SessionVectorMemory` and how it opens its store."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator
from typing_extensions import Self

from langchain_session_rag._checks import check_user_id
from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import InvalidArgumentError, UnsupportedOperationError
from langchain_session_rag.identity import SYSTEM_PREFIX, acting_user
from langchain_session_rag.memory.core import DEFAULT_CORE_LIMITS, AgentEdits, check_core_limits
from langchain_session_rag.memory.ingest import Chunking
from langchain_session_rag.memory.retrieval import check_search_kwargs
from langchain_session_rag.memory.scoped import StoreState, UserStore, state_of
from langchain_session_rag.models.embeddings import embedding_model_id as model_id_of
from langchain_session_rag.models.embeddings import get_default_embeddings
from langchain_session_rag.stores.adapter import CONNECT_TIMEOUT, is_embedded, open_chroma_client
from langchain_session_rag.stores.base import MemoryBackend
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.vectorstore import backend_for

__all__ = ["DEFAULT_SEGMENT_TOKENS", "MemorySettings", "SourceType"]

SourceType = Literal["session", "document", "note"]
DEFAULT_SEGMENT_TOKENS = 128
"""Token cap of the default segmenter's segments (uncapped segments cost recall per prompt token on LoCoMo)."""


class MemorySettings(BaseRetriever):
    """The fields, validation and store opening of :class:`~langchain_session_rag.SessionVectorMemory`."""

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
    """Weight of BM25 in the hybrid score ``(1 − w) × similarity + w × bm25 / best_bm25``; 0 for dense only.
    When not given, an embedding model's ``default_lexical_weight`` attribute wins (``MultilingualEmbeddings``: 0,
    as BM25's word matching, tuned on English, let function words outrank meaning in German, Spanish, French)."""
    strip_speaker_names: bool = True
    """Leave the names of the memory's frequent speakers (labels of at least a fifth of its conversation chunks)
    out of the dense query, keeping them for BM25: "What books has Melanie read?" is embedded as "What books has
    read?", so the small embedding model matches books, not the ``Melanie:`` label of every line
    (see :mod:`~langchain_session_rag.memory.speakers`). ``False`` embeds the query as it is."""
    score_threshold: float | None = None
    """Minimum cosine similarity of a returned memory (before decay); ``None`` keeps all."""
    half_life_days: float | None = Field(default=None, gt=0)
    """Recency decay half-life in days; ``None`` (default) turns decay off."""
    recency_weight: float = Field(default=0.5, ge=0, le=1)
    """Share of the score that decays with age (see :func:`~langchain_session_rag.memory.ranking.decayed_score`)."""
    session_ids: list[str] | None = None
    """Restrict retrieval to these sessions."""
    exclude_session_ids: list[str] | None = None
    """Never return memories of these sessions (e.g. the current one, already in the prompt)."""
    source_type: SourceType | list[SourceType] | None = None
    """Return only ``"session"`` memories, ``"document"`` chunks or ``"note"`` memories (saved with ``add_note``),
    or the types of a list."""
    chunker: ExchangeChunker = Field(default_factory=lambda: ExchangeChunker(min_tokens=0))
    """How conversations are cut into exchange chunks. By default every exchange is its own chunk, however short
    ("My cat is called Pixel." stays itself): grouping exchanges is the topic segmenter's decision, made on their
    embeddings."""
    chunking: Chunking = "topic"
    """How ``add_messages`` stores a batch of several exchanges: ``"topic"`` segments (the default; on LoCoMo's
    held-out conversations about a point above one chunk per exchange at 600 prompt tokens, and level with a plain
    128-token window there) or one chunk per ``"exchange"``. A batch of one exchange (live chat) is stored
    as an exchange either way, retrievable at once; :meth:`consolidate` groups a session's exchanges later."""
    max_message_chars: int = Field(default=1_000_000, ge=1)
    """The longest message ``add_messages`` accepts, in characters: a longer one raises
    ``MessageTooLargeError`` and nothing of its batch is stored (the chunker takes about 2 s a megabyte)."""
    segmenter: TopicSegmenter | None = None
    """Groups exchanges into topics. Default: ``TopicSegmenter(embeddings, max_tokens=128)``: the threshold
    calibrated for the model when there is one (the bundled all-MiniLM-L6-v2: 0.15), else boundaries at the deep
    valleys of the session's own similarity profile, whatever the model's similarity scale; capped segments pack
    better into prompt budgets."""

    daily_log_dir: str | None = None
    """Append every new message to ``DIR/<user>/<YYYY-MM-DD>.md``, the raw, lossless tier (embedded stores only;
    see :mod:`~langchain_session_rag.memory.daily_log`)."""
    importance_scorer: Callable[[str], float] | None = None
    """Scores each new chunk's ``importance`` in [0, 1] (e.g. with a model call); by default the heuristics of
    :mod:`~langchain_session_rag.memory.annotate`, which need no model."""
    core_limits: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CORE_LIMITS))
    """Core memory blocks and their token limits (``memory.core``); by default ``now`` 300 and ``memory`` 700."""
    core_agent_edits: AgentEdits = "approve"
    """What a model's core memory edits do (the core memory tool, curation with ``auto_apply``): ``"approve"``
    (default) stores them as proposals, pinned only when ``memory.core.confirm(id)`` is called; ``"unconfirmed"``
    also shows them in prompts, apart from the pinned notes, as unconfirmed notes written by the assistant;
    ``"pin"`` pins them at once (a retrieved memory that tells the model to save an order then rides in every
    prompt: choose it only for trusted inputs)."""
    time_aware: bool = True
    """Look for a time expression in each query ("What did we discuss last Tuesday?", "on March 5", "two weeks
    ago"; see :func:`~langchain_session_rag.memory.timewindow.find_time_window`) and, when there is one, boost the
    memories stamped inside the day, week, month or year it names: ``time_boost`` is added to their score and the
    window's best chunks are candidates even when the plain search missed them. A boost, not a filter (a
    question may name the wrong day): other memories stay reachable. Boosted documents carry
    ``metadata["time_window"] = [start, end]``. Phrases are read against the call's ``now`` (default: the current
    time, UTC). Per call: ``time_window="auto"`` (this), a phrase (``time_window="last week"``) or ``None`` (off).
    Questions without a time expression are ranked exactly as with ``False``."""
    time_boost: float = Field(default=0.5, ge=0)
    """What a ``time_aware`` window adds to the score of the memories inside it (scores are on the cosine scale:
    with 0.5 a memory outside the window still ranks first when it is more relevant by over 0.5)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Retrieval options applied to every call, as ``VectorStoreRetriever.search_kwargs`` are (``since``,
    ``filter``, ``source_type``, ...; see ``invoke``); options passed to a call override them."""
    user_from_run: bool = False
    """Serve the user the run names (``config["configurable"]["user_id"]`` or a LangGraph run's
    ``context["user_id"]``) instead of ``user_id`` when ``invoke`` / ``ainvoke`` run; a run naming no user is
    then refused. When ``False`` (default), a run naming another user than ``user_id`` is refused with
    ``IdentityConflictError``: a user override is never silently ignored."""

    _backend: MemoryBackend = PrivateAttr()
    _state: StoreState = PrivateAttr()
    _model_id: str = PrivateAttr()

    @field_validator("core_limits", mode="before")
    @classmethod
    def _check_core_limits(cls, value: Any) -> Any:
        return check_core_limits(value)

    @field_validator("daily_log_dir", mode="before")
    @classmethod
    def _path_text(cls, value: object) -> object:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str) -> str:
        return check_user_id(value, system_ok=True)  # the one user id check (a for_shared scope is code's choice)

    @model_validator(mode="after")
    def _open(self) -> Self:
        if self.vectorstore is not None and self.chroma_client is not None:
            msg = "Pass either vectorstore= or chroma_client=, not both."
            raise InvalidArgumentError(msg)
        backend: MemoryBackend
        if self.chroma_client is not None:
            backend = ChromaBackend(self.chroma_client, name=self.collection_name, shards=self.shards)
        elif self.vectorstore is not None:
            if self.embeddings is None:
                self.embeddings = self.vectorstore.embeddings
            backend = backend_for(self.vectorstore)
        else:
            msg = (
                "SessionVectorMemory needs a store: use SessionVectorMemory.local(path=..., user_id=...), "
                "SessionVectorMemory.server(host=..., port=..., user_id=...), or pass vectorstore=."
            )
            raise InvalidArgumentError(msg)
        if self.embeddings is None:
            self.embeddings = get_default_embeddings()
        preferred = getattr(self.embeddings, "default_lexical_weight", None)
        if "lexical_weight" not in self.model_fields_set and isinstance(preferred, int | float):
            self.lexical_weight = float(preferred)
        if self.segmenter is None:
            self.segmenter = TopicSegmenter(
                self.embeddings, max_tokens=DEFAULT_SEGMENT_TOKENS, token_counter=self.chunker.count
            )
        elif self.segmenter.embeddings is not self.embeddings:
            msg = (
                "The segmenter must use the memory's embedding model (its vectors are stored): "
                "build it as TopicSegmenter(memory_embeddings, ...) with the same object as embeddings=."
            )
            raise InvalidArgumentError(msg)
        check_search_kwargs(self.search_kwargs)
        if self.daily_log_dir is not None and isinstance(backend, ChromaBackend) and not is_embedded(backend.client):
            msg = (
                "daily_log_dir writes files on this machine: it is for embedded stores. With a Chroma server, many "
                "processes on many machines write, so keep logs where your app runs (or export_jsonl)."
            )
            raise UnsupportedOperationError(msg)
        self._model_id = self.embedding_model_id or model_id_of(self.embeddings)
        backend.check_model(self._model_id, None)
        self._backend = backend
        self._state = state_of(backend)
        return self

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
    ) -> Self:
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
        connect_timeout: float = CONNECT_TIMEOUT,
        **kwargs: Any,
    ) -> Self:
        """Use a Chroma server (``chroma run --path DIR --port 8000``), shared by many processes.

        The server must answer within ``connect_timeout`` seconds (5 by default).

        Raises:
            StoreUnavailableError: No Chroma server answers at ``host:port`` (refused, unreachable, silent past
                ``connect_timeout``, or another kind of server); the message names the address and the fix.
        """
        client = open_chroma_client(host=host, port=port, connect_timeout=connect_timeout)
        return cls(
            chroma_client=client, user_id=user_id, embeddings=embeddings, collection_name=collection_name, **kwargs
        )

    def for_user(self, user_id: str) -> Self:
        """Return the view of another user over the same store, with the same settings, bound to that user.

        The view serves ``user_id`` only (``user_from_run`` is off): inside a run naming another user its calls
        raise ``IdentityConflictError``.
        """
        return self.model_copy(update={"user_id": self._check_user(user_id), "user_from_run": False})

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
        return cast("Embeddings", self.embeddings)  # set by the validator

    @property
    def _segmenter(self) -> TopicSegmenter:
        return cast("TopicSegmenter", self.segmenter)  # set by the validator

    def _store(self, *, check_run: bool = True) -> UserStore:
        """The scoped store of the user this call acts for (see ``for_run``: the run may name it, or refuse)."""
        user = acting_user(self.user_id, from_run=self.user_from_run) if check_run else self.user_id
        return UserStore(
            self._backend,
            self._state,
            user,
            self._model_id,
            self._embeddings,
            self.chunker,
            self._segmenter,
            self.max_message_chars,
            self.importance_scorer,
        )
