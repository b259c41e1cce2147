"""What a forked child resets: the objects whose threads, locks or connections stay behind in the parent.

``os.fork()`` (``gunicorn --preload``, ``multiprocessing`` with the ``fork`` start method) copies a process with
one thread: the one that forked. A lock another thread held stays held forever in the child, a background
thread is gone while the objects that wait for it remain, and a pooled connection is shared with the parent.
Objects that own such state register a reset here; it runs in the child, right after the fork, before any other
code of the child. ``os.register_at_fork`` runs nothing for ``subprocess`` (which execs) or ``spawn``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TypeVar

_T = TypeVar("_T")
_LOGGER = logging.getLogger(__name__)
_RESETS: list[Callable[[], bool]] = []
"""Resets to run in a child; each says whether to keep it (``False`` once its owner is gone)."""
_GUARD = threading.Lock()
_PARENT: list[int] = []
"""The ids of the processes this one was forked from, nearest last (empty in a process that was never forked)."""


def after_fork_in_child(owner: _T, reset: Callable[[_T], None]) -> None:
    """Call ``reset(owner)`` in every child forked from now on, while ``owner`` lives (it is held weakly)."""
    ref = weakref.ref(owner)

    def run() -> bool:
        alive = ref()
        if alive is None:
            return False
        reset(alive)
        return True

    with _GUARD:
        _RESETS.append(run)


def on_fork_in_child(reset: Callable[[], None]) -> None:
    """Call ``reset()`` in every child forked from now on (a process-wide reset, for a module's state)."""

    def run() -> bool:
        reset()
        return True

    with _GUARD:
        _RESETS.append(run)


_INCREF = ctypes.pythonapi.Py_IncRef  # looked up now: the first lookup in a child would take the loader's lock
_KEPT: list[object] = []


def keep_forever(obj: object) -> None:
    """Never free ``obj`` in this process.

    For a forked child's copy of something whose threads stay in the parent: freeing it would wait for them for
    ever, also when the child exits.
    """
    _KEPT.append(obj)
    _INCREF(ctypes.py_object(obj))


def forked_from() -> int | None:
    """The id of the process this one was forked from, or ``None`` when it was not forked."""
    return _PARENT[-1] if _PARENT else None


class ChildLock:
    """A ``threading.Lock`` that a forked child gets anew, unheld (a copied lock may be held by a thread left behind).

    ``_LOCK = ChildLock()`` (or ``self._lock = ChildLock()``), then ``with _LOCK:`` as with a lock. The lock notes
    how many forks deep its process is and, in a forked child, is replaced on its first use there, so it costs
    nothing to create (no reset is registered: an object made per request may have one). Known limit: a thread that
    forks while holding it should not release it in the child after another thread there has taken it.
    """

    __slots__ = ("_depth", "_lock")

    def __init__(self) -> None:
        """A new, unheld lock."""
        self._lock = threading.Lock()
        self._depth = len(_PARENT)

    def _own(self) -> threading.Lock:
        """This process's lock: a new one on the first use in a forked child."""
        if self._depth != len(_PARENT):  # made in an ancestor (a process id could be reused; the depth cannot)
            with _GUARD:  # two threads of the child must not each make one
                if self._depth != len(_PARENT):
                    self._lock = threading.Lock()
                    self._depth = len(_PARENT)
        return self._lock

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquire the lock, as ``threading.Lock.acquire``."""
        return self._own().acquire(blocking, timeout)

    def release(self) -> None:
        """Release the lock."""
        self._lock.release()

    def locked(self) -> bool:
        """Whether a thread of this process holds the lock."""
        return self._own().locked()

    def __enter__(self) -> bool:
        """Acquire the lock."""
        return self._own().acquire()

    def __exit__(self, *exc: object) -> None:
        """Release the lock."""
        self._lock.release()


def _before() -> None:
    _GUARD.acquire()  # no registration may be half-done when the copy is taken


def _in_parent() -> None:
    _GUARD.release()


def _in_child() -> None:
    """Run the resets in registration order; one that raises is logged and the others still run."""
    global _GUARD  # noqa: PLW0603 - the copy of the lock is held: this process gets its own
    _GUARD = threading.Lock()
    _PARENT.append(os.getppid())
    kept: list[Callable[[], bool]] = []
    for run in _RESETS:
        try:
            if run():
                kept.append(run)
        except Exception:  # noqa: PERF203 - one failed reset must not stop the others
            _LOGGER.exception("A reset after fork() failed")
            kept.append(run)
    _RESETS[:] = kept


os.register_at_fork(before=_before, after_in_parent=_in_parent, after_in_child=_in_child)


class SharedExclusive:
    """Many holders of the shared side at once (re-entrant per thread), or one holder of the exclusive side.

    Used where calls may run together but one task must run alone: store calls against the sweep of their index
    files (:mod:`langchain_session_rag.stores.index_files`), a store's writes against its rebuild. A thread waiting
    for the exclusive side goes first: new shared holders wait meanwhile. The exclusive holder may take the shared
    side too. A forked child gets the lock anew, unheld. An interrupt (Ctrl-C) while waiting leaves it as it was.
    """

    def __init__(self) -> None:
        """An unheld lock."""
        self.renew()
        after_fork_in_child(self, SharedExclusive.renew)

    def renew(self) -> None:
        """Unheld, nobody waiting (also in a forked child, whose copy may be held)."""
        self._state = threading.Condition(threading.Lock())
        self._shared = 0
        self._owner: int | None = None
        self._depth = threading.local()

    @property
    def held_shared(self) -> bool:
        """Whether this thread holds the shared side."""
        return bool(getattr(self._depth, "value", 0))

    @contextlib.contextmanager
    def shared(self) -> Iterator[bool]:
        """Hold the shared side; yields whether this is the thread's outermost hold."""
        depth: int = getattr(self._depth, "value", 0)
        entered = False
        try:
            if depth == 0 and self._owner != threading.get_ident():
                with self._state:
                    while self._owner is not None:
                        self._state.wait()
                    entered = True
                    self._shared += 1
            self._depth.value = depth + 1
            yield depth == 0
        finally:
            self._depth.value = depth
            if entered:
                with self._state:
                    self._shared -= 1
                    self._state.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the exclusive side: wait for other exclusive holders, stop new shared ones, wait for the rest."""
        me, mine = threading.get_ident(), False
        try:
            with self._state:
                while self._owner not in (None, me):
                    self._state.wait()
                mine = self._owner is None
                self._owner = me
                while self._shared > 0:
                    self._state.wait()
            yield
        finally:
            if mine:
                with self._state:
                    self._owner = None
                    self._state.notify_all()
