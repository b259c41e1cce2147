"""TextTiling depth scoring (Hearst 1997) over exchange vectors: the pure math of ``method="depth"``.

Gap ``i`` lies between exchanges ``i - 1`` and ``i`` (``1 <= i < n``). Its score is the cosine between the mean
vector of up to ``window`` exchanges on its left and the mean of up to ``window`` on its right. A gap that is a
valley of that series gets a depth: how far the score climbs on each side before it falls again,
``(left peak - s) + (right peak - s)``; a gap that is not a valley has depth 0. Boundaries go at the deepest
valleys whose depth passes both a cutoff relative to the session (``mean + c * std`` of the depths) and an
absolute floor, so a session whose similarities hardly vary is never cut.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from langchain_session_rag.models.similarity import cosine


def _mean(vectors: Sequence[Sequence[float]]) -> list[float]:
    return [sum(column) / len(vectors) for column in zip(*vectors, strict=True)]


def block_scores(vectors: Sequence[Sequence[float]], window: int) -> list[float]:
    """Score every gap: ``scores[i - 1]`` compares the ``window`` exchanges before gap ``i`` with those after it."""
    return [
        cosine(_mean(vectors[max(0, i - window) : i]), _mean(vectors[i : i + window])) for i in range(1, len(vectors))
    ]


def depth_scores(scores: Sequence[float]) -> list[float]:
    """The depth of each gap score: the climb to the highest score on each side, 0 where the gap is no valley.

    A side with no neighbour (the first or last gap) adds nothing, as in TextTiling.
    """
    depths: list[float] = []
    for i, s in enumerate(scores):
        left = scores[i - 1] if i > 0 else math.inf
        right = scores[i + 1] if i + 1 < len(scores) else math.inf
        if s > left or s > right:
            depths.append(0.0)
            continue
        peak_left = s
        for j in range(i - 1, -1, -1):
            if scores[j] < peak_left:
                break
            peak_left = scores[j]
        peak_right = s
        for j in range(i + 1, len(scores)):
            if scores[j] < peak_right:
                break
            peak_right = scores[j]
        depths.append((peak_left - s) + (peak_right - s))
    return depths


def depth_boundaries(
    scores: Sequence[float],
    depths: Sequence[float],
    *,
    cutoff: float,
    min_depth: float,
    floor: float,
    min_exchanges: int,
) -> list[int]:
    """Choose the boundaries (indices of the exchanges that open a segment) from the gap scores and depths.

    With three gaps or more, a gap is a candidate when its depth exceeds both ``min_depth`` and
    ``mean(depths) + cutoff * std(depths)``; the first and the last gap, whose blocks hold a single exchange on one
    side and whose depth climbs on one side only, are candidates only when their score also falls below ``floor``
    (their scores run lower than the others', so a one-topic session would otherwise be cut at its edges). With one
    or two gaps (sessions of two or three exchanges) a valley has
    at most one neighbour, so depth says little: a gap is a candidate when its score falls below ``floor``.
    Candidates are taken deepest first (lowest score first in short sessions), each kept only if every segment
    it leaves holds at least ``min_exchanges`` exchanges.
    """
    n = len(scores) + 1
    if len(scores) >= 3:  # noqa: PLR2004 - a valley with a neighbour on both sides needs three gaps
        relative = statistics.fmean(depths) + cutoff * statistics.pstdev(depths)
        limit = max(min_depth, relative)
        edge_gaps = {0, len(scores) - 1}
        passing = [i for i, d in enumerate(depths) if d > limit and (i not in edge_gaps or scores[i] < floor)]
        candidates = sorted((i + 1 for i in passing), key=lambda g: -depths[g - 1])
    else:
        candidates = sorted((i + 1 for i, s in enumerate(scores) if s < floor), key=lambda g: scores[g - 1])
    chosen: list[int] = []
    for gap in candidates:
        edges = sorted([0, n, *chosen])
        after = next(e for e in edges if e > gap)
        before = max(e for e in edges if e < gap)
        if gap - before >= min_exchanges and after - gap >= min_exchanges:
            chosen.append(gap)
    return sorted(chosen)
