"""A lock with a shared side and an exclusive side (a readers-writer lock whose waiting writer goes first)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


class SharedExclusive:
    """Many holders of the shared side at once (re-entrant per thread), or one holder of the exclusive side.

    Used where calls may run together but one task must run alone: store calls against the sweep of their index
    files (:mod:`langchain_session_rag.stores.index_files`), a store's writes against its rebuild. A thread waiting
    for the exclusive side goes first: new shared holders wait meanwhile. The exclusive holder may take the shared
    side too. A forked child gets the lock anew, unheld. An interrupt (Ctrl-C) while waiting leaves it as it was.
    """

    def __init__(self) -> None:
        """An unheld lock."""
        self._renew()

    def _renew(self) -> None:
        """Unheld, nobody waiting: at creation, and on the first use in a forked child (its copy may be held)."""
        self._pid = os.getpid()
        self._state = threading.Condition(threading.Lock())
        self._shared = 0
        self._owner: int | None = None
        self._depth = threading.local()

    def _here(self) -> None:
        if self._pid != os.getpid():
            self._renew()

    @property
    def held_shared(self) -> bool:
        """Whether this thread holds the shared side."""
        self._here()
        return bool(getattr(self._depth, "value", 0))

    @contextlib.contextmanager
    def shared(self) -> Iterator[bool]:
        """Hold the shared side; yields whether this is the thread's outermost hold."""
        self._here()
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
        self._here()
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
