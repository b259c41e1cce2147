"""``SemanticCache``: answers repeated questions, and never a question it has not really seen.

A hit needs all of:

- the same user (a shared scope only by opt-in; the shared scope is a namespace no ``user_id`` can name);
- the same ``llm_string`` exactly: the model configuration *and* a digest of every other part of the prompt
  (system messages, earlier turns, retrieved context, tools), so only the last user question is matched
  semantically;
- cosine similarity of the normalised questions ≥ ``threshold``;
- no guard objection (:mod:`langchain_session_rag.cache.guards`: numbers, negation, names, persons, opposing
  words, direction and word order, topic words aligned word by word);
- an unexpired entry (TTL per entry), the same knowledge version, and unchanged sources.

Time-sensitive questions (prices, rates, scores, weather, schedules, "latest", ...) are never stored;
questions that lean on earlier turns are neither looked up nor stored unless the caller gives a standalone
rewrite.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any, cast

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_documents, check_user_id
from langchain_session_rag.cache import questions
from langchain_session_rag.cache.decision import CacheDecision, CacheStats
from langchain_session_rag.cache.entries import (
    MAX_ANSWER_CHARS,
    cache_key,
    check_client,
    check_text_options,
    check_update,
    entry_record,
    history_texts,
    llm_key,
    lookup_options,
    oversized,
    sources_changed,
)
from langchain_session_rag.cache.erasure import CacheTier
from langchain_session_rag.cache.guards import guard_mismatch
from langchain_session_rag.cache.scope import SHARED_SCOPE, USER_SCOPE_PREFIX
from langchain_session_rag.cache.sources import memory_source_check
from langchain_session_rag.cache.vectors import VectorMemo
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.erasure import link_tier
from langchain_session_rag.models import fingerprint
from langchain_session_rag.models.embeddings import embedding_model_id, get_default_embeddings
from langchain_session_rag.privacy.keyring import KeySource
from langchain_session_rag.privacy.redaction import redact_secrets
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.base import MemoryBackend, Record
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.encryption import check_key_before_opening, open_encrypted


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

    user_id: Annotated[str, AfterValidator(check_user_id)]
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
    max_question_chars: int = Field(default=questions.MAX_QUESTION_CHARS, ge=1)
    """Longer questions are neither looked up nor stored (a ``too_long`` miss): the guards' work stays bounded."""
    max_answer_chars: int = Field(default=MAX_ANSWER_CHARS, ge=1)
    """Longer answers are not stored (``update`` returns False); an ``llm_string`` over 64 KiB is not either."""
    candidates: int = Field(default=4, ge=1)
    """Nearest entries examined per lookup."""
    source_check: Callable[[str, list[str]], str] | None = None
    """Given the user id and the ids of the sources behind an entry, the :func:`source_digest` of those sources as
    they are now. Entries stored with ``sources=`` whose sources changed or were deleted miss as
    ``stale_version`` and are deleted. :meth:`link_memory` installs one that reads the linked memory."""

    encryption_key: KeySource | None = Field(default=None, repr=False)
    """Encrypts the cache at rest, as ``SessionVectorMemory``'s (keys in ``keyring_dir``, default ``PATH.keys``)."""
    keyring_dir: str | os.PathLike[str] | None = None
    redact_secrets: bool = False
    """A question holding a secret is neither looked up nor stored (miss ``secret``); answers are redacted. Turned
    on by :meth:`link_memory` with a memory that redacts (the graphs link theirs), and for the calls of a
    :class:`~langchain_session_rag.SemanticLLMCache` made in a ``cache_scope(..., redact=True)`` (the graphs' model
    calls when their memory redacts)."""

    _backend: MemoryBackend = PrivateAttr()
    _tier: CacheTier = PrivateAttr()
    _stats: CacheStats = PrivateAttr(default_factory=CacheStats)
    _lock: threading.Lock = PrivateAttr(default_factory=_fork.lock)
    _vectors: VectorMemo = PrivateAttr(default_factory=VectorMemo)
    """Question vectors of recent lookups and word vectors of the guards (shared by ``for_user`` views)."""

    @field_validator("threshold")
    @classmethod
    def _check_threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            msg = f"threshold must lie in (0, 1], got {value!r}."
            raise InvalidArgumentError(msg)
        return value

    @model_validator(mode="after")
    def _open(self) -> SemanticCache:
        check_client(self.chroma_client)
        if self.embeddings is None:
            self.embeddings = get_default_embeddings()
        plain = ChromaBackend(self.chroma_client, name=self.collection_name)
        self._backend = open_encrypted(plain, self.encryption_key, self.keyring_dir)
        self._tier = CacheTier(self._backend)
        self._backend.check_model(embedding_model_id(self.embeddings), None)
        return self

    @classmethod
    def local(cls, path: str | os.PathLike[str] = "./semantic_cache", *, user_id: str, **kwargs: Any) -> SemanticCache:
        """An embedded Chroma cache in ``path``."""
        name = kwargs.get("collection_name", cls.model_fields["collection_name"].default)
        check_key_before_opening(path, kwargs.get("encryption_key"), kwargs.get("keyring_dir"), name)
        return cls(chroma_client=open_chroma_client(path=path), user_id=user_id, **kwargs)

    @classmethod
    def server(cls, host: str = "localhost", port: int = 8000, *, user_id: str, **kwargs: Any) -> SemanticCache:
        """A cache on a Chroma server, shared by processes."""
        return cls(chroma_client=open_chroma_client(host=host, port=port), user_id=user_id, **kwargs)

    def for_user(self, user_id: str, *, share_stats: bool = False) -> SemanticCache:
        """The same cache seen by another user.

        The view has fresh stats, unless ``share_stats=True``: then it counts into this object's :attr:`stats`
        (what the graph and :class:`~langchain_session_rag.SemanticLLMCache` do, so the object you configured sees
        their traffic). Entries never cross users either way.
        """
        other = self.model_copy(update={"user_id": check_user_id(user_id)})
        if not share_stats:
            other._stats = CacheStats()  # noqa: SLF001 - the copy's own attribute
            other._lock = _fork.lock()  # noqa: SLF001
        return other

    def note_skipped(self, reason: str) -> None:
        """Count an answer that was not stored, by reason (in :attr:`stats` ``.skipped_updates``)."""
        with self._lock:
            self._stats.skipped_updates[reason] += 1

    @property
    def stats(self) -> CacheStats:
        """Hits and misses of this object."""
        return self._stats

    @property
    def _scope(self) -> str:
        return SHARED_SCOPE if self.shared else USER_SCOPE_PREFIX + self.user_id

    @property
    def _embedder(self) -> Embeddings:
        return cast("Embeddings", self.embeddings)  # set by the validator

    # -- pure parts ------------------------------------------------------------------------------
    def _key(self, question: str, history: Sequence[str], standalone: str | None) -> tuple[str | None, str]:
        """The question to use, or ``None`` with the reason it must not be cached."""
        return cache_key(question, history, standalone, self.max_question_chars, secrets=self.redact_secrets)

    def _memo_key(self, question: str) -> str:
        """The in-process memo of a question's vector is per scope: one user cannot time another's questions."""
        return f"{self._scope}\x1f{questions.normalise_question(question)}"

    def word_similarity(self, left: Sequence[str], right: Sequence[str]) -> list[list[float]]:
        """Cosine similarities of single words (rows: ``left``), embedded once and kept (for the guards)."""
        return self._vectors.word_similarity(self._embedder, left, right)

    def _decide(self, question: str, version: str, hits: list[tuple[Record, float]], now: float) -> CacheDecision:
        first: CacheDecision | None = None
        for record, similarity in hits:
            meta = record.metadata
            cached_q = str(meta.get("question", ""))
            miss = functools.partial(CacheDecision, hit=False, similarity=similarity, matched_question=cached_q)
            if similarity < self.threshold:
                decision = miss(reason="below_threshold")
            elif 0 < float(meta.get("expires_at", 0)) <= now:
                decision = miss(reason="expired")
            elif meta.get("knowledge_version", "") != version:
                decision = miss(reason="stale_version")
            elif sources_changed(meta, self.source_check, self.user_id):  # derived from gone or changed memories
                self._backend.delete(self._scope, [record.id])  # so compact() erases it: nothing can revive it
                decision = miss(reason="stale_version", detail="sources changed")
            else:
                guard = guard_mismatch(question, cached_q, word_similarity=self.word_similarity,
                                       word_threshold=self.word_threshold, max_chars=self.max_question_chars,
                                       )  # fmt: skip
                if guard.reason is None:
                    return CacheDecision(
                        hit=True,
                        answer=str(meta.get("answer", "")),
                        similarity=similarity,
                        matched_question=cached_q,
                        created_at=float(meta.get("created_at", 0)),
                    )
                decision = miss(reason="guard", detail=f"{guard.reason}: {guard.detail}")
            first = first or decision
        return first or CacheDecision(hit=False, reason="empty")

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
        check_text_options(llm_string, knowledge_version)
        q, reason = self._key(question, history_texts(history), standalone)
        if q is None:
            return CacheDecision(hit=False, reason=reason)
        key = llm_key(self.llm_string if llm_string is None else llm_string)
        return q, key, self.knowledge_version if knowledge_version is None else knowledge_version

    # -- lookup ----------------------------------------------------------------------------------
    def _check_model(self, dimension: int) -> None:
        """Refuse vectors of another model than the cache's (by id, dimension and, once, fingerprint)."""
        embedder = self._embedder
        self._backend.check_model(embedding_model_id(embedder), dimension, probe=lambda: fingerprint.probe(embedder))

    def _search(self, text: str, vector: list[float], llm_key: str) -> list[tuple[Record, float]]:
        self._check_model(len(vector))
        return self._backend.query(self._scope, text, vector, self.candidates, {"llm_key": llm_key})

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
        text, memo = questions.normalise_question(q), self._memo_key(q)
        vector = self._vectors.remember(memo, self._vectors.recalled(memo) or self._embedder.embed_query(text))
        return self._count(self._decide(q, version, self._search(text, vector, key), time.time()))

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
        text, memo = questions.normalise_question(q), self._memo_key(q)
        vector = self._vectors.remember(memo, self._vectors.recalled(memo) or await self._embedder.aembed_query(text))
        hits = await asyncio.to_thread(self._search, text, vector, key)
        return self._count(await asyncio.to_thread(self._decide, q, version, hits, time.time()))

    def lookup(self, question: str, **kwargs: Any) -> str | None:
        """The cached answer of ``question``, or ``None`` (options as :meth:`decide`)."""
        return self.decide(question, **lookup_options(kwargs)).answer

    async def alookup(self, question: str, **kwargs: Any) -> str | None:
        """Async :meth:`lookup`."""
        return (await self.adecide(question, **lookup_options(kwargs))).answer

    # -- update ----------------------------------------------------------------------------------
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
        extra = check_update(answer, ttl, llm_string, version, metadata)
        answer = redact_secrets(answer).text if self.redact_secrets else answer
        check_documents("sources", sources)
        too_big = oversized(answer, self.llm_string if llm_string is None else llm_string, self.max_answer_chars)
        q, reason = (None, too_big) if too_big else self._key(question, history_texts(history), standalone)
        if q is None:
            self.note_skipped(reason)
            return None
        return entry_record(
            self._scope,
            q,
            answer,
            key=llm_key(self.llm_string if llm_string is None else llm_string),
            version=self.knowledge_version if version is None else version,
            life=self.ttl if ttl is None else ttl,
            extra=extra,
            sources=sources,
        )

    def _write(self, record: Record) -> None:
        self._check_model(len(record.embedding or []))
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
        """Store an answer; return False when it must not be cached (volatile, context-dependent, too long).

        ``sources`` are the retrieved documents (with ids) behind the answer: with a ``source_check`` the entry
        stops hitting once any of them changes or is deleted.
        """
        record = self._prepare(
            question, answer, llm_string, knowledge_version, history, standalone, ttl, metadata, sources
        )
        if record is None:
            return False
        record.embedding = self._vectors.recalled(self._memo_key(question)) or self._embedder.embed_query(record.text)
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
        memo = self._vectors.recalled(self._memo_key(question))
        record.embedding = memo or await self._embedder.aembed_query(record.text)
        await asyncio.to_thread(self._write, record)
        return True

    def clear(self) -> int:
        """Delete every entry of this scope (this user's, or the shared one); return how many.

        Deleted entries leave retrieval at once; :meth:`compact` erases their text from the cache's files.
        """
        return self._backend.purge(self._scope)

    async def aclear(self) -> int:
        """Async :meth:`clear`."""
        return await asyncio.to_thread(self.clear)

    def link_memory(self, memory: Any) -> None:
        """Make this cache follow ``memory``'s forgetting (a ``SessionVectorMemory``; the graphs link theirs).

        While this object lives, ``memory.forget(...)`` deletes the user's entries that drew on a forgotten chunk
        or were answered in a forgotten session (metadata ``memory_session``), ``forget_all()`` all the user's
        entries, and ``memory.compact()`` compacts this cache's files too, wherever they are. A per-user cache
        also checks the memories behind an entry on every hit (its ``source_check``): an entry whose sources another
        process forgot or changed misses as ``stale_version`` and is deleted. Raises ``StoreLockedError`` for a cache
        this process cannot use (an embedded one its parent opened before fork()).

        A memory that redacts secrets (``redact_secrets=True``) turns this cache's ``redact_secrets`` on: what the
        memory never stores, the answers derived from it never hold either.
        """
        if getattr(memory, "redact_secrets", False):
            self.redact_secrets = True
        link_tier(memory.backend.process_key, self._tier)
        if not self.shared and self.source_check is None:
            self.source_check = memory_source_check(memory)

    def compact(self) -> int:
        """Erase deleted and cleared entries from the cache's files; return how many entries are kept.

        Rebuilds the collections from their live entries and vacuums an embedded cache's folder: after it a byte
        scan of the folder finds no text of a deleted entry. It copies the whole cache: run it after forgetting.
        """
        return self._tier.compact()

    async def acompact(self) -> int:
        """Async :meth:`compact`."""
        return await asyncio.to_thread(self.compact)
