"""A small in-process BM25 index over one user's chunks, for hybrid lexical + dense ranking.

Dense embeddings of a small model blur names, numbers and rare words; BM25 catches them. Each
user's index lives in that user's in-process replica (:mod:`langchain_session_rag.memory.replica`) and is
updated document by document as the replica follows the store.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Container
from typing import Any

__all__ = ["BM25Index", "stem", "tokenize"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (
        "a an the and or but if of to in on at by for with about as is are was were be been being do does did "
        "have has had i you he she it we they me him her them my your his its our their this that these those "
        "what which who whom when where why how not no so than too very can will just should would could "
        "there here from up down out over into also then some any all each more most other such only own same "
        "s t don now user assistant"
    ).split()
)


_VOWEL = re.compile(r"[aeiouy]")
_SUFFIXES = (("ies", "y", 5), ("ing", "", 6), ("ed", "", 5), ("ly", "", 6), ("es", "", 5), ("s", "", 4))


@functools.lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light English suffix stripper: ``painted``, ``painting``, ``paints`` all give ``paint``.

    Strips one of -ies/-ing/-ed/-ly/-es/-s when a vowel stays in the stem, undoubles a final
    consonant after -ing/-ed (``running`` → ``run``), then drops a final -e (``loved``, ``love`` → ``lov``).
    """
    if len(word) <= 3 or word.isdigit():  # noqa: PLR2004
        return word
    for suffix, replacement, min_length in _SUFFIXES:
        if word.endswith(suffix) and len(word) >= min_length and not word.endswith("ss"):
            base = word[: -len(suffix)] + replacement
            if not _VOWEL.search(base):
                continue
            if suffix in {"ing", "ed"} and len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":  # noqa: PLR2004
                base = base[:-1]
            word = base
            break
    if len(word) > 3 and word.endswith("e"):  # noqa: PLR2004
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case words and numbers, without stop words, stemmed with :func:`stem`."""
    return [stem(word) for word in _WORD.findall(text.lower()) if word not in _STOP]


UBIQUITOUS = 0.95
"""Query terms found in more than this share of a user's chunks are skipped (their idf is below 0.05)."""


class BM25Index:
    """Okapi BM25 over documents added and removed by id."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        """Create an empty index with the usual BM25 parameters."""
        self.k1, self.b = k1, b
        self._terms: dict[str, Counter[str]] = {}
        self._lengths: dict[str, int] = {}
        self._df: Counter[str] = Counter()
        self._postings: dict[str, set[str]] = {}
        self.metadata: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        """Number of indexed documents."""
        return len(self._terms)

    @property
    def ids(self) -> set[str]:
        """Ids of the indexed documents."""
        return set(self._terms)

    def add(self, doc_id: str, text: str, metadata: dict[str, Any] | None = None) -> None:
        """Index a document (replacing one with the same id)."""
        if doc_id in self._terms:
            self.remove(doc_id)
        terms = Counter(tokenize(text))
        self._terms[doc_id] = terms
        self._lengths[doc_id] = sum(terms.values())
        self.metadata[doc_id] = metadata or {}
        for term in terms:
            self._df[term] += 1
            self._postings.setdefault(term, set()).add(doc_id)

    def remove(self, doc_id: str) -> None:
        """Drop a document from the index."""
        terms = self._terms.pop(doc_id, None)
        if terms is None:
            return
        self._lengths.pop(doc_id, None)
        self.metadata.pop(doc_id, None)
        for term in terms:
            self._df[term] -= 1
            postings = self._postings.get(term)
            if postings is not None:
                postings.discard(doc_id)
            if self._df[term] <= 0:
                del self._df[term]
                self._postings.pop(term, None)

    def scores(
        self,
        query: str,
        *,
        only: Container[str] | None = None,
    ) -> dict[str, float]:
        """BM25 score of every document sharing a term with ``query`` (among ``only`` when given)."""
        n = len(self._terms)
        if not n:
            return {}
        avg = sum(self._lengths.values()) / n or 1.0
        out: dict[str, float] = {}
        for term in set(tokenize(query)):
            df = self._df.get(term, 0)
            if not df or df > UBIQUITOUS * n:  # a term in nearly every chunk ranks nothing (idf < 0.05)
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for doc_id in self._postings[term]:
                if only is not None and doc_id not in only:
                    continue
                f = self._terms[doc_id][term]
                norm = self.k1 * (1 - self.b + self.b * self._lengths[doc_id] / avg)
                out[doc_id] = out.get(doc_id, 0.0) + idf * f * (self.k1 + 1) / (f + norm)
        return out

    def top(
        self,
        query: str,
        n: int,
        *,
        only: Container[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``n`` best documents with their scores, best first."""
        scores = self.scores(query, only=only)
        return heapq.nsmallest(n, scores.items(), key=lambda kv: (-kv[1], kv[0]))
