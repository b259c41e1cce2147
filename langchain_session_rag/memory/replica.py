"""An in-process replica of each user's stored chunks: BM25 terms and unit vectors, searched exactly.

A user's memories are few (hundreds to thousands of chunks), so an exact search over them in process costs
less than a round trip to the store's vector index and needs no ``where`` filter over other users' chunks. A
replica is loaded in bounded pages on first use, its vectors streamed into one matrix. Where other processes
write (a Chroma server), each use first reads the user's change log and fetches what changed, even under the
same id (see :meth:`UserReplica.sync`); on embedded Chroma, which is single-process, the replica is trusted
after its load. Writes made through this process are applied to the replica at once, also while they are still
on their way to the store (:class:`~langchain_session_rag.writes.WriteQueue`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.lexical import BM25Index
from langchain_session_rag.stores.base import Record, RecordPage, Where, decode_message_ids, fingerprint
from langchain_session_rag.stores.change_log import RETENTION
from langchain_session_rag.stores.filters import matches

FETCH_BATCH = 2_000
"""Ids fetched per store read when a replica catches up (keeps each read well under SQL variable limits)."""
SHARED_VALUES = frozenset(
    {"user_id", "session_id", "source_type", "chunking", "embedding_model", "source_name", "segmentation", "speakers"}
)
"""Metadata keys whose text values repeat across chunks: held once (interned), as every key is."""
GROWTH = 1.25
"""Factor the vector matrix grows by when full, at least (a batch of records reserves all its rows at once)."""


@dataclass(frozen=True)
class ReplicaSource:
    """How a replica reads one user's records from the store (see :meth:`UserReplica.sync`)."""

    log: Callable[[], set[str] | None]
    """Ids of the user's change-log entries (``None``: the store keeps none, list on every sync)."""
    touched: Callable[[Sequence[str]], set[str] | None]
    """The record ids the given entries name (``None``: unknown, list the user's revisions instead)."""
    ids: Callable[[], list[str]]
    """Every id of the user (an ids-only read)."""
    listing: Callable[[], dict[str, str]]
    """Id → revision fingerprint of every record of the user (a metadata-only read)."""
    pages: Callable[[Sequence[str]], Iterable[RecordPage]]
    """The records among the given ids, in bounded pages."""


