"""``SemanticCache``: answers repeated questions, and never a question it has not really seen.

A hit needs all of:

- the same user (a shared scope only by opt-in; the shared scope is a namespace no ``user_id`` can name);
- the same ``llm_string`` exactly: the model configuration *and* a digest of every other part of the prompt
  (system messages, earlier turns, retrieved context, tools), so only the last user question is matched
  semantically;
- cosine similarity of the normalised questions ≥ ``threshold``;
- no guard objection (:mod:`langchain_session_rag.guards`: numbers, negation, names, persons, opposing
  words, direction and word order, topic words aligned word by word);
- an unexpired entry (TTL per entry), the same knowledge version, and unchanged sources.

Time-sensitive questions (prices, rates, scores, weather, schedules, "latest", ...) are never stored;
questions that lean on earlier turns are neither looked up nor stored unless the caller gives a standalone
rewrite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import threading
import time
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.load import dumps, loads
from langchain_core.messages import BaseMessage
from langchain_core.runnables import ensure_config
from langchain_core.tracers.context import register_configure_hook
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_session_rag.embeddings import embedding_model_id, get_default_embeddings
from langchain_session_rag.errors import InvalidRequestError
from langchain_session_rag.guards import guard_mismatch, is_context_dependent, is_volatile, normalise_question
from langchain_session_rag.prompts import CONTEXT_CLOSE, CONTEXT_OPEN
from langchain_session_rag.stores import ChromaBackend, Record, open_chroma_client

__all__ = [
    "CacheDecision",
    "CacheStats",
    "SemanticCache",
    "SemanticLLMCache",
    "cache_scope",
    "current_cache_user",
    "source_digest",
]

SHARED_SCOPE = "shared"
"""The shared namespace. A user's namespace is ``"user:" + user_id``, so no user id can name the shared one."""
USER_SCOPE_PREFIX = "user:"
RECENT_VECTORS = 256
"""Question vectors kept from lookups for the update that follows a miss (same text, same model)."""
USER_VIEWS = 256
"""Per-user views a SemanticLLMCache keeps (least recently used first out; a view is cheap to rebuild)."""
WORD_VECTORS = 4096
"""Word vectors kept for the word-alignment guard."""
MISS_REASONS = (
    "empty",
    "below_threshold",
    "expired",
    "stale_version",
    "guard",
    "volatile",
    "context_dependent",
    "no_user",
    "no_text",
    "personal_context",
)

_CACHE_USER: ContextVar[str | None] = ContextVar("langchain_session_rag_cache_user", default=None)
"""The scoped user: a run's user must agree with it."""
_CACHE_PRIVATE: ContextVar[bool] = ContextVar("langchain_session_rag_cache_private", default=False)
_RUN_METADATA: ContextVar[dict[str, Any] | None] = ContextVar("langchain_session_rag_run_metadata", default=None)


