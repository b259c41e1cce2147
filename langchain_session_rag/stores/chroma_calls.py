"""How :class:`~langchain_session_rag.stores.chroma.ChromaBackend` runs each of its Chroma calls."""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from langchain_session_rag import _fork
from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.stores.adapter import (
    is_connection_error,
    is_timeout,
    persist_directory,
    probe_server,
    read_deadline,
    server_address,
    vector_segments,
)
from langchain_session_rag.stores.index_files import IndexFileGuard, index_guard
from langchain_session_rag.stores.shared_exclusive import SharedExclusive

if TYPE_CHECKING:
    from chromadb import Collection
    from chromadb.api import ClientAPI

    from langchain_session_rag.stores.chroma import ChromaBackend

_LOGGER = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")


PROBE_EVERY = 1.0
"""Seconds a server that did not answer is left alone before one call probes it (its heartbeat) again."""
PROBE_TIMEOUT = 1.0
"""Seconds that probe waits for the heartbeat (and the check after a call past its deadline)."""
_RETRY_SAFE = (
    "retry later; a write under way may or may not have been stored, and sending it again is safe (records are "
    "stored by ids derived from their content)"
)


class _Breaker:
    """The calls of this process to one Chroma server: once the server does not answer, the others fail at once.

    Every call already has a deadline (the client's ``read_timeout``), but a frozen server would still hold each
    caller for it, and the callers would pile up in the threads that run them. Tripped by a call that could not
    connect, or by a call past its deadline when the server then does not answer its heartbeat within
    ``PROBE_TIMEOUT`` either, the breaker refuses calls at once (``StoreUnavailableError``); every ``PROBE_EVERY``
    seconds one call first asks the server for its heartbeat, and the breaker closes when it answers. A server that
    answers its heartbeat is slow, not down: the late call fails alone and the breaker stays closed (that answer is
    trusted for ``PROBE_EVERY`` seconds, so a burst of late calls asks once). While one late call asks, the others
    and new calls wait for its verdict, so none starts another wait on a server that may be frozen.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._lock = _fork.lock()
        self._tripped_at: float | None = None
        self._why = ""
        self._probe_after = 0.0
        self._probing = False
        self._alive_until = 0.0
        self._judging: threading.Event | None = None
        """Set when the heartbeat check after a late call is done (``None``: none under way)."""
        self._running: dict[int, tuple[float, float]] = {}
        """Each call under way: when it started, and its deadline (its client's ``read_timeout``)."""
        self._ids = itertools.count()

    def _refusal(self, now: float) -> StoreUnavailableError:
        ago = now - (self._tripped_at or now)
        msg = (
            f"The Chroma server at {self.host}:{self.port} did not answer {ago:.0f} s ago ({self._why}); its calls "
            f"fail at once until it answers its heartbeat again (asked every {PROBE_EVERY:g} s): {_RETRY_SAFE}."
        )
        return StoreUnavailableError(msg)

    @contextlib.contextmanager
    def call(self, deadline: float) -> Iterator[None]:
        """Run one call (``deadline``: its client's ``read_timeout``): refused at once while tripped (see above)."""
        self._admit()
        with self._lock:
            key = next(self._ids)
            self._running[key] = (time.monotonic(), deadline)
        try:
            yield
        except Exception as exc:
            if is_connection_error(exc) and not isinstance(exc, StoreUnavailableError):
                self._judge(exc, deadline)
            raise
        finally:
            with self._lock:
                self._running.pop(key, None)

    def _judge(self, exc: BaseException, deadline: float) -> None:
        """A call did not answer: trip, unless it was only late on a server that answers its heartbeat.

        One late call asks the heartbeat; the calls late meanwhile, and new calls, wait for its verdict (at most
        ``PROBE_TIMEOUT``): none starts another wait on a server that may be frozen.
        """
        if not is_timeout(exc):
            self.trip(exc)
            return
        with self._lock:
            if self._tripped_at is not None or time.monotonic() < self._alive_until:
                return  # already judged: down, or alive a moment ago
            judging = self._judging
            if judging is None:
                judging = self._judging = threading.Event()
                mine = True
            else:
                mine = False
        if not mine:
            judging.wait(PROBE_TIMEOUT + 1)
            return
        try:
            probe_server(self.host, self.port, PROBE_TIMEOUT)
        except StoreUnavailableError:
            self.trip(exc)
        else:
            with self._lock:
                self._alive_until = time.monotonic() + PROBE_EVERY
            _LOGGER.warning(
                "A call to the Chroma server at %s:%s took over its %g s deadline, and the server answers its "
                "heartbeat: slow, not down (raise read_timeout, --store-timeout, if this repeats).",
                self.host,
                self.port,
                deadline,
            )
        finally:
            with self._lock:
                self._judging = None
            judging.set()

    def _admit(self) -> None:
        with self._lock:
            judging = self._judging
        if judging is not None:  # a late call is asking the heartbeat: its verdict first
            judging.wait(PROBE_TIMEOUT + 1)
        with self._lock:
            now = time.monotonic()
            if self._tripped_at is None:
                return
            if self._probing or now < self._probe_after:
                raise self._refusal(now)
            self._probing = True
        try:
            probe_server(self.host, self.port, PROBE_TIMEOUT)
        except StoreUnavailableError:
            with self._lock:
                self._probing = False
                self._probe_after = time.monotonic() + PROBE_EVERY
                raise self._refusal(time.monotonic()) from None
        with self._lock:
            self._probing = False
            self._tripped_at = None
        _LOGGER.warning("The Chroma server at %s:%s answers again.", self.host, self.port)

    def trip(self, exc: BaseException) -> None:
        """A call did not answer: refuse the next ones at once."""
        with self._lock:
            now = time.monotonic()
            first = self._tripped_at is None
            if first:
                self._tripped_at = now
            self._why = f"{type(exc).__name__}: {exc}"
            self._probe_after = now + PROBE_EVERY
        if first:
            _LOGGER.warning(
                "The Chroma server at %s:%s did not answer (%s); its calls fail at once until it answers again.",
                self.host,
                self.port,
                self._why,
            )

    def problem(self, stuck_after: float | None) -> str | None:
        """Why this server's calls cannot be served now: tripped, or a call running for over ``stuck_after`` s.

        ``None``: twice each call's deadline.
        """
        with self._lock:
            now = time.monotonic()
            if self._tripped_at is not None:
                return str(self._refusal(now))
            running = list(self._running.values())
        for started, deadline in running:
            if now - started > (2 * deadline if stuck_after is None else stuck_after):
                return f"a call to the Chroma server at {self.host}:{self.port} has been waiting {now - started:.0f} s"
        return None


_BREAKERS: dict[tuple[str, int], _Breaker] = _fork.per_process({})
"""This process's breaker of each Chroma server address (the parent's calls under way are not a child's)."""
_BREAKERS_LOCK = _fork.lock()


def _breaker_of(backend: object) -> _Breaker | None:
    client = getattr(backend, "client", None)
    address = server_address(client) if client is not None else None
    if address is None:
        return None
    with _BREAKERS_LOCK:
        breaker = _BREAKERS.get(address)
        if breaker is None:
            breaker = _BREAKERS[address] = _Breaker(*address)
        return breaker


def server_problem(stuck_after: float | None = None) -> str | None:
    """Why this process's Chroma server calls cannot be served now (``None``: they can), without calling a server.

    A server that did not answer a call and has not answered its heartbeat since, or a call to one running for
    over ``stuck_after`` seconds (``None``: twice the calls' deadline). For a readiness probe: a worker whose
    store calls are stuck is not ready.
    """
    with _BREAKERS_LOCK:
        breakers = list(_BREAKERS.values())
    return next((p for b in breakers if (p := b.problem(stuck_after)) is not None), None)


def server_call(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a store's method as one call of its index guard, with a lost server as a typed error.

    On an embedded store the call runs inside its folder's :class:`IndexFileGuard` (whose end zeroes what
    Chroma wrote from uninitialised memory); on a server, through the server's breaker: a lost connection, or a
    call past its deadline, becomes :class:`StoreUnavailableError` (typed, retryable), and while the server does
    not answer the next calls fail at once.
    """

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if args and hasattr(args[0], "in_this_process"):  # in a forked child: refused, or with its own connections
            args[0].in_this_process()
        guard: IndexFileGuard | None = getattr(args[0], "files_guard", None) if args else None
        breaker = _breaker_of(args[0]) if args and guard is None else None
        deadline = read_deadline(getattr(args[0], "client", None)) if breaker is not None else 0.0
        running = breaker.call(deadline) if breaker is not None else contextlib.nullcontext()
        try:
            with guard.using() if guard is not None else running:
                return method(*args, **kwargs)
        except Exception as exc:
            if isinstance(exc, StoreUnavailableError) or not is_connection_error(exc):
                raise
            name = getattr(args[0], "name", "?") if args else "?"
            late, hint = "", ""
            if breaker is not None and is_timeout(exc):
                late = f" within {deadline:g} s"
                hint = "if it is slow rather than down, raise its read_timeout (--store-timeout); "
            why = f"{type(exc).__name__}: {exc}"
            msg = f"The Chroma server of store {name!r} did not answer{late} ({why}); {hint}{_RETRY_SAFE}."
            raise StoreUnavailableError(msg) from exc

    return call


def files_guard(client: ClientAPI, collection: Collection | None) -> IndexFileGuard | None:
    """The index guard of a store on ``client`` (``None`` off an embedded store).

    A collection handed in by the caller may be written to at any moment, not through the guard: its index
    folder (all of them, when Chroma's file cannot tell which) is left to forced sweeps.
    """
    folder = persist_directory(client)
    if folder is None:
        return None
    guard = index_guard(folder)
    if collection is not None:
        segments = vector_segments(client)
        mine = [name for name, owner in (segments or {}).items() if owner == str(collection.id)]
        if not mine:
            _LOGGER.warning(
                "Could not tell which index folder of %s holds the collection %r handed in: the folder's index files"
                " are zeroed only by compact().",
                folder,
                collection.name,
            )
        guard.hands_off(mine or None)
    return guard


def sweep_files(backend: ChromaBackend) -> None:
    """Zero every index file's unused slots and remove the index folders of deleted collections (embedded only).

    Chroma leaves a deleted collection's index folder on disk, its vectors and ids in it, and a rebuild deletes
    every collection it copies. The index folders of collections handed in by the caller are swept too (their l2
    and inner-product ``length.bin`` whole: Chroma writes even its live entries from uninitialised memory).
    """
    guard = backend.files_guard
    if guard is None:
        return

    def layout() -> tuple[set[str] | None, set[str]]:
        segments = vector_segments(backend.client)
        spaces = {str(c.id): backend.space_of(c) for c in backend.client.list_collections()}
        whole = {name for name, owner in (segments or {}).items() if spaces.get(owner, "cosine") != "cosine"}
        return (set(segments) if segments is not None else None), whole

    guard.sweep(force=True, layout=layout)


def forget_indexes(backend: ChromaBackend, name: str) -> None:
    """Before a rebuild deletes collection ``name``: have the guard remove its index folders afterwards."""
    if backend.files_guard is None:
        return
    owner = str(backend.client.get_collection(name).id)
    backend.files_guard.forget(s for s, c in (vector_segments(backend.client) or {}).items() if c == owner)


_STORES: dict[str, SharedExclusive] = {}
"""Per store (process key): its writes on the shared side, its rebuild on the exclusive one.

A rebuild copies each collection, checks the copy and, once every one is copied, deletes the originals: a write
landing on an original after its copy was checked would be deleted with it. Writes wait while a store rebuilds
(reads go on); they wait outside the index guard, so the rebuild's guarded steps never wait for them.
"""
_STORES_LOCK = _fork.lock()


def store_lock(backend: ChromaBackend) -> SharedExclusive:
    """The store's lock in this process: writes hold its shared side, a rebuild its exclusive one."""
    with _STORES_LOCK:
        lock = _STORES.get(backend.process_key)
        if lock is None:
            lock = _STORES[backend.process_key] = SharedExclusive()
        return lock


def store_write(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a store's write method once no rebuild of the store runs in this process (see :func:`store_lock`)."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with store_lock(args[0]).shared():  # type: ignore[arg-type]
            return method(*args, **kwargs)

    return call
