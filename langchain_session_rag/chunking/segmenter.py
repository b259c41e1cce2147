"""Topic segmentation: consecutive exchanges grouped into one segment per topic.

A boundary is placed where the cosine similarity between the next exchange and the current
segment (its running centroid, or its last exchange) drops below ``threshold``. The exchange
embeddings computed to find the boundaries are reused: each segment of one exchange keeps that
exchange's vector, and only segments of several exchanges are embedded, once, in one batch. A
session of N exchanges stored as S segments costs at most N + S embedded texts, against 2N for the
usual pipeline that embeds exchanges to segment and then embeds everything again to store it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag._checks import check_documents, check_int
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.models.similarity import cosine
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter
from langchain_session_rag.stores.base import decode_message_ids

__all__ = ["Segment", "SimilarityProfile", "TopicSegmenter"]

Comparison = Literal["centroid", "previous"]


@dataclass
class SimilarityProfile:
    """The similarity series of a session and the boundaries chosen on it.

    ``similarities[i]`` compares exchange ``i + 1`` with the segment it could join (its running
    centroid, or exchange ``i``); ``boundaries`` are the indices of the exchanges that start a new
    segment (the first exchange, index 0, always does and is not listed).
    """

    similarities: list[float]
    boundaries: list[int]
    threshold: float
    comparison: Comparison


@dataclass
class Segment:
    """A topic segment: its document, the exchanges it groups, and its vector."""

    document: Document
    exchange_indices: list[int]
    vector: list[float] | None = None
    boundary_similarity: float | None = None
    texts_embedded: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class TopicSegmenter(BaseDocumentTransformer):
    r"""Groups the exchange chunks of one session into topic segments.

    Input documents are one session's exchange chunks in order (``SessionVectorMemory`` /
    ``ExchangeChunker`` output, with ``message_ids``, ``timestamp``, ``session_id`` metadata).

    Setup:
        .. code-block:: bash

            pip install 'torch==2.13.0' && pip install 'langchain-session-rag[local]'

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import TopicSegmenter, get_default_embeddings

            segmenter = TopicSegmenter(get_default_embeddings(), threshold=0.7)

    Usage:
        .. code-block:: python

            from langchain_core.documents import Document

            exchanges = [
                Document("User: How do I persist a Chroma collection?\nAssistant: Use PersistentClient(path=...).",
                         metadata={"session_id": "s1", "message_ids": ["u1", "a1"]}),
                Document("User: And where does Chroma store the files?\nAssistant: In the folder given as path.",
                         metadata={"session_id": "s1", "message_ids": ["u2", "a2"]}),
                Document("User: What should I cook tonight?\nAssistant: A mushroom risotto is quick.",
                         metadata={"session_id": "s1", "message_ids": ["u3", "a3"]}),
            ]
            segments = segmenter.transform_documents(exchanges)
            print([s.metadata["message_ids"] for s in segments])
            # [['u1', 'a1', 'u2', 'a2'], ['u3', 'a3']]

    Async:
        .. code-block:: python

            segments = await segmenter.atransform_documents(exchanges)
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        threshold: float = 0.7,
        comparison: Comparison = "centroid",
        min_exchanges: int = 1,
        max_tokens: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        """Configure the segmenter.

        Args:
            embeddings: The model that embeds exchanges and segments.
            threshold: A new segment starts where similarity falls below this; in (0, 1).
            comparison: Compare the next exchange with the running segment ``"centroid"`` or with the
                ``"previous"`` exchange.
            min_exchanges: A segment holds at least this many exchanges before a topic boundary may
                close it (``max_tokens`` can still close it earlier).
            max_tokens: Close a segment before it would exceed this many tokens; ``None`` for no limit.
            token_counter: Counts tokens; tiktoken ``cl100k_base`` by default.

        Raises:
            InvalidArgumentError: If an argument is of the wrong type or out of range.
        """
        if not isinstance(embeddings, Embeddings):
            msg = f"embeddings must be a LangChain Embeddings model, got {type(embeddings).__name__}."
            raise InvalidArgumentError(msg)
        if not isinstance(threshold, int | float) or not 0 < threshold < 1:
            msg = f"threshold must lie strictly between 0 and 1, got {threshold!r}."
            raise InvalidArgumentError(msg)
        if comparison not in ("centroid", "previous"):
            msg = f"comparison must be 'centroid' or 'previous', got {comparison!r}."
            raise InvalidArgumentError(msg)
        check_int("min_exchanges", min_exchanges, 1)
        check_int("max_tokens", max_tokens, 1, optional=True)
        self.embeddings = embeddings
        self.threshold = float(threshold)
        self.comparison: Comparison = comparison
        self.min_exchanges = min_exchanges
        self.max_tokens = max_tokens
        self.count = token_counter or tiktoken_counter()

    # -- boundaries (pure) ---------------------------------------------------------------------
    def profile(self, vectors: Sequence[Sequence[float]], token_counts: Sequence[int]) -> SimilarityProfile:
        """Find the boundaries of a session from its exchange vectors (no embedding call)."""
        similarities: list[float] = []
        boundaries: list[int] = []
        if not vectors:
            return SimilarityProfile([], [], self.threshold, self.comparison)
        total = list(vectors[0])
        size, tokens = 1, token_counts[0]
        for i in range(1, len(vectors)):
            ref = total if self.comparison == "centroid" else vectors[i - 1]
            sim = cosine(vectors[i], ref)
            similarities.append(sim)
            topic_break = sim < self.threshold and size >= self.min_exchanges
            too_long = self.max_tokens is not None and tokens + token_counts[i] > self.max_tokens
            if topic_break or too_long:
                boundaries.append(i)
                total, size, tokens = list(vectors[i]), 1, token_counts[i]
            else:
                total = [a + b for a, b in zip(total, vectors[i], strict=True)]
                size, tokens = size + 1, tokens + token_counts[i]
        return SimilarityProfile(similarities, boundaries, self.threshold, self.comparison)

    def _groups(self, profile: SimilarityProfile, n: int) -> list[list[int]]:
        starts = [0, *profile.boundaries, n]
        return [list(range(a, b)) for a, b in itertools.pairwise(starts) if b > a]

    def _build(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]]
    ) -> tuple[list[Segment], list[int]]:
        """Group documents; return segments (vectors of single-exchange ones set) and those needing one."""
        counts = [self.count(d.page_content) for d in documents]
        profile = self.profile(vectors, counts)
        sims = dict(zip(range(1, len(documents)), profile.similarities, strict=False))
        segments: list[Segment] = []
        pending: list[int] = []
        for topic_index, group in enumerate(self._groups(profile, len(documents))):
            first = documents[group[0]]
            message_ids: list[str] = []
            for i in group:
                for mid in decode_message_ids(documents[i].metadata.get("message_ids")):
                    if mid not in message_ids:
                        message_ids.append(mid)
            text = "\n".join(documents[i].page_content for i in group)
            boundary = sims.get(group[0]) if group[0] > 0 else None
            meta = {
                **first.metadata,
                "topic_index": topic_index,
                "message_ids": message_ids,
                "exchange_count": len(group),
                "token_count": sum(counts[i] for i in group) if len(group) == 1 else self.count(text),
                "chunking": "topic",
            }
            if boundary is not None:
                meta["boundary_similarity"] = boundary
            else:
                meta.pop("boundary_similarity", None)
            segment = Segment(
                document=Document(page_content=text, metadata=meta),
                exchange_indices=group,
                boundary_similarity=boundary,
            )
            if len(group) == 1:
                segment.vector = list(vectors[group[0]])
            else:
                pending.append(len(segments))
            segments.append(segment)
        return segments, pending

    # -- public --------------------------------------------------------------------------------
    def segment(self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None) -> list[Segment]:
        """Segment one session's exchanges, embedding only what is not known yet.

        Args:
            documents: The exchange chunks of one session, in order.
            vectors: Their embeddings, when already computed (e.g. stored); embedded here otherwise.

        Returns:
            The segments, each with its vector; ``texts_embedded`` on the first segment counts the texts
            embedded by this call.
        """
        docs = list(check_documents("documents", documents))
        fresh = vectors is None
        if vectors is None:
            vectors = self.embeddings.embed_documents([d.page_content for d in docs]) if docs else []
        segments, pending = self._build_checked(docs, vectors)
        texts = [segments[i].document.page_content for i in pending]
        new = self.embeddings.embed_documents(texts) if texts else []
        return self._attach(segments, pending, new, len(docs) if fresh else 0)

    async def asegment(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> list[Segment]:
        """Async :meth:`segment` (uses the model's native async embedding)."""
        docs = list(check_documents("documents", documents))
        fresh = vectors is None
        if vectors is None:
            vectors = await self.embeddings.aembed_documents([d.page_content for d in docs]) if docs else []
        segments, pending = self._build_checked(docs, vectors)
        texts = [segments[i].document.page_content for i in pending]
        new = await self.embeddings.aembed_documents(texts) if texts else []
        return self._attach(segments, pending, new, len(docs) if fresh else 0)

    def _build_checked(
        self, docs: list[Document], vectors: Sequence[Sequence[float]]
    ) -> tuple[list[Segment], list[int]]:
        self._check(docs, vectors)
        return self._build(docs, vectors)

    @staticmethod
    def _attach(
        segments: list[Segment], pending: list[int], vectors: list[list[float]], embedded: int
    ) -> list[Segment]:
        """Give pending segments their new vectors and record how many texts this call embedded."""
        for i, vector in zip(pending, vectors, strict=True):
            segments[i].vector = vector
        if segments:
            segments[0].texts_embedded = embedded + len(pending)
        return segments

    @staticmethod
    def _check(documents: Sequence[Document], vectors: Sequence[Sequence[float]]) -> None:
        if len(vectors) != len(documents):
            msg = f"Got {len(vectors)} vectors for {len(documents)} documents; give one vector per document."
            raise InvalidArgumentError(msg)

    def similarity_profile(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> SimilarityProfile:
        """Return the similarity series and chosen boundaries of a session, for plotting."""
        docs = list(check_documents("documents", documents))
        if vectors is None:
            vectors = self.embeddings.embed_documents([d.page_content for d in docs]) if docs else []
        self._check(docs, vectors)
        return self.profile(vectors, [self.count(d.page_content) for d in docs])

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Return the topic segments of one session's exchanges (``vectors=`` may be passed)."""
        return [s.document for s in self.segment(documents, kwargs.get("vectors"))]

    async def atransform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Async :meth:`transform_documents`."""
        return [s.document for s in await self.asegment(documents, kwargs.get("vectors"))]
