"""The in-process state of a store, shared by every memory object over it: replicas and the write queue.

Memory objects over the same store (``for_user`` views, or separate objects on one client) share one
:class:`StoreState`, so each sees the others' writes at once. The state lives as long as some memory
object over the store does.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from langchain_session_rag.replica import ReplicaCache
from langchain_session_rag.stores import MemoryBackend
from langchain_session_rag.writes import WriteQueue

__all__ = ["StoreState", "state_of"]


@dataclass(eq=False)
class StoreState:
    """Replicas and the write queue of one store."""

    replicas: ReplicaCache
    writes: WriteQueue
    trusted: bool
    """Every write comes through this process (embedded Chroma): a replica loaded once stays current."""


_STATES: weakref.WeakValueDictionary[str, StoreState] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def state_of(backend: MemoryBackend) -> StoreState:
    """The state of ``backend``'s store (created on first use)."""
    key = backend.process_key
    with _LOCK:
        state = _STATES.get(key)
        if state is None:
            state = StoreState(ReplicaCache(), WriteQueue(backend), trusted=backend.single_process)
            _STATES[key] = state
        return state


def reset_replicas(backend: MemoryBackend) -> None:
    """Drop the replicas of ``backend``'s store (after its vectors were rewritten)."""
    with _LOCK:
        state = _STATES.get(backend.process_key)
    if state is not None:
        state.replicas.clear()
