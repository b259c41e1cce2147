"""``SessionVectorMemory``: past conversations as a retrievable, user-scoped corpus."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from typing_extensions import Self

from langchain_session_rag.chunking.messages import MessageLike
from langchain_session_rag.chunking.segmenter import SimilarityProfile
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.identity import acting_user
from langchain_session_rag.memory.admin import MemoryAdmin, SessionInfo
from langchain_session_rag.memory.daily_log import append_daily_log
from langchain_session_rag.memory.erasure import replace_logged
from langchain_session_rag.memory.ingest import Batch, Chunking, Consolidation
from langchain_session_rag.memory.retrieval import RetrievalQuery, build_query
from langchain_session_rag.stores.base import decode_message_ids

__all__ = ["Consolidation", "SessionInfo", "SessionVectorMemory"]


def _check_query(query: object) -> str:
    """The retrieval query: a string (the current user message)."""
    if not isinstance(query, str):
        msg = f"The query must be a string (the current user message), got {type(query).__name__}."
        raise InvalidArgumentError(msg)
    return query


class SessionVectorMemory(MemoryAdmin):
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

    Retrieval options (constructor defaults, overridable per call as ``invoke(q, **options)``):
    ``k``, ``session_ids`` / ``exclude_session_ids``, ``since`` / ``until``, ``source_type``,
    ``filter`` (metadata equality), ``score_threshold`` (on raw cosine similarity), ``lexical_weight`` and
    ``half_life_days`` with ``recency_weight``, ``time_window`` / ``time_boost`` (see ``time_aware``). ``since`` /
    ``until`` also take phrases ("last tuesday", "two weeks ago"). The score is hybrid relevance, then recency decay::

        relevance = (1 − lexical_weight) × similarity + lexical_weight × bm25 / best_bm25
        score = relevance × ((1 − recency_weight) + recency_weight × 0.5 ** (age_days / half_life_days))
    """

    # -- ingest ----------------------------------------------------------------------------------
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
        store = self._store()
        writer = store.writer()
        batch = writer.prepare_session(messages, session_id, metadata, chunking or self.chunking)
        if batch.exchanges:
            writer.finish_topics(batch, self._segmenter.segment(writer.as_documents(batch.exchanges)), session_id)
        store.embed_pending(writer, batch.records)
        written = writer.store(batch.records, batch.superseded, wait=wait)
        if wait:
            written.result()
        self._log(store.user_id, batch, session_id)
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
        store = self._store()
        writer = await asyncio.to_thread(store.writer)
        batch = await asyncio.to_thread(
            writer.prepare_session, messages, session_id, metadata, chunking or self.chunking
        )
        if batch.exchanges:
            segments = await self._segmenter.asegment(writer.as_documents(batch.exchanges))
            await asyncio.to_thread(writer.finish_topics, batch, segments, session_id)
        await store.aembed_pending(writer, batch.records)
        written = await asyncio.to_thread(writer.store, batch.records, batch.superseded, wait=wait)
        if wait:
            await asyncio.wrap_future(written)
        await asyncio.to_thread(self._log, store.user_id, batch, session_id)
        return batch.ids

    def _log(self, user_id: str, batch: Batch, session_id: str) -> None:
        """Append the batch's new or edited messages to the daily log, when one is kept (never one already logged)."""
        if self.daily_log_dir is None:
            return
        covered = {m for r in batch.records for m in decode_message_ids(r.metadata.get("message_ids"))}
        turns = [t for t in batch.turns if t.id in covered]  # new messages the store now holds
        edits = set(batch.edits)
        if any(t.id in edits for t in turns):  # an edit rewrites the logged entry in place: the old text goes
            replaced = replace_logged(self.daily_log_dir, user_id, session_id, [t for t in turns if t.id in edits])
            turns = [t for t in turns if t.id not in replaced]
        if turns:
            append_daily_log(self.daily_log_dir, user_id, session_id, turns, default=batch.default_timestamp)

    # -- consolidation ---------------------------------------------------------------------------
    def consolidate(self, session_id: str) -> Consolidation:
        """Replace a session's exchange chunks by topic segments (at the end of a live session).

        Stored exchange vectors are reused: only segments of several exchanges are embedded. Segments
        are written before the exchanges are deleted, with deterministic ids, so running it twice, or
        again after an interruption, leaves every message covered exactly once.
        """
        self.flush()
        writer = self._store().writer()
        stored, exchanges = writer.consolidation_input(session_id)
        if not exchanges:
            return Consolidation(session_id, 0, 0, 0)
        segments = self._segmenter.segment(writer.as_documents(exchanges), writer.vectors_of(exchanges))
        return writer.consolidation_output(session_id, stored, exchanges, segments)

    async def aconsolidate(self, session_id: str) -> Consolidation:
        """Async :meth:`consolidate`."""
        await self.aflush()
        writer = await asyncio.to_thread(self._store().writer)
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
        writer = self._store().writer()
        _, exchanges = writer.consolidation_input(session_id)
        return self._segmenter.similarity_profile(writer.as_documents(exchanges), writer.vectors_of(exchanges))

    # -- documents -------------------------------------------------------------------------------
    def add_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Store reference documents (``source_type="document"``), returned with ``[D: name]`` markers.

        The name is the basename of ``metadata["name"]``, ``["source"]`` or ``["title"]``. Long
        documents are split at paragraphs to the chunker's ``max_tokens``.
        """
        store = self._store()
        writer = store.writer()
        ids, records = writer.prepare_documents(documents, session_id)
        store.embed_pending(writer, records)
        writer.store(records, []).result()
        return ids

    async def aadd_documents(self, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
        """Async :meth:`add_documents`."""
        store = self._store()
        writer = await asyncio.to_thread(store.writer)
        ids, records = await asyncio.to_thread(writer.prepare_documents, documents, session_id)
        await store.aembed_pending(writer, records)
        await asyncio.wrap_future(await asyncio.to_thread(writer.store, records, []))
        return ids

    # -- retrieval -------------------------------------------------------------------------------
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
        defaults = {
            "k": self.k,
            "session_ids": self.session_ids,
            "exclude_session_ids": self.exclude_session_ids,
            "source_type": self.source_type,
            "score_threshold": self.score_threshold,
            "half_life_days": self.half_life_days,
            "recency_weight": self.recency_weight,
            "lexical_weight": self.lexical_weight,
            "time_window": "auto" if self.time_aware else None,
            "time_boost": self.time_boost,
        }
        return build_query({**self.search_kwargs, **options}, defaults, fetch_k=self.fetch_k, text=text)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = _check_query(query)
        q = self._query(kwargs, query)
        store = self._store(check_run=False)  # invoke checked the call's run
        text = store.dense_text(query) if self.strip_speaker_names else query
        vector = None if self._backend.embeds_itself else self._embeddings.embed_query(text)
        return store.search(query, vector, q, dense_text=text)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002 - BaseRetriever's signature
        **kwargs: Any,
    ) -> list[Document]:
        query = _check_query(query)
        q = await asyncio.to_thread(self._query, kwargs, query)  # may load dateparser (a time expression)
        store = self._store(check_run=False)
        text = await asyncio.to_thread(store.dense_text, query) if self.strip_speaker_names else query
        vector = None if self._backend.embeds_itself else await self._embeddings.aembed_query(text)
        return await asyncio.to_thread(functools.partial(store.search, dense_text=text), query, vector, q)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """This user's chunks among ``ids`` (unknown ids and other users' chunks are skipped), in ``ids`` order.

        Includes chunks still on their way to the store (``wait=False`` writes of this process).
        """
        return self._store().get_by_ids(ids)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async :meth:`get_by_ids`."""
        return await asyncio.to_thread(self.get_by_ids, ids)

    # -- start-up --------------------------------------------------------------------------------
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

    async def awarm_up(self) -> Self:
        """Async :meth:`warm_up`."""
        return await asyncio.to_thread(self.warm_up)
