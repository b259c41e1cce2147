"""The vectors a semantic cache keeps in process: recent question vectors and the guards' word vectors."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from langchain_session_rag import _fork

RECENT_VECTORS = 256
"""Question vectors kept from lookups for the update that follows a miss (same text, same model)."""
WORD_VECTORS = 4096
"""Word vectors kept for the word-alignment guard."""


class VectorMemo:
    """Bounded, thread-safe memos of question vectors (for the update after a miss) and unit word vectors."""

    def __init__(self) -> None:
        """Start empty."""
        self._lock = _fork.lock()
        self._recent: OrderedDict[str, list[float]] = OrderedDict()
        self._words: OrderedDict[str, list[float]] = OrderedDict()

    def recalled(self, text: str) -> list[float] | None:
        """The vector of a question looked up recently, if kept."""
        with self._lock:
            return self._recent.get(text)

    def remember(self, text: str, vector: list[float]) -> list[float]:
        """Keep a question's vector (the oldest goes beyond ``RECENT_VECTORS``); return it."""
        with self._lock:
            self._recent[text] = vector
            self._recent.move_to_end(text)
            while len(self._recent) > RECENT_VECTORS:
                self._recent.popitem(last=False)
        return vector

    def word_similarity(self, embeddings: Embeddings, left: Sequence[str], right: Sequence[str]) -> list[list[float]]:
        """Cosine similarities of single words (rows: ``left``), each word embedded once and kept."""
        with self._lock:
            missing = [w for w in dict.fromkeys([*left, *right]) if w not in self._words]
        if missing:
            vectors = embeddings.embed_documents(missing)
            with self._lock:
                for word, vector in zip(missing, vectors, strict=True):
                    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
                    self._words[word] = [x / norm for x in vector]
                while len(self._words) > WORD_VECTORS:
                    self._words.popitem(last=False)
        with self._lock:
            lv = [self._words[w] for w in left]
            rv = [self._words[w] for w in right]
        return [[sum(x * y for x, y in zip(a, b, strict=True)) for b in rv] for a in lv]