class _RunMetadataCapture(BaseCallbackHandler):
    """Makes each chat model run's metadata visible to the cache.

    LangChain calls ``on_chat_model_start`` in the run's own context just before a chat model asks the cache,
    so the cache sees the user of *this* run (``config["metadata"]``), also for each item of a ``batch``. The
    value is cleared when the run ends. (A completion model, ``BaseLLM``, asks its cache *before* its start
    callback: it has no run metadata at lookup, so an unbound cache fails closed for it.)
    """

    run_inline = True
    raise_error = False

    @staticmethod
    def _start(run_id: UUID, metadata: dict[str, Any] | None) -> None:  # noqa: ARG004 - callback signature
        _RUN_METADATA.set(dict(metadata or {}))

    @staticmethod
    def _end(run_id: UUID) -> None:  # noqa: ARG004 - callback signature
        _RUN_METADATA.set(None)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, metadata: Any = None,  # noqa: ARG002
                            **kwargs: Any) -> None:  # noqa: ARG002  # fmt: skip
        """Remember the run's metadata."""
        self._start(run_id, metadata)

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, metadata: Any = None,  # noqa: ARG002
                     **kwargs: Any) -> None:  # noqa: ARG002  # fmt: skip
        """Remember the run's metadata."""
        self._start(run_id, metadata)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:  # noqa: ARG002
        """Forget it."""
        self._end(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:  # noqa: ARG002
        """Forget it."""
        self._end(run_id)


_CAPTURE_LOCK = threading.Lock()
_CAPTURE_INSTALLED = False


def _install_capture() -> None:
    """Add the metadata capture to every LangChain run of the process (once, when an LLM cache is built)."""
    global _CAPTURE_INSTALLED  # noqa: PLW0603 - a process-wide hook is installed once
    with _CAPTURE_LOCK:
        if _CAPTURE_INSTALLED:
            return
        # The default is the handler itself, so every context of the process sees it (LangChain's configure
        # hooks add a context variable's handler to each run's callbacks).
        hook: ContextVar[BaseCallbackHandler | None] = ContextVar(
            "langchain_session_rag_capture",
            default=_RunMetadataCapture(),  # noqa: B039 - one shared, stateless-per-run handler
        )
        register_configure_hook(hook, inheritable=True)
        _CAPTURE_INSTALLED = True


def _check_user_id(user_id: object) -> str:
    if not isinstance(user_id, str) or not user_id.strip() or "\x00" in user_id:
        msg = f"user_id must be a non-empty string without NUL characters, got {user_id!r}."
        raise InvalidRequestError(msg)
    return user_id


@contextmanager
def cache_scope(user_id: str, *, private: bool = False) -> Iterator[None]:
    """Restrict every :class:`SemanticLLMCache` call in this context (thread or task) to one user's runs.

    Inside the scope a cache serves only model runs that name this same user in their metadata (or a cache
    bound to this user with :meth:`SemanticLLMCache.for_user`); a run naming another user fails closed. A scope
    alone never names the user of a run: LangChain does not tell a cache which run asks, and a ``batch`` inside
    the scope may be other users' items. ``private=True`` says the prompts in the scope hold the user's own
    data (memories, history): a shared cache is then not used at all. The graphs of this package set both
    the scope and the run metadata every turn.

    Example:
        .. code-block:: python

            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_session_rag import cache_scope

            model = FakeListChatModel(responses=["Hi Alice."])
            with cache_scope("alice", private=True):
                model.invoke("Hello", config={"metadata": {"user_id": "alice"}})
    """
    token = _CACHE_USER.set(_check_user_id(user_id))
    private_token = _CACHE_PRIVATE.set(private)
    try:
        yield
    finally:
        _CACHE_PRIVATE.reset(private_token)
        _CACHE_USER.reset(token)


def current_cache_user(config_key: str = "user_id") -> str | None:
    """The user of the chat model run being served, or ``None`` (fail closed).

    The user must be named by the run itself: ``config={"metadata": {"user_id": ...}}`` on the call, the chain
    or the graph (metadata is what LangChain passes to each model run, also for each item of a ``batch``;
    ``configurable`` values are not passed to runs, so they cannot identify one). A :func:`cache_scope` and the
    running chain's ``configurable[config_key]`` must agree with it when present; any disagreement, or no
    user in the run, is ``None``.
    """
    run = (_RUN_METADATA.get() or {}).get(config_key)
    if not isinstance(run, str) or not run.strip():
        return None
    configured = ensure_config().get("configurable", {}).get(config_key)
    for other in (_CACHE_USER.get(), configured):
        if other is not None and str(other) != run:
            return None
    return run


def source_digest(sources: Iterable[tuple[str, str]]) -> str:
    """A digest of ``(id, text)`` pairs: it changes when any source behind an answer changes or disappears."""
    joined = "\x1e".join(f"{i}\x1f{t}" for i, t in sorted(sources))
    return hashlib.sha256(joined.encode()).hexdigest()[:32]


@dataclass
class CacheDecision:
    """The outcome of a lookup, explained."""

    hit: bool
    answer: str | None = None
    reason: str = "hit"
    """``"hit"`` or a miss reason: one of ``MISS_REASONS``."""
    similarity: float | None = None
    matched_question: str | None = None
    detail: str = ""
    created_at: float | None = None
    """When the matched entry was stored (epoch seconds)."""


@dataclass
class CacheStats:
    """Hits, and misses by reason."""

    hits: int = 0
    misses: Counter[str] = field(default_factory=Counter)
    skipped_updates: Counter[str] = field(default_factory=Counter)
    """Answers not stored, by reason (``volatile``, ``context_dependent``)."""

    @property
    def lookups(self) -> int:
        """Lookups counted."""
        return self.hits + sum(self.misses.values())


class SemanticCache(BaseModel):
    """A per-user semantic answer cache on Chroma.

    Instantiate:
        .. code-block:: python

            import tempfile
            from langchain_session_rag import SemanticCache

            cache = SemanticCache.local(path=tempfile.mkdtemp(), user_id="alice", ttl=3600)

    Usage:
        .. code-block:: python

            cache.update("How do I reset my password?", "Settings → Security → Reset password.")
            assert cache.lookup("How can I reset my password?") == "Settings → Security → Reset password."
            assert cache.lookup("How do I reset my username?") is None        # another key noun
            assert cache.for_user("bob").lookup("How do I reset my password?") is None
            print(cache.stats.hits, dict(cache.stats.misses))
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    user_id: str
    """Whose cache this is; entries never cross users (see ``shared``)."""
    chroma_client: Any
    """A chromadb client (``SemanticCache.local`` / ``.server`` build one)."""
    collection_name: str = "semantic_cache"
    embeddings: Embeddings | None = None
    """Embeds normalised questions (and, for the word-alignment guard, single words); the bundled MiniLM by
    default."""
    threshold: float = 0.85
    """Minimum cosine similarity of the normalised questions, in (0, 1]; the guards decide among candidates."""
    word_threshold: float = Field(default=0.8, gt=0, le=1)
    """Similarity at which two different topic words count as the same word (the ``content`` guard)."""
    ttl: float | None = Field(default=7 * 86_400, gt=0)
    """Seconds an entry lives (per entry; ``None``: forever)."""
    knowledge_version: str = ""
    """A tag of the knowledge behind answers; entries written under another tag never hit."""
    llm_string: str = ""
    """The model/prompt configuration; entries of another configuration never hit."""
    shared: bool = False
    """Opt-in: read and write one scope shared by every user instead of ``user_id``'s own."""
    candidates: int = Field(default=4, ge=1)
    """Nearest entries examined per lookup."""
    source_check: Callable[[str, list[str]], str] | None = None
    """Given the user id and the ids of the sources behind an entry, the :func:`source_digest` of those sources as
    they are now. Entries stored with ``sources=`` whose sources changed or were deleted miss as
    ``stale_version``: the knowledge behind the answer changed."""

    _backend: ChromaBackend = PrivateAttr()
    _stats: CacheStats = PrivateAttr(default_factory=CacheStats)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _recent: OrderedDict[str, list[float]] = PrivateAttr(default_factory=OrderedDict)
    """Vectors of the last questions looked up, so the update after a miss does not embed the question again."""
    _words: OrderedDict[str, list[float]] = PrivateAttr(default_factory=OrderedDict)
    """Unit vectors of single words, for the word-alignment guard."""

    @field_validator("threshold")
    @classmethod
    def _check_threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            msg = f"threshold must lie in (0, 1], got {value!r}."
            raise ValueError(msg)
        return value

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str) -> str:
        return _check_user_id(value)

    @model_validator(mode="after")
    def _open(self) -> SemanticCache:
        if self.embeddings is None:
            self.embeddings = get_default_embeddings()
        self._backend = ChromaBackend(self.chroma_client, name=self.collection_name)
        self._backend.check_model(embedding_model_id(self.embeddings), None)
        return self

    @classmethod
    def local(cls, path: str | os.PathLike[str] = "./semantic_cache", *, user_id: str, **kwargs: Any) -> SemanticCache:
        """An embedded Chroma cache in ``path``."""
        return cls(chroma_client=open_chroma_client(path=path), user_id=user_id, **kwargs)

    @classmethod
    def server(cls, host: str = "localhost", port: int = 8000, *, user_id: str, **kwargs: Any) -> SemanticCache:
        """A cache on a Chroma server, shared by processes."""
        return cls(chroma_client=open_chroma_client(host=host, port=port), user_id=user_id, **kwargs)

    def for_user(self, user_id: str) -> SemanticCache:
        """The same cache seen by another user (with fresh stats)."""
        other = self.model_copy(update={"user_id": _check_user_id(user_id)})
        other._stats = CacheStats()  # noqa: SLF001
        return other

    @property
    def stats(self) -> CacheStats:
        """Hits and misses of this object."""
        return self._stats

    @property
    def _scope(self) -> str:
        return SHARED_SCOPE if self.shared else USER_SCOPE_PREFIX + self.user_id

    @property
    def _embedder(self) -> Embeddings:
        if self.embeddings is None:  # pragma: no cover - set by the validator
            msg = "no embeddings"
            raise RuntimeError(msg)
        return self.embeddings

    def _recalled(self, text: str) -> list[float] | None:
        with self._lock:
            return self._recent.get(text)

    def _remember(self, text: str, vector: list[float]) -> list[float]:
        with self._lock:
            self._recent[text] = vector
            self._recent.move_to_end(text)
            while len(self._recent) > RECENT_VECTORS:
                self._recent.popitem(last=False)
        return vector

    # -- pure parts ------------------------------------------------------------------------------
    def _key(self, question: str, history: Sequence[str], standalone: str | None) -> tuple[str | None, str]:
        """The question to use, or ``None`` with the reason it must not be cached."""
        for name, value in (("question", question), ("standalone", standalone)):
            if (value is not None or name == "question") and not isinstance(value, str):
                msg = f"{name} must be a string, got {type(value).__name__}."
                raise InvalidRequestError(msg)
        q = standalone or question
        if not any(ch.isalnum() for ch in q):
            return None, "no_text"
        if is_volatile(q):
            return None, "volatile"
        if standalone is None and is_context_dependent(question, history):
            return None, "context_dependent"
        return q, ""

    @staticmethod
    def _llm_key(llm_string: str) -> str:
        return hashlib.sha256(llm_string.encode()).hexdigest()[:16]

    def _entry_id(self, question: str, llm_key: str, version: str) -> str:
        raw = "\x1f".join([self._scope, llm_key, version, normalise_question(question)])
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def word_similarity(self, left: Sequence[str], right: Sequence[str]) -> list[list[float]]:
        """Cosine similarities of single words (rows: ``left``), embedded once and kept (for the guards)."""
        with self._lock:
            missing = [w for w in dict.fromkeys([*left, *right]) if w not in self._words]
        if missing:
            vectors = self._embedder.embed_documents(missing)
            with self._lock:
                for word, vector in zip(missing, vectors, strict=True):
                    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
                    self._words[word] = [x / norm for x in vector]
                while len(self._words) > WORD_VECTORS:
                    self._words.popitem(last=False)
        with self._lock:
            lv = [self._words[w] for w in left]
            rv = [self._words[w] for w in right]
        return [[sum(x * y for x, y in zip(a, b, strict=True)) for b in rv] for a in lv]

    def _decide(self, question: str, version: str, hits: list[tuple[Record, float]], now: float) -> CacheDecision:
        if not hits:
            return CacheDecision(hit=False, reason="empty")
        first: CacheDecision | None = None
        for record, similarity in hits:
            meta = record.metadata
            cached_q = str(meta.get("question", ""))
            decision: CacheDecision
            if similarity < self.threshold:
                decision = CacheDecision(
                    hit=False, reason="below_threshold", similarity=similarity, matched_question=cached_q
                )
            elif 0 < float(meta.get("expires_at", 0)) <= now:
                decision = CacheDecision(hit=False, reason="expired", similarity=similarity, matched_question=cached_q)
            elif meta.get("knowledge_version", "") != version:
                decision = CacheDecision(
                    hit=False, reason="stale_version", similarity=similarity, matched_question=cached_q
                )
            elif self._sources_changed(meta):
                decision = CacheDecision(hit=False, reason="stale_version", similarity=similarity,
                                         matched_question=cached_q, detail="sources changed")  # fmt: skip
            else:
                guard = guard_mismatch(
                    question, cached_q, word_similarity=self.word_similarity, word_threshold=self.word_threshold
                )
                if guard.reason is None:
                    return CacheDecision(
                        hit=True,
                        answer=str(meta.get("answer", "")),
                        similarity=similarity,
                        matched_question=cached_q,
                        created_at=float(meta.get("created_at", 0)),
                    )
                decision = CacheDecision(hit=False, reason="guard", similarity=similarity, matched_question=cached_q,
                                         detail=f"{guard.reason}: {guard.detail}")  # fmt: skip
            first = first or decision
        return first or CacheDecision(hit=False, reason="empty")

    def _sources_changed(self, meta: dict[str, Any]) -> bool:
        ids = json.loads(str(meta.get("source_ids") or "[]"))
        if not ids or self.source_check is None:
            return False
        return bool(self.source_check(self.user_id, ids) != meta.get("source_digest"))

    def _count(self, decision: CacheDecision) -> CacheDecision:
        with self._lock:
            if decision.hit:
                self._stats.hits += 1
            else:
                self._stats.misses[decision.reason] += 1
        return decision

    def _plan(
        self,
        question: str,
        llm_string: str | None,
        knowledge_version: str | None,
        history: Sequence[str | BaseMessage],
        standalone: str | None,
    ) -> CacheDecision | tuple[str, str, str]:
        """The question, model key and version to look up, or the miss when it must not be looked up."""
        hist = [h.text if isinstance(h, BaseMessage) else h for h in history]
        q, reason = self._key(question, hist, standalone)
        if q is None:
            return CacheDecision(hit=False, reason=reason)
        key = self._llm_key(self.llm_string if llm_string is None else llm_string)
        return q, key, self.knowledge_version if knowledge_version is None else knowledge_version

    # -- lookup ----------------------------------------------------------------------------------
    def _search(self, q: str, vector: list[float], llm_key: str) -> list[tuple[Record, float]]:
        return self._backend.query(self._scope, normalise_question(q), vector, self.candidates, {"llm_key": llm_key})

    def decide(
        self,
        question: str,
        *,
        llm_string: str | None = None,
        knowledge_version: str | None = None,
        history: Sequence[str | BaseMessage] = (),
        standalone: str | None = None,
    ) -> CacheDecision:
        """Look a question up and explain the outcome (counted in :attr:`stats`)."""
        plan = self._plan(question, llm_string, knowledge_version, history, standalone)
        if isinstance(plan, CacheDecision):
            return self._count(plan)
        q, key, version = plan
        text = normalise_question(q)
        vector = self._remember(text, self._recalled(text) or self._embedder.embed_query(text))
        return self._count(self._decide(q, version, self._search(q, vector, key), time.time()))

    async def adecide(
        self,
        question: str,
        *,
        llm_string: str | None = None,
        knowledge_version: str | None = None,
        history: Sequence[str | BaseMessage] = (),
        standalone: str | None = None,
    ) -> CacheDecision:
        """Async :meth:`decide`."""
        plan = self._plan(question, llm_string, knowledge_version, history, standalone)
        if isinstance(plan, CacheDecision):
            return self._count(plan)
        q, key, version = plan
        text = normalise_question(q)
        vector = self._remember(text, self._recalled(text) or await self._embedder.aembed_query(text))
        hits = await asyncio.to_thread(self._search, q, vector, key)
        return self._count(await asyncio.to_thread(self._decide, q, version, hits, time.time()))

    def lookup(self, question: str, **kwargs: Any) -> str | None:
        """The cached answer of ``question``, or ``None`` (options as :meth:`decide`)."""
        return self.decide(question, **kwargs).answer

    async def alookup(self, question: str, **kwargs: Any) -> str | None:
        """Async :meth:`lookup`."""
        return (await self.adecide(question, **kwargs)).answer

    # -- update ----------------------------------------------------------------------------------
    def _record(
        self,
        q: str,
        answer: str,
        *,
        llm_string: str | None,
        version: str | None,
        ttl: float | None,
        extra: dict[str, Any],
        sources: Sequence[Document] = (),
    ) -> Record:
        key = self._llm_key(self.llm_string if llm_string is None else llm_string)
        ver = self.knowledge_version if version is None else version
        life = self.ttl if ttl is None else ttl
        now = time.time()
        return Record(
            id=self._entry_id(q, key, ver),
            text=normalise_question(q),
            metadata={
                **extra,
                "user_id": self._scope,
                "question": q,
                "answer": answer,
                "llm_key": key,
                "knowledge_version": ver,
                "created_at": now,
                "expires_at": now + life if life else 0.0,
                **self._source_meta(sources),
            },
        )

    @staticmethod
    def _source_meta(sources: Sequence[Document]) -> dict[str, str]:
        pairs = [(d.id, d.page_content) for d in sources if d.id]
        if not pairs:
            return {}
        return {"source_ids": json.dumps([i for i, _ in pairs]), "source_digest": source_digest(pairs)}

    def _skip(self, question: str, history: Sequence[str | BaseMessage], standalone: str | None) -> str | None:
        hist = [h.text if isinstance(h, BaseMessage) else h for h in history]
        q, reason = self._key(question, hist, standalone)
        if q is None:
            with self._lock:
                self._stats.skipped_updates[reason] += 1
        return q

    def _prepare(  # noqa: PLR0917 - private mirror of update()'s options
        self,
        question: str,
        answer: str,
        llm_string: str | None,
        version: str | None,
        history: Sequence[str | BaseMessage],
        standalone: str | None,
        ttl: float | None,
        metadata: dict[str, Any] | None,
        sources: Sequence[Document] = (),
    ) -> Record | None:
        """The record to store, or ``None`` (counted) when the question must not be cached."""
        q = self._skip(question, history, standalone)
        if q is None:
            return None
        return self._record(
            q, answer, llm_string=llm_string, version=version, ttl=ttl, extra=metadata or {}, sources=sources
        )

    def _write(self, record: Record) -> None:
        self._backend.check_model(embedding_model_id(self._embedder), len(record.embedding or []))
        self._backend.add(self._scope, [record])

    def update(
        self,
        question: str,
        answer: str,
        *,
        llm_string: str | None = None,
        knowledge_version: str | None = None,
        history: Sequence[str | BaseMessage] = (),
        standalone: str | None = None,
        ttl: float | None = None,
        metadata: dict[str, Any] | None = None,
        sources: Sequence[Document] = (),
    ) -> bool:
        """Store an answer; return False when the question must not be cached (volatile, context-dependent).

        ``sources`` are the retrieved documents (with ids) behind the answer: with a ``source_check`` the entry
        stops hitting once any of them changes or is deleted.
        """
        record = self._prepare(
            question, answer, llm_string, knowledge_version, history, standalone, ttl, metadata, sources
        )
        if record is None:
            return False
        record.embedding = self._recalled(record.text) or self._embedder.embed_query(record.text)
        self._write(record)
        return True

    async def aupdate(
        self,
        question: str,
        answer: str,
        *,
        llm_string: str | None = None,
        knowledge_version: str | None = None,
        history: Sequence[str | BaseMessage] = (),
        standalone: str | None = None,
        ttl: float | None = None,
        metadata: dict[str, Any] | None = None,
        sources: Sequence[Document] = (),
    ) -> bool:
        """Async :meth:`update`."""
        record = self._prepare(
            question, answer, llm_string, knowledge_version, history, standalone, ttl, metadata, sources
        )
        if record is None:
            return False
        record.embedding = self._recalled(record.text) or await self._embedder.aembed_query(record.text)
        await asyncio.to_thread(self._write, record)
        return True

    def clear(self) -> int:
        """Delete every entry of this scope (this user's, or the shared one); return how many."""
        return self._backend.purge(self._scope)

    async def aclear(self) -> int:
        """Async :meth:`clear`."""
        return await asyncio.to_thread(self.clear)


