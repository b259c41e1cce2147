"""Scores: similarity, recency decay, and source markers."""

from __future__ import annotations

import math
from datetime import datetime

__all__ = ["SECONDS_PER_DAY", "decayed_score", "marker"]

SECONDS_PER_DAY = 86_400.0


def decayed_score(similarity: float, *, age_days: float, half_life_days: float | None) -> float:
    """Apply recency decay to a similarity.

    ``score = similarity × 0.5 ** (age_days / half_life_days)``: a memory one half-life old counts
    half as much as an identical memory from now. Ages below zero (future timestamps) count as zero.
    With ``half_life_days=None`` the similarity is returned unchanged.
    """
    if half_life_days is None:
        return similarity
    return similarity * math.pow(0.5, max(age_days, 0.0) / half_life_days)


def marker(source_type: str, *, timestamp: datetime | None = None, name: str | None = None) -> str:
    """Return the citation marker of a chunk: ``[S: 2026-02-06]`` or ``[D: readme.md]``."""
    if source_type == "document":
        return f"[D: {name or 'document'}]"
    return f"[S: {timestamp.date().isoformat() if timestamp else 'unknown date'}]"
