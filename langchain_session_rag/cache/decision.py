"""What a cache lookup decided, and the counts of decisions."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


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
    """``"hit"`` or a miss reason: ``empty``, ``below_threshold``, ``expired``, ``stale_version``, ``guard``,
    ``volatile``, ``context_dependent``, ``no_user``, ``no_text`` or ``personal_context``."""
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