def _split_prompt(prompt: str) -> tuple[str, list[str], str]:
    """The last user message of a serialised chat prompt, the earlier turns, and a digest of everything else.

    Everything but the text of the last user message (system messages, earlier turns, tool calls, names, the
    non-text parts of the last message) goes into the digest, which must match exactly for a hit. A prompt
    that is not a list of chat messages is itself the question.
    """
    try:
        value = loads(prompt, allowed_objects="core")
    except (ValueError, TypeError, KeyError, json.JSONDecodeError):
        return prompt, [], ""
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        humans = [i for i, m in enumerate(value) if _is_user(m)]
        if not humans:
            return "", [], "no user message"  # nothing to match by meaning: not cached
        last = humans[-1]
        question, context = _question_and_context(value[last].text)
        non_text = [b for b in value[last].content if not (isinstance(b, dict) and b.get("type") == "text")] if (
            isinstance(value[last].content, list)) else []  # fmt: skip
        kept = value[last].model_copy(update={"content": non_text or "", "additional_kwargs": {
            **value[last].additional_kwargs, "context": context}})  # fmt: skip
        rest = [*value[:last], kept, *value[last + 1 :]]
        digest = hashlib.sha256(dumps(rest).encode()).hexdigest()
        earlier = [m.text for m in value[:last] if m.type in {"human", "ai"}]
        return question, earlier, digest
    return prompt, [], ""


