"""Named fault points, for crash tests: a process kills itself exactly where a test asks (tests only).

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
"""

from __future__ import annotations

import os
import signal
import sys

FAULT_ENV = "SESSION_RAG_FAULT"
POINTS = frozenset({"rebuild:copy-page", "rebuild:copied", "rebuild:switch", "rebuild:switched-one", "write:stored"})
_reached: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Kill this process here when ``SESSION_RAG_FAULT`` names this point (see the module docstring)."""
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
