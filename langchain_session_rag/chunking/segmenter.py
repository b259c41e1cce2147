"""Topic segmentation: consecutive exchanges grouped into one segment per topic.

The boundaries are placed by ``method`` (see :class:`TopicSegmenter`; the depth scoring is
:mod:`~langchain_session_rag.chunking._depth`). The exchange embeddings computed to find the boundaries are reused:
each segment of one exchange keeps that exchange's vector, and only segments of several exchanges are embedded,
once, in one batch. A session of N exchanges stored as S segments costs at most N + S embedded texts, against 2N
for the usual pipeline that embeds exchanges to segment and then embeds everything again to store it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag._checks import check_documents, check_int
from langchain_session_rag.chunking._depth import block_scores, depth_boundaries, depth_scores
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.models.embeddings import DEFAULT_EMBEDDING_MODEL, TORCH_EMBEDDING_MODEL, embedding_model_id
from langchain_session_rag.models.similarity import cosine
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter
from langchain_session_rag.stores.base import decode_message_ids

Comparison = Literal["centroid", "previous"]
Method = Literal["depth", "threshold"]


@dataclass
class SimilarityProfile:
    """The similarity series of a session and the boundaries chosen on it.

    ``similarities[i]`` scores the gap before exchange ``i + 1``: with ``method="threshold"`` it compares that
    exchange with the segment it could join (its running centroid, or exchange ``i``); with ``method="depth"`` it
    compares the ``window`` exchanges before the gap with those after it, and ``depths[i]`` is that gap's depth.
    ``boundaries`` are the indices of the exchanges that start a new segment (the first exchange, index 0,
    always does and is not listed); ``topic_boundaries`` are those placed by the topic rule rather than by
    ``max_tokens``.
    """

    similarities: list[float]
    boundaries: list[int]
    threshold: float
    comparison: Comparison
    method: Method = "threshold"
    depths: list[float] = field(default_factory=list)
    topic_boundaries: list[int] = field(default_factory=list)


@dataclass
class Segment:
    """A topic segment: its document, the exchanges it groups, and its vector."""

    document: Document
    exchange_indices: list[int]
    vector: list[float] | None = None
    boundary_similarity: float | None = None
    texts_embedded: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    boundary_depth: float | None = None


# The depth defaults are the best mean of Pk and WindowDiff with all-MiniLM-L6-v2 on the tuning half of
# benchmarks/segmentation.py (window 1-3 x cutoff -0.5..1 x min_depth 0.05..0.4 x floor 0-0.2).
DEFAULT_WINDOW = 2
"""Exchanges averaged on each side of a gap by ``method="depth"``."""
DEFAULT_DEPTH_CUTOFF = 0.5
"""``method="depth"``: a boundary's depth exceeds ``mean + DEFAULT_DEPTH_CUTOFF * std`` of the session's depths."""
DEFAULT_MIN_DEPTH = 0.25
"""``method="depth"``: the absolute floor on a boundary's depth that keeps a one-topic session whole."""
DEFAULT_FLOOR = 0.1
"""``method="depth"``: the gap score below which a session of two or three exchanges is cut."""


def _check_range(name: str, value: object, low: float, high: float, *, high_open: bool = False) -> None:
    inside = isinstance(value, int | float) and not isinstance(value, bool) and low <= value
    if not inside or not (value < high if high_open else value <= high):  # type: ignore[operator]
        bracket = ")" if high_open else "]"
        msg = f"{name} must be a number in [{low:g}, {high:g}{bracket}, got {value!r}."
        raise InvalidArgumentError(msg)


CALIBRATED_THRESHOLDS: dict[str, float] = {DEFAULT_EMBEDDING_MODEL: 0.15, TORCH_EMBEDDING_MODEL: 0.15}
"""Thresholds calibrated per embedding model (by its ``embedding_model_id``), used when no method is given.

all-MiniLM-L6-v2: 0.15 (centroid), the best mean of Pk and WindowDiff over 0.05-0.7 on the tuning sessions and
the tuning conversations of ``benchmarks/segmentation.py``. On realistic conversations that drift within a topic
it cuts less than the depth method (Pk 0.144 against 0.271 on the 8 reported conversations, every one-topic
conversation whole); on sessions glued from unrelated topics the depth method is better (0.095 against 0.044).
Models without an entry use the depth method, which needs no calibration."""


def _union(documents: Sequence[Document], group: Sequence[int], key: str) -> list[str]:
    """The distinct values of a list-valued metadata key (a list, or JSON text of one) over a group, in order."""
    return list(dict.fromkeys(v for i in group for v in decode_message_ids(documents[i].metadata.get(key))))


