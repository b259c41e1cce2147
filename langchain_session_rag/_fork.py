"""What a forked child resets: the objects whose threads, locks or connections stay behind in the parent.

``os.fork()`` (``gunicorn --preload``, ``multiprocessing`` with the ``fork`` start method) copies a process with
one thread: the one that forked. A lock another thread held stays held forever in the child, a background
thread is gone while the objects that wait for it remain, and a pooled connection is shared with the parent.
Objects that own such state register a reset here; it runs in the child, right after the fork, before any other
code of the child. ``os.register_at_fork`` runs nothing for ``subprocess`` (which execs) or ``spawn``.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
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


def forked_from() -> int | None:
    """The id of the process this one was forked from, or ``None`` when it was not forked."""
    return _PARENT[-1] if _PARENT else None


class ChildLock:
    """A ``threading.Lock`` that a forked child gets anew, unheld (a copied lock may be held by a thread left behind).

    For module-level locks: ``_LOCK = ChildLock()``, then ``with _LOCK:`` as with a lock.
    """

    def __init__(self) -> None:
        """A new, unheld lock."""
        self._lock = threading.Lock()
        after_fork_in_child(self, ChildLock.renew)

    def renew(self) -> None:
        """A new, unheld lock (called in a forked child)."""
        self._lock = threading.Lock()

    def __enter__(self) -> bool:
        """Acquire the lock."""
        return self._lock.acquire()

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
