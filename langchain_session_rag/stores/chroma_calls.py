"""How :class:`~langchain_session_rag.stores.chroma.ChromaBackend` runs each of its Chroma calls."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from langchain_session_rag import _fork
from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.stores.adapter import is_connection_error, is_embedded, persist_directory, vector_segments
from langchain_session_rag.stores.index_files import IndexFileGuard, index_guard

if TYPE_CHECKING:
    from chromadb import Collection
    from chromadb.api import ClientAPI

    from langchain_session_rag.stores.chroma import ChromaBackend

_LOGGER = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")


_COMPANIONS: dict[str, ChromaBackend] = {}
"""Companion stores opened in this process, by their parent's process key and suffix."""


def companion_store(key: str, make: Callable[[], ChromaBackend]) -> ChromaBackend:
    """The process's companion store ``key`` (``make()`` opens it the first time)."""
    backend = _COMPANIONS.get(key)
    if backend is None:
        backend = _COMPANIONS[key] = make()
    return backend


def _drop_embedded_companions() -> None:
    """After fork(): an embedded store's companions hold the parent's client (refused here); a server's work."""
    for key, backend in list(_COMPANIONS.items()):
        if is_embedded(backend.client):
            del _COMPANIONS[key]


_fork.on_fork_in_child(_drop_embedded_companions)


def server_call(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a store's method as one call of its index guard, with a lost server as a typed error.

    On an embedded store the call runs inside its folder's :class:`IndexFileGuard` (whose end zeroes what
    Chroma wrote from uninitialised memory); on a server, a lost connection becomes
    :class:`StoreUnavailableError` (typed, retryable).
    """

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        guard: IndexFileGuard | None = getattr(args[0], "files_guard", None) if args else None
        try:
            with guard.using() if guard is not None else contextlib.nullcontext():
                return method(*args, **kwargs)
        except Exception as exc:
            if isinstance(exc, StoreUnavailableError) or not is_connection_error(exc):
                raise
            name = getattr(args[0], "name", "?") if args else "?"
            msg = f"The Chroma server of store {name!r} did not answer ({type(exc).__name__}: {exc}); retry later."
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


def sweep_files(backend: ChromaBackend, space: Callable[[Collection], str]) -> None:
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
        spaces = {str(c.id): space(c) for c in backend.client.list_collections()}
        whole = {name for name, owner in (segments or {}).items() if spaces.get(owner, "cosine") != "cosine"}
        return (set(segments) if segments is not None else None), whole

    guard.sweep(force=True, layout=layout)


def forget_indexes(backend: ChromaBackend, name: str) -> None:
    """Before a rebuild deletes collection ``name``: have the guard remove its index folders afterwards."""
    if backend.files_guard is None:
        return
    owner = str(backend.client.get_collection(name).id)
    backend.files_guard.forget(s for s, c in (vector_segments(backend.client) or {}).items() if c == owner)


_STORES: dict[str, _fork.SharedExclusive] = {}
"""Per store (process key): its writes on the shared side, its rebuild on the exclusive one.

A rebuild copies each collection, checks the copy and, once every one is copied, deletes the originals: a write
landing on an original after its copy was checked would be deleted with it. Writes wait while a store rebuilds
(reads go on); they wait outside the index guard, so the rebuild's guarded steps never wait for them.
"""
_STORES_LOCK = _fork.ChildLock()
_fork.on_fork_in_child(_STORES.clear)


def _store_lock(backend: ChromaBackend) -> _fork.SharedExclusive:
    with _STORES_LOCK:
        lock = _STORES.get(backend.process_key)
        if lock is None:
            lock = _STORES[backend.process_key] = _fork.SharedExclusive()
        return lock


def store_write(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a store's write method once no rebuild of the store runs in this process (see :func:`rebuilding`)."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _store_lock(args[0]).shared():  # type: ignore[arg-type]
            return method(*args, **kwargs)

    return call


def rebuilding(backend: ChromaBackend) -> contextlib.AbstractContextManager[None]:
    """Hold the store's writes in this process while it is rebuilt (they run once it is done)."""
    return _store_lock(backend).exclusive()
