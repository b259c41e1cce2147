"""Scores: hybrid fusion and recency decay."""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86_400.0


def fused_score(similarity: float, lexical: float, *, lexical_weight: float) -> float:
    """Hybrid relevance: ``(1 − lexical_weight) × similarity + lexical_weight × lexical``.

    ``lexical`` is the BM25 score divided by the best BM25 score of the query, so it lies in [0, 1].
    """
    return (1.0 - lexical_weight) * similarity + lexical_weight * lexical


def decayed_score(
    similarity: float, *, age_days: float, half_life_days: float | None, recency_weight: float = 0.5
) -> float:
    """Apply recency decay to a similarity.

    ``score = similarity × ((1 − recency_weight) + recency_weight × 0.5 ** (age_days / half_life_days))``

    With ``recency_weight=1`` a memory one half-life old counts half as much as an identical memory
    from now; with the default ``0.5`` an old memory keeps at least half of its similarity, so
    recency breaks ties between similar memories without burying a clearly relevant old one.
    Ages below zero (future timestamps) count as zero. With ``half_life_days=None`` the similarity
    is returned unchanged.
    """
    if half_life_days is None:
        return similarity
    decay = math.pow(0.5, max(age_days, 0.0) / half_life_days)
    return similarity * ((1.0 - recency_weight) + recency_weight * decay)
