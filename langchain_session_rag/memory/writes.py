"""Store writes on one background thread, in order, merging consecutive writes of a user into one.

A store write (an upsert into Chroma) costs milliseconds that a chat turn need not wait for: the
writes of :class:`~langchain_session_rag.SessionVectorMemory` go through a :class:`WriteQueue`, and the
caller either waits for its write (the default) or not (``wait=False``, the graph's choice). The
memory's in-process replica holds the write from the start, so the writing process retrieves it at
once; other processes see it when it reaches the store. Writes run in submission order; a run of
consecutive writes of one user becomes a single upsert and a single delete.

A write nobody waits for lingers up to ``linger`` seconds (default 0.1) so that the writes arriving
meanwhile share one store call: embedded Chroma holds Python's GIL during an upsert (about 5 ms for one
chunk, 9 ms for ten here), so one call per turn would stall every thread of a busy process. A waited-for
write, or :meth:`WriteQueue.flush`, ends the linger at once. A failed write that nobody waited for is
raised, as :class:`~langchain_session_rag.errors.StoreWriteError`, by the next ``flush()`` or write.

After ``fork()`` the child's queue starts empty, with its own lock and no thread (one starts with its first write):
the writes still queued at the fork belong to the parent, whose thread sends them; the child drops its copies of
them (a future it holds from before the fork is never completed in the child).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from langchain_session_rag._faults import fault_point
from langchain_session_rag.errors import InvalidArgumentError, StoreWriteError
from langchain_session_rag.stores.base import MemoryBackend, Record


@dataclass
class _Write:
    user_id: str
    records: list[Record]
    deletes: list[str]
    detached: bool
    on_done: Callable[[BaseException | None], None] | None
    linger: float
    future: Future[None] = field(default_factory=Future)
    submitted: float = field(default_factory=time.monotonic)


def _groups(writes: Sequence[_Write]) -> list[list[_Write]]:
    """Split consecutive writes into runs that one upsert + one delete can carry in order."""
    groups: list[list[_Write]] = []
    deleted: set[str] = set()
    for write in writes:
        current = groups[-1] if groups else None
        if (
            current is None
            or current[0].user_id != write.user_id
            or any(r.id in deleted for r in write.records)  # re-adding what the run deletes: keep the order
        ):
            groups.append([write])
            deleted = set(write.deletes)
        else:
            current.append(write)
            deleted.update(write.deletes)
    return groups


class WriteQueue:
    """Serialises a memory's store writes on one background thread."""

    def __init__(self, backend: MemoryBackend, *, linger: float = 0.1) -> None:
        """Queue writes for ``backend``; the thread starts with the first write.

        Args:
            backend: The store.
            linger: Seconds a write nobody waits for may wait for company before it is sent.
        """
        if linger < 0:
            msg = f"linger must be >= 0 seconds, got {linger!r}."
            raise InvalidArgumentError(msg)
        self._backend = backend
        self.linger = linger
        self._start_empty()

    def _start_empty(self) -> None:
        """Empty the queue, with a new lock and no thread: at creation, and on the first use in a forked child.

        The child's copies of the parent's queued writes are dropped: the parent's thread sends them.
        """
        self._pid = os.getpid()
        self._queue: deque[_Write] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._urgent = 0
        self._executor: ThreadPoolExecutor | None = None
        self._outstanding: set[Future[None]] = set()
        self._failures: list[BaseException] = []

    def submit(
        self,
        user_id: str,
        records: Sequence[Record],
        deletes: Sequence[str],
        *,
        detached: bool = False,
        on_done: Callable[[BaseException | None], None] | None = None,
        linger: float | None = None,
    ) -> Future[None]:
        """Queue an upsert of ``records`` followed by a delete of ``deletes``.

        ``on_done`` is called with the error (``None`` on success) before the future completes. ``linger``
        overrides the queue's for this write (the writing memory's ``RuntimeSettings.write_linger``).

        A ``detached`` write's failure is kept for :meth:`raise_failures`; otherwise the returned future
        carries it to the caller.
        """
        self._here()
        wait_for = self.linger if linger is None else linger
        write = _Write(user_id, list(records), list(deletes), detached, on_done, wait_for)
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-rag-writer")
            self._queue.append(write)
            self._outstanding.add(write.future)
            if not detached:
                self._urgent += 1
            self._wake.notify_all()  # a shorter linger than the ones waited for may have arrived
            executor = self._executor
        write.future.add_done_callback(self._finished)
        executor.submit(self._drain)
        return write.future

    def _here(self) -> None:
        """In a forked child, the first use starts the queue afresh (its thread and lock holders stay in the parent)."""
        if self._pid != os.getpid():
            self._start_empty()

    def _finished(self, future: Future[None]) -> None:
        with self._lock:
            self._outstanding.discard(future)

    def _take(self) -> list[_Write]:
        """Everything queued, once one write has lingered enough (or someone waits)."""
        with self._wake:
            while self._queue and not self._urgent:
                left = min(w.submitted + w.linger for w in self._queue) - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            writes = list(self._queue)
            self._queue.clear()
            self._urgent = 0
            return writes

    def _drain(self) -> None:
        writes = self._take()
        for group in _groups(writes):
            records = list({r.id: r for w in group for r in w.records}.values())
            deletes = list(dict.fromkeys(i for w in group for i in w.deletes))
            error: BaseException | None = None
            try:
                if records:
                    self._backend.add(group[0].user_id, records)
                    fault_point("write:stored")
                if deletes:  # after the replacement is stored: a crash never loses coverage
                    self._backend.delete(group[0].user_id, deletes)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller or kept for flush()
                error = exc
            for write in group:
                if write.on_done is not None:
                    write.on_done(error)
                if error is None:
                    write.future.set_result(None)
                    continue
                if write.detached:
                    with self._lock:
                        self._failures.append(error)
                write.future.set_exception(error)

    @property
    def pending(self) -> int:
        """Writes submitted and not yet answered by the store."""
        self._here()
        with self._lock:
            return len(self._outstanding)

    def raise_failures(self) -> None:
        """Raise (once) the failures of detached writes since the last call.

        Raises:
            StoreWriteError: A detached write failed; its chunks are not stored.
        """
        self._here()
        with self._lock:
            failures, self._failures = self._failures, []
        if failures:
            msg = (
                f"{len(failures)} background write(s) to the store failed, the first with "
                f"{type(failures[0]).__name__}: {failures[0]}. Those chunks are not stored; add the messages again."
            )
            raise StoreWriteError(msg) from failures[0]

    def flush(self) -> None:
        """Wait for every write submitted so far, then raise failures of detached ones.

        Raises:
            StoreWriteError: A detached write failed.
        """
        self._here()
        with self._wake:
            outstanding = list(self._outstanding)
            if self._queue:
                self._urgent += 1
                self._wake.notify_all()
        wait(outstanding)
        self.raise_failures()