def _compact(metadata: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``metadata`` with its keys and repeated text values interned (stores return new strings)."""
    return {
        sys.intern(key) if type(key) is str else key: sys.intern(value)
        if key in SHARED_VALUES and type(value) is str
        else value
        for key, value in metadata.items()
    }


class UserReplica:
    """One user's chunks in process: texts, metadata, a BM25 index and a matrix of unit vectors.

    The texts and metadata live in the BM25 index (:class:`~langchain_session_rag.memory.lexical.BM25Index`);
    the vectors are rows of one float32 matrix, and no other copy of them is kept.
    """

    def __init__(self) -> None:
        """Create an empty replica."""
        self.lexical = BM25Index()
        """The BM25 index, which also holds every record's text and metadata."""
        self._row: dict[str, int] = {}
        self._ids: list[str] = []
        self._matrix: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._sessions: dict[str, dict[str, int]] = {}
        """Session id → {chunk id: chunk_index} of the session's conversation chunks."""
        self._by_message: dict[str, dict[str, tuple[str, ...]]] = {}
        """Session id → message id → ids of the conversation chunks covering that message."""
        self._speakers: Counter[str] = Counter()
        """Speaker label → conversation chunks it speaks in."""
        self._conversation_chunks = 0
        self._pending_add: Counter[str] = Counter()
        self._writes_begun = 0
        """Writes begun so far: a sync drops nothing when one began while it read the store."""
        self._pending_delete: Counter[str] = Counter()
        self.lock = threading.RLock()
        self.synced_at: float | None = None
        """``time.monotonic()`` of the last completed sync."""
        self._generation = 0
        self._log: set[str] | None = None
        """The store's change-log entries at the last sync (``None``: list the store on the next one)."""
        self._log_at = 0.0
        """``time.time()`` of the last sync (past half the log's retention, the next one lists the store)."""
        self._loaded = False
        self.oversize = False
        """The user holds more chunks than a replica is kept for: searches use the store's own index."""
        self.counted_past: int | None = None
        """The largest ``max_chunks`` the user is known to exceed (a memory allowing more counts again)."""

    def __len__(self) -> int:
        """Number of chunks held."""
        return len(self.lexical)

    @property
    def busy(self) -> bool:
        """Whether writes of this replica are still on their way to the store."""
        return bool(self._pending_add or self._pending_delete)

    # -- changes ---------------------------------------------------------------------------------
    def _reserve(self, rows: int, *, exact: bool = False) -> None:
        """Make room for ``rows`` more vectors than held (by ``GROWTH`` when that is more, unless ``exact``)."""
        held, capacity = len(self._ids), self._matrix.shape[0]
        if held + rows > capacity or (exact and held + rows < capacity):
            size = held + rows if exact else max(held + rows, int(capacity * GROWTH), 16)
            grown = np.zeros((size, self._matrix.shape[1]), dtype=np.float32)
            grown[:held] = self._matrix[:held]
            self._matrix = grown

    def _drop_vector(self, doc_id: str) -> None:
        index = self._row.pop(doc_id, None)
        if index is None:
            return
        last = len(self._ids) - 1
        if index != last:  # move the last row into the hole
            moved = self._ids[last]
            self._matrix[index] = self._matrix[last]
            self._ids[index] = moved
            self._row[moved] = index
        self._ids.pop()

    def _register(self, doc_id: str, meta: dict[str, Any], *, add: bool) -> None:
        if meta.get("source_type") != "session" or "session_id" not in meta:
            return
        session = str(meta["session_id"])
        chunks = self._sessions.setdefault(session, {})
        step = 1 if add else -1
        self._conversation_chunks += step
        for speaker in set(decode_message_ids(meta.get("speakers"))):
            self._speakers[speaker] += step
        if add:
            chunks[doc_id] = int(meta.get("chunk_index", 0))
        else:
            chunks.pop(doc_id, None)
        messages = self._by_message.setdefault(session, {})
        for message in decode_message_ids(meta.get("message_ids")):
            holders = messages.get(message, ())
            if add and doc_id not in holders:
                messages[message] = (*holders, doc_id)
            elif not add and doc_id in holders:
                kept = tuple(i for i in holders if i != doc_id)
                if kept:
                    messages[message] = kept
                else:
                    del messages[message]

    def put(self, records: Iterable[Record], vectors: npt.NDArray[np.floating[Any]] | None = None) -> None:
        """Add or replace records; their vectors become unit rows of the matrix (a record without one is text-only).

        The vectors are the records' embeddings, or row ``n`` of ``vectors`` for record ``n`` (a page streamed in).
        """
        batch = list(records)
        if vectors is None and len({len(r.embedding) for r in batch if r.embedding}) > 1:
            msg = "Vectors of different dimensions in one batch: one embedding model writes a store."
            raise InvalidArgumentError(msg)
        with self.lock:
            self.drop([r.id for r in batch if r.id in self.lexical.texts])
            if vectors is None or not len(vectors):  # the records' own embeddings; one without any gets no row
                held = [n for n, r in enumerate(batch) if r.embedding]
                vectors = np.asarray([batch[n].embedding for n in held], dtype=np.float32) if held else None
                rows = {n: row for row, n in enumerate(held)}
            else:
                rows = {n: n for n in range(len(batch))}
            unit = np.zeros((0, self._matrix.shape[1]), dtype=np.float32)
            if vectors is not None and len(vectors):
                unit = np.asarray(vectors, dtype=np.float32)
                norms = np.linalg.norm(unit, axis=1, keepdims=True)
                unit /= np.where(norms > 0, norms, 1.0)
                if not self._ids and self._matrix.shape[1] != unit.shape[1]:
                    self._matrix = np.zeros((self._matrix.shape[0], unit.shape[1]), dtype=np.float32)
                elif unit.shape[1] != self._matrix.shape[1]:
                    msg = f"Vectors of dimension {unit.shape[1]}; the replica holds {self._matrix.shape[1]}."
                    raise InvalidArgumentError(msg)
            self._reserve(len(unit))
            for n, record in enumerate(batch):
                if record.id in self.lexical.texts:  # twice in one batch: the last one stands
                    self.drop([record.id])
                meta = _compact(record.metadata)
                self.lexical.add(record.id, record.text, meta)
                if n in rows:
                    index = self._row.get(record.id)
                    if index is None:
                        index = len(self._ids)
                        self._ids.append(record.id)
                        self._row[record.id] = index
                    self._matrix[index] = unit[rows[n]]
                self._register(record.id, meta, add=True)

    def drop(self, ids: Iterable[str]) -> None:
        """Remove records."""
        with self.lock:
            held = [doc_id for doc_id in dict.fromkeys(ids) if doc_id in self.lexical.texts]
            for doc_id in held:
                self._register(doc_id, self.lexical.metadata[doc_id], add=False)
                self._drop_vector(doc_id)
            self.lexical.remove_many(held)

    def begin(self, added: Iterable[str], deleted: Iterable[str]) -> None:
        """Mark writes as sent but not yet in the store."""
        with self.lock:
            self._writes_begun += 1
            self._pending_add.update(added)
            self._pending_delete.update(deleted)

    def settle(self, added: Iterable[str], deleted: Iterable[str]) -> None:
        """Unmark writes the store has answered (stored, or failed: the next sync then follows the store)."""
        with self.lock:
            self._pending_add.subtract(added)
            self._pending_delete.subtract(deleted)
            self._pending_add = +self._pending_add
            self._pending_delete = +self._pending_delete

    def sync(self, source: ReplicaSource, *, max_age: float = 0.0, max_chunks: int | None = None) -> None:
        """Follow the store: what it deleted is dropped, what it added or changed (even under the same id) fetched.

        Skipped when the last sync is at most ``max_age`` seconds old. The store's change log is read first:
        the records named by entries not seen before are fetched (none when there are none). Without a usable
        log (none kept, an entry naming every record, a last sync older than half the log's retention) the
        user's ids and revisions are listed (metadata only) and the records whose revision differs are fetched,
        in bounded pages. The first sync loads every record in pages, the vectors streamed into a matrix
        allocated once; a user past ``max_chunks`` is not loaded (:attr:`oversize`: the caller searches the
        store's index). Pending marks are read first, so a write landing meanwhile is counted once either way.
        """
        started, wall, generation = time.monotonic(), time.time(), self._generation
        if self.synced_at is not None and started - self.synced_at <= max_age:
            return
        with self.lock:
            adding, deleting, begun = set(self._pending_add), set(self._pending_delete), self._writes_begun
        log = source.log()
        seen, touched = self._log, None
        if log is not None and seen is not None and wall - self._log_at < RETENTION / 2:
            new = sorted(log - seen)
            if self._loaded:
                touched = source.touched(new) if new else set()
            elif self.oversize and not new:
                touched = set()  # still oversize: nothing was written since it was counted
        if touched is None:
            self._follow(source, adding, deleting, begun, max_chunks)
        elif touched:
            self._refresh(source, touched, deleting, begun)
        with self.lock:
            if self._generation == generation:  # not invalidated meanwhile
                self.synced_at, self._log, self._log_at = started, log, wall

    def _refresh(self, source: ReplicaSource, touched: set[str], deleting: set[str], begun: int) -> None:
        """Fetch the records named by new change-log entries; drop those the store no longer holds."""
        wanted = sorted(touched - deleting)
        present = self._fetch(source, wanted)
        with self.lock:
            if self._writes_begun == begun:  # else a write of this process may have landed after the read
                self.drop([i for i in wanted if i not in present and i not in self._pending_add])

    def _follow(
        self, source: ReplicaSource, adding: set[str], deleting: set[str], begun: int, max_chunks: int | None
    ) -> None:
        """Read the store's listing and apply its differences (see :meth:`sync`)."""
        if not self._loaded or self.oversize:
            ids = source.ids()
            self.oversize = max_chunks is not None and len(ids) > max_chunks
            if self.oversize:
                self.drop(list(self.lexical.texts))
                self._reserve(0, exact=True)
                return
            with self.lock:
                self._reserve(max(0, len(set(ids) - self.lexical.texts.keys())), exact=True)
            self._fetch(source, [i for i in ids if i not in deleting])
            self._loaded = True
            return
        listed = source.listing()
        current = (set(listed) | adding) - deleting
        if max_chunks is not None and len(current) > max_chunks:
            self.oversize, self._loaded = True, False
            self.drop(list(self.lexical.texts))
            self._reserve(0, exact=True)
            return
        with self.lock:
            # A write that began after the pending marks were read is not in the listing yet: keep it.
            # A write that began and even finished while the store was being read is missing from the listing
            # too: drop nothing then (a later sync follows the store).
            keep = current | set(self._pending_add)
            if self._writes_begun == begun:
                self.drop([doc_id for doc_id in self.lexical.texts if doc_id not in keep])
            meta = self.lexical.metadata
            stale = sorted(
                doc_id
                for doc_id, revision in listed.items()
                if doc_id in current
                and doc_id not in self._pending_add
                and (doc_id not in meta or fingerprint(meta[doc_id]) != revision)
            )
        self._fetch(source, stale)
        if len(stale) > FETCH_BATCH:  # fetched in several pages: give back the rows grown ahead
            with self.lock:
                self._reserve(0, exact=True)

    def _fetch(self, source: ReplicaSource, ids: Sequence[str]) -> set[str]:
        """Read ``ids`` from the store page by page into the replica (not those this process writes meanwhile).

        Returns the ids the store holds.
        """
        present: set[str] = set()
        for page in source.pages(ids) if ids else ():
            present.update(r.id for r in page.records)
            with self.lock:
                busy = self._pending_delete.keys() | self._pending_add.keys()
                keep = [n for n, r in enumerate(page.records) if r.id not in busy]
                vectors = page.vectors if page.vectors is not None and len(page.vectors) else None
                self.put([page.records[n] for n in keep], None if vectors is None else vectors[keep])
        return present

    def invalidate(self) -> None:
        """Make the next :meth:`sync` list the store, whatever its ``max_age`` and the store's change token."""
        with self.lock:
            self._generation += 1
            self.synced_at = None
            self._log = None

    # -- reads -----------------------------------------------------------------------------------
    def session_view(self, session_id: str, messages: set[str]) -> tuple[list[Record], int]:
        """Copies of the session's chunks covering any of ``messages``, and the session's next ``chunk_index``."""
        with self.lock:
            covering = self._by_message.get(session_id, {})
            ids: set[str] = set().union(*(covering.get(m, ()) for m in messages))
            start = 1 + max(self._sessions.get(session_id, {}).values(), default=-1)
            meta = self.lexical.metadata
            chunks = self._sessions.get(session_id, {})
            ordered = sorted(ids, key=lambda i: (chunks.get(i, 0), i))
            return [Record(id=i, text=self.lexical.texts[i], metadata=dict(meta[i])) for i in ordered], start

    def ids(self) -> set[str]:
        """Ids of every record held (a snapshot)."""
        with self.lock:
            return set(self.lexical.texts)

    def matching(self, keep: Callable[[dict[str, Any]], bool], *, among: Iterable[str] | None = None) -> set[str]:
        """Ids of the records (those held, of ``among``) whose metadata ``keep`` accepts (a snapshot).

        One read under the lock: a record a concurrent sync dropped since ``among`` was taken is left out.
        """
        with self.lock:
            meta = self.lexical.metadata
            held = meta.keys() if among is None else (i for i in among if i in meta)
            return {doc_id for doc_id in held if keep(meta[doc_id])}

    def has(self, doc_id: str) -> bool:
        """Whether ``doc_id`` is held."""
        return doc_id in self.lexical.texts

    def record(self, doc_id: str) -> Record:
        """The record ``doc_id`` (its metadata shared with the replica: do not modify)."""
        return Record(id=doc_id, text=self.lexical.texts[doc_id], metadata=self.lexical.metadata[doc_id])

    def select(self, where: Where) -> set[str]:
        """Ids of the records matching ``where`` (a snapshot, to filter several searches with one evaluation).

        ``source_type`` and ``session_id`` equalities are answered from the replica's session index.
        """
        with self.lock:
            rest = dict(where)
            ids: set[str] | None = None
            if rest.get("source_type") == "session":
                del rest["source_type"]
                session = rest.pop("session_id", None)
                if isinstance(session, str):
                    ids = set(self._sessions.get(session, {}))
                else:
                    if session is not None:
                        rest["session_id"] = session
                    ids = set().union(*self._sessions.values())
            meta = self.lexical.metadata
            candidates = self.lexical.texts.keys() if ids is None else ids
            if not rest:
                return set(candidates)
            return {doc_id for doc_id in candidates if matches(meta[doc_id], rest)}

    def dense(self, vector: Sequence[float], k: int, *, only: set[str] | None = None) -> list[tuple[Record, float]]:
        """The ``k`` records most cosine-similar to ``vector`` (among ``only``, from :meth:`select`), best first."""
        with self.lock:
            n = len(self._ids)
            if not n or k < 1:
                return []
            query = np.asarray(vector, dtype=np.float32)
            if query.shape[0] != self._matrix.shape[1]:
                msg = f"Query vector of dimension {query.shape[0]}; the stored vectors have {self._matrix.shape[1]}."
                raise InvalidArgumentError(msg)
            norm = float(np.linalg.norm(query))
            scores = self._matrix[:n] @ (query / norm if norm > 0 else query)
            if only is not None:
                keep = np.fromiter((i in only for i in self._ids[:n]), dtype=bool, count=n)
                scores = np.where(keep, scores, -np.inf)
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            ordered = sorted(top.tolist(), key=lambda i: (-float(scores[i]), self._ids[i]))
            return [(self.record(self._ids[i]), float(scores[i])) for i in ordered if np.isfinite(scores[i])]

    def scored(self, ids: Sequence[str], vector: Sequence[float]) -> list[tuple[Record, float]]:
        """The records ``ids`` (those held) with their cosine similarity to ``vector`` (0 without a vector)."""
        with self.lock:
            query = np.asarray(vector, dtype=np.float32)
            norm = float(np.linalg.norm(query))
            query = query / norm if norm > 0 else query
            out = []
            for doc_id in ids:
                if doc_id not in self.lexical.texts:
                    continue
                index = self._row.get(doc_id)
                similarity = float(self._matrix[index] @ query) if index is not None else 0.0
                out.append((self.record(doc_id), similarity))
            return out

    def speakers(self, min_share: float) -> list[str]:
        """The speaker labels found in at least ``min_share`` of the conversation chunks."""
        with self.lock:
            total = self._conversation_chunks
            return [name for name, n in self._speakers.items() if total and n > 0 and n >= min_share * total]

    def lexical_top(self, query: str, k: int, *, only: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` best BM25 matches of ``query`` (among ``only``, e.g. from :meth:`select`), best first."""
        with self.lock:
            return self.lexical.top(query, k, only=only)
