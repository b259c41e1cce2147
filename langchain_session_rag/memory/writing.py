"""The write side of ``SessionVectorMemory``: conversations, documents, consolidation, reads by id, warming up.

Plain functions over the memory, bound as its methods by :mod:`~langchain_session_rag.memory.retriever`; each
names the user the call acts for and hands the work to :mod:`~langchain_session_rag.memory.sessions` or the
user's side of the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.documents import Document

from langchain_session_rag._checks import check_ids
from langchain_session_rag.chunking.messages import MessageLike
from langchain_session_rag.chunking.segmenter import SimilarityProfile
from langchain_session_rag.memory import sessions
from langchain_session_rag.memory.admin import acting, user_store
from langchain_session_rag.memory.consolidation import Consolidation
from langchain_session_rag.memory.ingest import Chunking

if TYPE_CHECKING:
    from langchain_session_rag.memory.retriever import SessionVectorMemory

M = TypeVar("M", bound="SessionVectorMemory")


def flush(self: SessionVectorMemory) -> None:
    """Wait until every write of this memory has reached the store.

    Writes made with ``wait=False`` (the graph's) are retrievable by this process at once and reach the store
    within ``runtime.write_linger`` (0.1 s by default), merged with the writes made meanwhile; other processes
    see them from then on.

    Raises:
        StoreWriteError: A write made with ``wait=False`` failed; its chunks are not stored.
    """
    self.service.flush()


def add_messages(  # noqa: D417 - bound as a method of the memory: self is the memory
    self: SessionVectorMemory,
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
        acting(self),
        messages,
        session_id=session_id,
        metadata=metadata,
        chunking=chunking or self.chunking,
        wait=wait,
    )


async def aadd_messages(
    self: SessionVectorMemory,
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
        acting(self),
        messages,
        session_id=session_id,
        metadata=metadata,
        chunking=chunking or self.chunking,
        wait=wait,
    )


def consolidate(self: SessionVectorMemory, session_id: str) -> Consolidation:
    """Replace a session's exchange chunks by topic segments (at the end of a live session).

    Stored exchange vectors are reused: only segments of several exchanges are embedded. Segments
    are written before the exchanges are deleted, with deterministic ids, so running it twice, or
    again after an interruption, leaves every message covered exactly once.
    """
    return sessions.consolidate(self.service, acting(self), session_id)


async def aconsolidate(self: SessionVectorMemory, session_id: str) -> Consolidation:
    """Async :meth:`consolidate`."""
    return await sessions.aconsolidate(self.service, acting(self), session_id)


def similarity_profile(self: SessionVectorMemory, session_id: str) -> SimilarityProfile:
    """The similarity series and topic boundaries of a session's stored exchanges, for plotting.

    Uses the stored vectors (no embedding call). A session already consolidated has no exchange
    chunks left and gives an empty profile.
    """
    return sessions.similarity_profile(self.service, acting(self), session_id)


def add_documents(self: SessionVectorMemory, documents: Sequence[Document], *, session_id: str = "") -> list[str]:
    """Store reference documents (``source_type="document"``), returned with ``[D: name]`` markers.

    The name is the basename of ``metadata["name"]``, ``["source"]`` or ``["title"]``. Long
    documents are split at paragraphs to the chunker's ``max_tokens``.
    """
    return sessions.add_documents(self.service, acting(self), documents, session_id)


async def aadd_documents(
    self: SessionVectorMemory, documents: Sequence[Document], *, session_id: str = ""
) -> list[str]:
    """Async :meth:`add_documents`."""
    return await sessions.aadd_documents(self.service, acting(self), documents, session_id)


def get_by_ids(self: SessionVectorMemory, ids: Sequence[str], /) -> list[Document]:
    """This user's chunks among ``ids`` (unknown ids and other users' chunks are skipped), in ``ids`` order.

    Includes chunks still on their way to the store (``wait=False`` writes of this process).
    """
    return user_store(self).get_by_ids(check_ids(ids))


def warm_up(self: M) -> M:
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
