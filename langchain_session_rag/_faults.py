"""Named fault points, for crash and race tests: a process kills itself, or runs a test's action, where a test asks.

A test starts a child process with ``SESSION_RAG_FAULT=POINT`` (or ``POINT@N``: the N-th time the point is
reached, 1 by default). When the write path reaches that point, the process writes ``[fault point: POINT]`` to
stderr and kills itself with SIGKILL, as ``kill -9`` would: no ``finally``, no ``atexit``, nothing flushed. The
test then checks that the kill landed mid-operation (the manifest's phase, the partial copies) and that the next
open repairs the store. Unset (always, outside tests), a fault point costs one dictionary lookup.

The points:

- ``rebuild:copy-page``: a re-embedding or compaction (:mod:`~langchain_session_rag.stores.migration`) has
  written one page of a collection's copy (``NAME-next``); the manifest's phase is ``copy``.
- ``rebuild:copied``: every copy is written and verified; the phase is still ``copy``.
- ``rebuild:switch``: the manifest's phase is ``switch``; no collection is switched yet.
- ``rebuild:switched-one``: one collection is replaced by its copy, the others not yet.
- ``write:stored``: the write queue (:mod:`~langchain_session_rag.memory.writes`) has stored a group's new
  records; the records they supersede are not deleted yet.
- ``search:selected``: a replica search (:func:`~langchain_session_rag.memory.retrieval.replica_search`) has
  taken the ids its filter selects; it has not read their records yet (a concurrent sync may drop some here).

In process, :func:`acting_at` runs a test's action at a point instead (each time it is reached), to put what
another thread would do exactly there: a race made deterministic, without sleeps.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from langchain_session_rag.errors import InvalidArgumentError

FAULT_ENV = "SESSION_RAG_FAULT"
POINTS = frozenset(
    {"rebuild:copy-page", "rebuild:copied", "rebuild:switch", "rebuild:switched-one", "write:stored", "search:selected"}
)
_reached: dict[str, int] = {}
_actions: dict[str, Callable[[], None]] = {}


@contextmanager
def acting_at(point: str, action: Callable[[], None]) -> Iterator[None]:
    """Tests only: run ``action`` each time this process reaches ``point``, until the block ends.

    Raises:
        InvalidArgumentError: ``point`` is not one of :data:`POINTS`.
    """
    if point not in POINTS:
        msg = f"No fault point {point!r}; the points are {sorted(POINTS)}."
        raise InvalidArgumentError(msg)
    _actions[point] = action
    try:
        yield
    finally:
        _actions.pop(point, None)


def fault_point(name: str) -> None:
    """Kill this process here when ``SESSION_RAG_FAULT`` names this point, or run its action (module docstring)."""
    action = _actions.get(name)
    if action is not None:
        action()
        return
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] != int(nth or 1):
        return
    sys.stderr.write(f"[fault point: {name}]\n")
    sys.stderr.flush()
    os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))  # on Windows, os.kill terminates at once