class TopicSegmenter(BaseDocumentTransformer):
    r"""Groups the exchange chunks of one session into topic segments.

    Input documents are one session's exchange chunks in order (``SessionVectorMemory`` /
    ``ExchangeChunker`` output, with ``message_ids``, ``timestamp``, ``session_id`` metadata).

    Setup:
        .. code-block:: bash

            pip install langchain-session-rag

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import TopicSegmenter, get_default_embeddings

            segmenter = TopicSegmenter(get_default_embeddings())  # the bundled model's calibrated threshold

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
            print(segments[1].metadata["segmentation"])
            # threshold

    Async:
        .. code-block:: python

            segments = await segmenter.atransform_documents(exchanges)
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        threshold: float | None = None,
        comparison: Comparison | None = None,
        min_exchanges: int = 1,
        max_tokens: int | None = None,
        token_counter: TokenCounter | None = None,
        method: Method | None = None,
        window: int = DEFAULT_WINDOW,
        depth_cutoff: float = DEFAULT_DEPTH_CUTOFF,
        min_depth: float = DEFAULT_MIN_DEPTH,
        floor: float = DEFAULT_FLOOR,
    ) -> None:
        """Configure the segmenter.

        Args:
            embeddings: The model that embeds exchanges and segments.
            threshold: With ``method="threshold"``, a new segment starts where similarity falls below this;
                in (0, 1); 0.7 when not given (chosen for nomic-embed-text).
            comparison: With ``method="threshold"``, compare the next exchange with the running segment
                ``"centroid"`` (when not given) or with the ``"previous"`` exchange.
            min_exchanges: A segment holds at least this many exchanges before a topic boundary may
                close it (with ``"depth"``, the segments on both sides of a topic boundary do); ``max_tokens``
                can still close a segment earlier.
            max_tokens: Close a segment before it would exceed this many tokens; ``None`` for no limit.
            token_counter: Counts tokens; tiktoken ``cl100k_base`` by default.
            method: ``"depth"``: boundaries at deep valleys of the session's own similarity profile (TextTiling);
                ``"threshold"``: boundaries where similarity falls below ``threshold``. When not given:
                ``"threshold"`` if ``threshold`` or ``comparison`` is given (so code written before the depth
                method keeps its behaviour); else ``"threshold"`` at the model's calibrated threshold when
                :data:`CALIBRATED_THRESHOLDS` has one (the bundled all-MiniLM-L6-v2: 0.15); else ``"depth"``.
            window: With ``"depth"``, how many exchanges on each side of a gap are averaged to score it; >= 1.
            depth_cutoff: With ``"depth"``, a valley is a boundary when its depth exceeds
                ``mean + depth_cutoff * std`` of the session's depth scores; in [-3, 3].
            min_depth: With ``"depth"``, and whatever the session, a valley shallower than this is never a
                boundary, so a session whose similarities hardly vary stays one segment; in [0, 4).
            floor: With ``"depth"``, sessions of two or three exchanges (too short for a valley with neighbours
                on both sides) are cut where the gap score falls below this; in [-1, 1].

        Raises:
            InvalidArgumentError: If an argument is of the wrong type or out of range.
        """
        if not isinstance(embeddings, Embeddings):
            msg = f"embeddings must be a LangChain Embeddings model, got {type(embeddings).__name__}."
            raise InvalidArgumentError(msg)
        if method is None:
            calibrated = CALIBRATED_THRESHOLDS.get(embedding_model_id(embeddings))
            if threshold is None and comparison is None and calibrated is not None:
                method, threshold = "threshold", calibrated
            else:
                method = "depth" if threshold is None and comparison is None else "threshold"
        threshold = 0.7 if threshold is None else threshold
        comparison = comparison or "centroid"
        if not isinstance(threshold, int | float) or not 0 < threshold < 1:
            msg = f"threshold must lie strictly between 0 and 1, got {threshold!r}."
            raise InvalidArgumentError(msg)
        if comparison not in ("centroid", "previous"):
            msg = f"comparison must be 'centroid' or 'previous', got {comparison!r}."
            raise InvalidArgumentError(msg)
        if method not in ("depth", "threshold"):
            msg = f"method must be 'depth' or 'threshold', got {method!r}."
            raise InvalidArgumentError(msg)
        check_int("min_exchanges", min_exchanges, 1)
        check_int("max_tokens", max_tokens, 1, optional=True)
        check_int("window", window, 1)
        _check_range("depth_cutoff", depth_cutoff, -3.0, 3.0)
        _check_range("min_depth", min_depth, 0.0, 4.0, high_open=True)
        _check_range("floor", floor, -1.0, 1.0)
        self.embeddings = embeddings
        self.threshold = float(threshold)
        self.comparison: Comparison = comparison
        self.min_exchanges = min_exchanges
        self.max_tokens = max_tokens
        self.count = token_counter or tiktoken_counter()
        self.method: Method = method
        self.window = window
        self.depth_cutoff = float(depth_cutoff)
        self.min_depth = float(min_depth)
        self.floor = float(floor)

    # -- boundaries (pure) ---------------------------------------------------------------------
    def profile(self, vectors: Sequence[Sequence[float]], token_counts: Sequence[int]) -> SimilarityProfile:
        """Find the boundaries of a session from its exchange vectors (no embedding call)."""
        if self.method == "depth":
            return self._depth_profile(vectors, token_counts)
        similarities: list[float] = []
        boundaries: list[int] = []
        topic: list[int] = []
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
                if topic_break:
                    topic.append(i)
                total, size, tokens = list(vectors[i]), 1, token_counts[i]
            else:
                total = [a + b for a, b in zip(total, vectors[i], strict=True)]
                size, tokens = size + 1, tokens + token_counts[i]
        return SimilarityProfile(similarities, boundaries, self.threshold, self.comparison, topic_boundaries=topic)

    def _depth_profile(self, vectors: Sequence[Sequence[float]], token_counts: Sequence[int]) -> SimilarityProfile:
        scores = block_scores(vectors, self.window)
        depths = depth_scores(scores)
        topic = depth_boundaries(
            scores,
            depths,
            cutoff=self.depth_cutoff,
            min_depth=self.min_depth,
            floor=self.floor,
            min_exchanges=self.min_exchanges,
        )
        boundaries: list[int] = []
        tokens = token_counts[0] if token_counts else 0
        for i in range(1, len(vectors)):
            too_long = self.max_tokens is not None and tokens + token_counts[i] > self.max_tokens
            if i in topic or too_long:
                boundaries.append(i)
                tokens = token_counts[i]
            else:
                tokens += token_counts[i]
        return SimilarityProfile(
            scores, boundaries, self.threshold, self.comparison, method="depth", depths=depths, topic_boundaries=topic
        )

    def _groups(self, profile: SimilarityProfile, n: int) -> list[list[int]]:
        starts = [0, *profile.boundaries, n]
        return [list(range(a, b)) for a, b in itertools.pairwise(starts) if b > a]

    def _build(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]]
    ) -> tuple[list[Segment], list[int]]:
        """Group documents; return segments (vectors of single-exchange ones set) and those needing one."""
        self._check(documents, vectors)
        counts = [self.count(d.page_content) for d in documents]
        profile = self.profile(vectors, counts)
        sims = dict(zip(range(1, len(documents)), profile.similarities, strict=False))
        segments: list[Segment] = []
        pending: list[int] = []
        for topic_index, group in enumerate(self._groups(profile, len(documents))):
            first = documents[group[0]]
            message_ids = _union(documents, group, "message_ids")
            speakers = _union(documents, group, "speakers")
            text = "\n".join(documents[i].page_content for i in group)
            boundary = sims.get(group[0]) if group[0] > 0 else None
            depth = profile.depths[group[0] - 1] if group[0] > 0 and profile.depths else None
            meta = {
                **first.metadata,
                "topic_index": topic_index,
                "message_ids": message_ids,
                "exchange_count": len(group),
                "token_count": sum(counts[i] for i in group) if len(group) == 1 else self.count(text),
                "chunking": "topic",
                "segmentation": self.method,
            }
            for key in ("boundary_similarity", "boundary_depth", "boundary"):
                meta.pop(key, None)
            if speakers:
                meta["speakers"] = speakers
            if boundary is not None:
                meta["boundary_similarity"] = boundary
                meta["boundary"] = "topic" if group[0] in profile.topic_boundaries else "max_tokens"
            if depth is not None:
                meta["boundary_depth"] = depth
            segment = Segment(
                document=Document(page_content=text, metadata=meta),
                exchange_indices=group,
                boundary_similarity=boundary,
                boundary_depth=depth,
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
        segments, pending = self._build(docs, vectors)
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
        segments, pending = self._build(docs, vectors)
        texts = [segments[i].document.page_content for i in pending]
        new = await self.embeddings.aembed_documents(texts) if texts else []
        return self._attach(segments, pending, new, len(docs) if fresh else 0)

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
