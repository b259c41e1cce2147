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
from array import array
from collections import Counter
from collections.abc import Container, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

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


def padded(words: Iterable[str]) -> str:
    """Words as stored in metadata: space-separated and padded (`` api deploy ``), so a word matches as `` api ``."""
    listed = list(words)
    return " " + " ".join(listed) + " " if listed else ""


def tokenize(text: str) -> list[str]:
    """Lower-case words and numbers, without stop words, stemmed with :func:`stem`."""
    return [stem(word) for word in _WORD.findall(text.lower()) if word not in _STOP]


UBIQUITOUS = 0.95
"""Query terms found in more than this share of a user's chunks are skipped (their idf is below 0.05)."""

BULK_REMOVAL = 32
"""Removals from one call past which each touched posting list is filtered once, instead of searched per document."""


class BM25Index:
    """Okapi BM25 over documents added and removed by id.

    Compact: each document has a slot number; each term a posting list of slots and term frequencies in two
    ``array("I")`` (8 bytes a posting, against some 80 for a per-document ``Counter`` plus a per-term ``set``).
    The index keeps each document's text, and unindexes a document by tokenizing it again.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        """Create an empty index with the usual BM25 parameters."""
        self.k1, self.b = k1, b
        self.texts: dict[str, str] = {}
        """Text of each indexed document (do not modify: removal tokenizes it again)."""
        self.metadata: dict[str, dict[str, Any]] = {}
        """Metadata of each indexed document, as given to :meth:`add`."""
        self._slot: dict[str, int] = {}
        self._docs: list[str | None] = []
        """Slot → document id (``None`` for a free slot)."""
        self._free: list[int] = []
        self._lengths = array("I")
        """Slot → number of terms of its document (0 for a free slot)."""
        self._total = 0
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        """Term → (slots of the documents holding it, its frequency in each)."""
        self.changes = 0
        """Documents added, replaced or removed so far (what is derived from the index can tell it is stale)."""

    def __len__(self) -> int:
        """Number of indexed documents."""
        return len(self._slot)

    @property
    def ids(self) -> set[str]:
        """Ids of the indexed documents."""
        return set(self._slot)

    def add(self, doc_id: str, text: str, metadata: dict[str, Any] | None = None) -> None:
        """Index a document (replacing one with the same id)."""
        if doc_id in self._slot:
            self.remove(doc_id)
        self.changes += 1
        terms = Counter(tokenize(text))
        if self._free:
            slot = self._free.pop()
            self._docs[slot] = doc_id
        else:
            slot = len(self._docs)
            self._docs.append(doc_id)
            self._lengths.append(0)
        length = sum(terms.values())
        self._lengths[slot] = length
        self._total += length
        self._slot[doc_id] = slot
        self.texts[doc_id] = text
        self.metadata[doc_id] = metadata or {}
        for term, frequency in terms.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = (array("I"), array("I"))
            postings[0].append(slot)
            postings[1].append(frequency)

    def remove(self, doc_id: str) -> None:
        """Drop a document from the index."""
        self.remove_many([doc_id])

    def remove_many(self, ids: Iterable[str]) -> None:
        """Drop documents from the index (those not indexed are ignored)."""
        slots: dict[int, set[str]] = {}
        for doc_id in dict.fromkeys(ids):
            slot = self._slot.pop(doc_id, None)
            if slot is None:
                continue
            slots[slot] = set(tokenize(self.texts.pop(doc_id)))
            self.metadata.pop(doc_id, None)
            self.changes += 1
            self._total -= self._lengths[slot]
            self._lengths[slot] = 0
            self._docs[slot] = None
            self._free.append(slot)
        if len(slots) <= BULK_REMOVAL:
            for slot, terms in slots.items():
                for term in terms:
                    held, frequencies = self._postings[term]
                    at = held.index(slot)
                    del held[at], frequencies[at]
                    if not held:
                        del self._postings[term]
            return
        gone = np.fromiter(slots, dtype=np.uint32, count=len(slots))
        for term in set().union(*slots.values()):
            held, frequencies = self._postings[term]
            keep = ~np.isin(np.frombuffer(held, dtype=np.uint32), gone)
            if not keep.any():
                del self._postings[term]
                continue
            kept_slots, kept_frequencies = array("I"), array("I")
            kept_slots.frombytes(np.frombuffer(held, dtype=np.uint32)[keep].tobytes())
            kept_frequencies.frombytes(np.frombuffer(frequencies, dtype=np.uint32)[keep].tobytes())
            self._postings[term] = (kept_slots, kept_frequencies)

    def _accumulate(self, query: str) -> npt.NDArray[np.float64] | None:
        """BM25 score by slot (0 where no query term occurs); ``None`` when no term counts."""
        n = len(self._slot)
        if not n:
            return None
        avg = self._total / n or 1.0
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)
        out: npt.NDArray[np.float64] | None = None
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            df = len(postings[0]) if postings is not None else 0
            if postings is None or df > UBIQUITOUS * n:  # a term in nearly every chunk ranks nothing (idf < 0.05)
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            slots = np.frombuffer(postings[0], dtype=np.uint32)
            f = np.frombuffer(postings[1], dtype=np.uint32).astype(np.float64)
            norm = self.k1 * (1 - self.b + self.b * lengths[slots].astype(np.float64) / avg)
            if out is None:
                out = np.zeros(len(self._docs), dtype=np.float64)
            out[slots] += idf * f * (self.k1 + 1) / (f + norm)  # a slot occurs once per posting list
        return out

    def _matches(self, query: str, only: Container[str] | None) -> tuple[npt.NDArray[np.float64], list[int]]:
        scores = self._accumulate(query)
        if scores is None:
            return np.zeros(0), []
        slots = np.flatnonzero(scores).tolist()  # every posting adds a positive amount
        if only is not None:
            docs = self._docs
            slots = [s for s in slots if docs[s] in only]
        return scores, slots

    def scores(
        self,
        query: str,
        *,
        only: Container[str] | None = None,
    ) -> dict[str, float]:
        """BM25 score of every document sharing a term with ``query`` (among ``only`` when given)."""
        scores, slots = self._matches(query, only)
        docs = self._docs
        return {str(docs[s]): float(scores[s]) for s in slots}

    def top(
        self,
        query: str,
        n: int,
        *,
        only: Container[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``n`` best documents with their scores, best first (ties by id)."""
        scores, slots = self._matches(query, only)
        if n < 1 or not slots:
            return []
        if n < len(slots):  # keep the n best and every slot tied with the n-th
            held = np.asarray(slots, dtype=np.int64)
            values = scores[held]
            nth = np.partition(values, len(values) - n)[len(values) - n]
            slots = held[values >= nth].tolist()
        docs = self._docs
        return heapq.nsmallest(n, ((str(docs[s]), float(scores[s])) for s in slots), key=lambda kv: (-kv[1], kv[0]))