def _is_user(message: BaseMessage) -> bool:
    return message.type == "human" or (message.type == "chat" and getattr(message, "role", "") in {"user", "human"})


def _question_and_context(text: str) -> tuple[str, str]:
    """Split a user message laid out by :class:`TokenBudget` into its question and its retrieved context.

    The context block must then match exactly; other messages are all question.
    """
    if text.startswith(CONTEXT_OPEN) and CONTEXT_CLOSE in text:
        block, _, question = text.partition(CONTEXT_CLOSE)
        return question.strip(), block
    return text, ""


class SemanticLLMCache(BaseCache):
    """The semantic cache as a LangChain ``BaseCache``: one cache per process, each request its own user.

    The user of a chat model call is named by the run's metadata (``config={"metadata": {"user_id": ...}}``)
    or by binding the cache with :meth:`for_user`.

    A :func:`cache_scope` or a chain's ``configurable["user_id"]`` must agree with it. With no user, nothing is
    looked up or stored (a warning says so once), unless the wrapped cache is ``shared=True``.

    Only the last user message of a chat prompt is matched semantically; everything else in the prompt (system
    messages, earlier turns, retrieved context, tools) and the model configuration must match exactly.

    Example:
        .. code-block:: python

            import tempfile
            from langchain_core.globals import set_llm_cache
            from langchain_session_rag import SemanticCache, SemanticLLMCache

            set_llm_cache(SemanticLLMCache(SemanticCache.local(path=tempfile.mkdtemp(), user_id="anyone")))
            # chain.invoke(question, config={"metadata": {"user_id": "alice"}}) is served from alice's
            # entries; ChatX(cache=llm_cache.for_user("alice")) binds a model to one user.
            set_llm_cache(None)
    """

    def __init__(self, cache: SemanticCache, *, config_key: str = "user_id") -> None:
        """Wrap a :class:`SemanticCache`: its threshold, guards and TTL apply; its ``user_id`` is not used.

        A ``shared=True`` cache serves every request from the shared scope.

        Args:
            cache: The semantic cache.
            config_key: The ``configurable`` key that names the user in a run's config.
        """
        self.cache = cache
        self.config_key = config_key
        self._user: str | None = None
        _install_capture()
        self._warned = False
        self._views: OrderedDict[str, SemanticCache] = OrderedDict()
        self._lock = threading.Lock()

    def for_user(self, user_id: str) -> SemanticLLMCache:
        """This cache bound to one user, for direct calls and per-request models (``ChatX(cache=...)``).

        A bound cache serves its user without run metadata; a run whose metadata names another user, or a
        scope of another user, still fails closed.
        """
        bound = SemanticLLMCache(self.cache, config_key=self.config_key)
        bound._user = _check_user_id(user_id)
        return bound

    def _current_user(self) -> str | None:
        if self._user is None:
            return current_cache_user(self.config_key)
        run = (_RUN_METADATA.get() or {}).get(self.config_key)
        return None if any(o is not None and o != self._user for o in (run, _CACHE_USER.get())) else self._user

    def _view(self) -> SemanticCache | None:
        """The cache of the current request's user, or ``None`` (fail closed) when there is no user."""
        if self.cache.shared:
            return None if _CACHE_PRIVATE.get() else self.cache
        user = self._current_user()
        if user is None:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    "SemanticLLMCache: no user in scope, so the cache is not used for this call. Name the user "
                    "in the run's metadata (config={'metadata': {'user_id': ...}} on the call, chain or graph), "
                    "bind one with SemanticLLMCache.for_user(user_id), or build the SemanticCache with "
                    "shared=True for answers every user may get.",
                    stacklevel=3,
                )
            return None
        with self._lock:
            view = self._views.get(user)
            if view is None:
                view = self._views[user] = self.cache.for_user(user)
            self._views.move_to_end(user)
            while len(self._views) > USER_VIEWS:
                self._views.popitem(last=False)
        return view

    @staticmethod
    def _key(prompt: str, llm_string: str) -> tuple[str, list[str], str]:
        question, history, digest = _split_prompt(prompt)
        return question, history, f"{llm_string}\x1e{digest}" if digest else llm_string

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Cached generations of the prompt for this model configuration, for the current user."""
        view = self._view()
        if view is None:
            return None
        question, history, key = self._key(prompt, llm_string)
        answer = view.lookup(question, llm_string=key, history=history)
        return None if answer is None else loads(answer, allowed_objects="core")

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store generations for the current user (skipped without one, and for volatile or follow-ups)."""
        view = self._view()
        if view is None:
            return
        question, history, key = self._key(prompt, llm_string)
        view.update(question, dumps(list(return_val)), llm_string=key, history=history)

    def clear(self, **kwargs: Any) -> None:  # noqa: ARG002
        """Delete the current user's entries (the shared scope's, for a shared cache)."""
        view = self._view()
        if view is not None:
            view.clear()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Async :meth:`lookup`."""
        view = self._view()
        if view is None:
            return None
        question, history, key = self._key(prompt, llm_string)
        answer = await view.alookup(question, llm_string=key, history=history)
        return None if answer is None else loads(answer, allowed_objects="core")

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Async :meth:`update`."""
        view = self._view()
        if view is None:
            return
        question, history, key = self._key(prompt, llm_string)
        await view.aupdate(question, dumps(list(return_val)), llm_string=key, history=history)

    async def aclear(self, **kwargs: Any) -> None:  # noqa: ARG002
        """Async :meth:`clear`."""
        view = self._view()
        if view is not None:
            await view.aclear()
