"""The write flows of a memory: a conversation batch, documents, consolidation (sync and async share each step).

Each flow plans with the user's :class:`~langchain_session_rag.memory.scoped.Writers`, embeds what needs a
vector, and publishes through the write queue; only the segmenter and embedding calls differ between the sync
and async bodies.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from langchain_session_rag.chunking.messages import MessageLike
from langchain_session_rag.chunking.segmenter import SimilarityProfile
from langchain_session_rag.memory.consolidation import Consolidation, consolidation_input, consolidation_output
from langchain_session_rag.memory.daily_log import append_daily_log
from langchain_session_rag.memory.documents import document_records
from langchain_session_rag.memory.erasure import replace_logged
from langchain_session_rag.memory.ingest import Batch, Chunking
from langchain_session_rag.memory.service import MemoryService
from langchain_session_rag.memory.topics import as_documents, vectors_of
from langchain_session_rag.stores.base import Record, decode_message_ids


def add_session(
    service: MemoryService,
    user_id: str,
    messages: Sequence[MessageLike],
    *,
    session_id: str,
    metadata: dict[str, Any] | None,
    chunking: Chunking,
    wait: bool,
) -> list[str]:
    """Store a conversation batch for ``user_id`` (see ``SessionVectorMemory.add_messages``)."""
    store = service.user(user_id)
    writers = store.writers()
    batch = writers.plan.prepare(messages, session_id, metadata, chunking)
    if batch.exchanges:
        segments = service.writing.segmenter.segment(as_documents(batch.exchanges))
        writers.topics.finish(batch, segments, session_id)
    store.embed_pending(batch.records)
    wait = service.waits(wait)
    written = writers.commit.store(batch.records, batch.superseded, wait=wait)
    if wait:
        written.result()
    _log(service, user_id, batch, session_id)
    return batch.ids


async def aadd_session(
    service: MemoryService,
    user_id: str,
    messages: Sequence[MessageLike],
    *,
    session_id: str,
    metadata: dict[str, Any] | None,
    chunking: Chunking,
    wait: bool,
) -> list[str]:
    """Async :func:`add_session`."""
    store = service.user(user_id)
    writers = await asyncio.to_thread(store.writers)
    batch = await asyncio.to_thread(writers.plan.prepare, messages, session_id, metadata, chunking)
    if batch.exchanges:
        segments = await service.writing.segmenter.asegment(as_documents(batch.exchanges))
        await asyncio.to_thread(writers.topics.finish, batch, segments, session_id)
    await store.aembed_pending(batch.records)
    wait = service.waits(wait)
    written = await asyncio.to_thread(writers.commit.store, batch.records, batch.superseded, wait=wait)
    if wait:
        await asyncio.wrap_future(written)
    await asyncio.to_thread(_log, service, user_id, batch, session_id)
    return batch.ids


def _log(service: MemoryService, user_id: str, batch: Batch, session_id: str) -> None:
    """Append the batch's new or edited messages to the daily log, when one is kept (never one already logged)."""
    folder = service.writing.daily_log_dir
    if folder is None:
        return
    cipher = service.cipher(user_id)
    covered = {m for r in batch.records for m in decode_message_ids(r.metadata.get("message_ids"))}
    turns = [t for t in batch.turns if t.id in covered]  # new messages the store now holds
    edits = set(batch.edits)
    if any(t.id in edits for t in turns):  # an edit rewrites the logged entry in place: the old text goes
        replaced = replace_logged(folder, user_id, session_id, [t for t in turns if t.id in edits], cipher)
        turns = [t for t in turns if t.id not in replaced]
    if turns:
        append_daily_log(folder, user_id, session_id, turns, default=batch.default_timestamp, cipher=cipher)


def consolidate(service: MemoryService, user_id: str, session_id: str) -> Consolidation:
    """Replace a session's exchange chunks by topic segments (see ``SessionVectorMemory.consolidate``)."""
    service.flush()
    writers = service.user(user_id).writers()
    stored, exchanges = consolidation_input(writers.chunks, session_id)
    if not exchanges:
        return Consolidation(session_id, 0, 0, 0)
    segments = service.writing.segmenter.segment(as_documents(exchanges), vectors_of(exchanges))
    return consolidation_output(
        writers.topics, writers.commit, session_id=session_id, stored=stored, exchanges=exchanges, segments=segments
    )


async def aconsolidate(service: MemoryService, user_id: str, session_id: str) -> Consolidation:
    """Async :func:`consolidate`."""
    await asyncio.to_thread(service.flush)
    writers = await asyncio.to_thread(service.user(user_id).writers)
    stored, exchanges = await asyncio.to_thread(consolidation_input, writers.chunks, session_id)
    if not exchanges:
        return Consolidation(session_id, 0, 0, 0)
    segments = await service.writing.segmenter.asegment(as_documents(exchanges), vectors_of(exchanges))
    return await asyncio.to_thread(
        functools.partial(
            consolidation_output, session_id=session_id, stored=stored, exchanges=exchanges, segments=segments
        ),
        writers.topics,
        writers.commit,
    )


def similarity_profile(service: MemoryService, user_id: str, session_id: str) -> SimilarityProfile:
    """The similarity series and topic boundaries of a session's stored exchanges (stored vectors reused)."""
    service.flush()
    writers = service.user(user_id).writers()
    _, exchanges = consolidation_input(writers.chunks, session_id)
    return service.writing.segmenter.similarity_profile(as_documents(exchanges), vectors_of(exchanges))


def _document_records(
    service: MemoryService, user_id: str, documents: Sequence[Document], session_id: str
) -> tuple[list[str], list[Record]]:
    service.refuse_secret_ids(session_id=session_id)
    if service.writing.redact_secrets:
        documents = [
            Document(service.redacted(d.page_content), metadata=service.redacted_metadata(d.metadata) or {}, id=d.id)
            for d in documents
        ]
    return document_records(
        documents,
        session_id,
        backend=service.backend,
        user_id=user_id,
        model_id=service.model_id,
        chunker=service.writing.chunker,
    )


def add_documents(service: MemoryService, user_id: str, documents: Sequence[Document], session_id: str) -> list[str]:
    """Store reference documents for ``user_id`` (see ``SessionVectorMemory.add_documents``)."""
    ids, records = _document_records(service, user_id, documents, session_id)
    service.user(user_id).save(records)
    return ids


async def aadd_documents(
    service: MemoryService, user_id: str, documents: Sequence[Document], session_id: str
) -> list[str]:
    """Async :func:`add_documents`."""
    store = service.user(user_id)
    ids, records = await asyncio.to_thread(_document_records, service, user_id, documents, session_id)
    commit = (await asyncio.to_thread(store.writers)).commit
    await store.aembed_pending(records)
    await asyncio.wrap_future(await asyncio.to_thread(commit.store, records, []))
    return ids
