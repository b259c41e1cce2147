"""One rule for forked processes (``gunicorn --preload``, ``multiprocessing``'s ``fork`` start method, a daemon).

``os.fork()`` copies a process with one thread, the one that forked: a lock another thread held stays held, and a
background thread (a write queue's, an embedded Chroma store's, a model's thread pool) is gone while the objects
that wait for it remain. The package's own server never forks (uvicorn starts fresh workers); this is for yours.

The rule: each object that holds an OS resource records the process that made it (``os.getpid()``). In another
process it reconnects where that is safe (a Chroma server's HTTP connections, the ONNX session, the write queue's
thread) or raises the documented error naming the fix (an embedded store, the local chat model). Locks made with
:func:`lock` are free again in a forked child. A child whose parent (or an earlier ancestor) had an embedded Chroma
store open refuses every embedded store, typed (:func:`refuse_embedded`): chromadb keeps an open store's state for
the whole process with its threads in the parent, and a child's client of that folder, of a copy of it, or of a new
one could hang on its first call; no check in the child can tell them apart safely.

This module holds the package's one ``os.register_at_fork`` hook: other modules ask it for what a child needs
(:func:`lock`, :func:`per_process` containers emptied in a child, :func:`keep_in_child` for the parent's objects a
child must never free, :func:`note_embedded_open` and :func:`refuse_embedded`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from langchain_session_rag.errors import StoreLockedError

if TYPE_CHECKING:
    from collections.abc import Iterable

FIXES = (
    "Open the store only in processes whose parent never opened one (gunicorn: without --preload, or in "
    "post_fork; multiprocessing: the 'spawn' start method; a daemon: open it after daemonizing), or run a Chroma "
    "server (`chroma run --path DIR`) and use SessionVectorMemory.server(host, port, ...)."
)
"""What to do instead, in every refusal of an embedded store after fork()."""

_C = TypeVar("_C", bound="dict[Any, Any] | set[Any]")
_LOCKS: weakref.WeakSet[threading.Lock] = weakref.WeakSet()
_PER_PROCESS: list[dict[Any, Any] | set[Any]] = []  # what per_process was given: emptied in a forked child
_KEPT: list[Callable[[], Iterable[object]]] = []  # what keep_in_child was given: never freed in a child
_LOCK_FDS: list[int] = []  # this process's embedded store locks (a child closes its copies)
_INCREF = ctypes.pythonapi.Py_IncRef  # looked up now: a first lookup in a child would take the loader's lock
_native: set[int] = set()  # processes that ran ONNX Runtime or llama.cpp (see note_native_threads)
_status = [0]  # a forked child's exit status, for its exit without native destructors
_opened_embedded: int | None = None  # the process that opened an embedded store here (None: none was)
_forked_from: int | None = None  # in a forked child: the ancestor with an embedded store open at a fork


def lock() -> threading.Lock:
    """A ``threading.Lock`` free again in a forked child (a thread left in the parent may have held it)."""
    return free_in_child(threading.Lock())


def free_in_child(made: threading.Lock) -> threading.Lock:
    """``made`` (a lock of this package's or of a dependency's) is free again in a forked child; returns it."""
    _LOCKS.add(made)
    return made


def never_free(obj: object) -> None:
    """Never free ``obj`` here: a forked child's copy of something whose threads stay in the parent (it hangs)."""
    _INCREF(ctypes.py_object(obj))


def per_process(container: _C) -> _C:
    """``container`` (a dict or set of this process's things), emptied in a forked child; returns it."""
    _PER_PROCESS.append(container)
    return container


def keep_in_child(entries: Callable[[], Iterable[object]]) -> None:
    """Never free, in a forked child, what ``entries()`` lists then: the parent's objects whose threads stay there."""
    _KEPT.append(entries)


def note_native_threads() -> None:
    """Record that this process ran ONNX Runtime or llama.cpp, whose static state waits for its threads at exit.

    A forked child would hang in their destructors at a normal exit (the threads stayed in the parent): it ends after
    every other ``atexit`` step with ``os._exit`` and its status (``sys.exit(n)``; 1 after an uncaught exception).
    """
    _native.add(os.getpid())


def _record_exit(status: str | int | None = None) -> NoReturn:
    _status[0] = 0 if status is None else status if isinstance(status, int) else 1
    _exit(status)


def _record_failure(*args: Any) -> None:
    _status[0] = 1
    _hook(*args)


def _skip_native_destructors() -> None:  # registered first, so it runs last
    if _native - {os.getpid()}:  # an ancestor ran them (the child may run them too)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(_status[0])


_exit: Callable[..., NoReturn] = sys.exit
_hook = sys.excepthook
atexit.register(_skip_native_destructors)


def note_embedded_open(lock_fd: int | None = None) -> None:
    """Record an embedded Chroma store open here (forked children refuse every one) and its lock, closed in them."""
    global _opened_embedded  # noqa: PLW0603 - the one flag of this module
    _opened_embedded = os.getpid()
    if lock_fd is not None:
        _LOCK_FDS.append(lock_fd)


def refuse_embedded(where: str) -> None:
    """Refuse an embedded store in a child forked from a process that had one open.

    Args:
        where: The store's folder, or ``""`` for an in-memory store (named in the message).

    Raises:
        StoreLockedError: This process was forked from one that had an embedded store open.
    """
    if _forked_from is not None:
        raise StoreLockedError(forked_message(where, _forked_from))


def forked_message(where: str, parent: int | None = None) -> str:
    """Why an embedded store cannot be used in this forked child, and what to do instead."""
    what = f"The embedded store {where!r}" if where else "An in-memory Chroma store"
    return (
        f"{what} cannot be used here: this process was forked from process {parent or _forked_from or '?'}, which "
        "had an embedded Chroma store open before fork(). A forked child can neither use that store nor open "
        "another embedded one (chromadb keeps an open store's state for the whole process, with its threads in "
        f"the parent; the child's calls could hang, even after the parent exits). {FIXES}"
    )


def _in_child() -> None:
    """The package's steps in a forked child: the one ``os.register_at_fork`` hook of the package."""
    global _forked_from  # noqa: PLW0603 - see the module docstring
    if _forked_from is None and _opened_embedded is not None:
        _forked_from = _opened_embedded
    for made in list(_LOCKS):  # the child has one thread: no other thread here holds these
        if made.locked():
            made.release()
    for fd in _LOCK_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_FDS.clear()
    for entries in _KEPT:
        for entry in list(entries()):
            never_free(entry)
    for container in _PER_PROCESS:
        container.clear()
    if _native:
        sys.exit, sys.excepthook = _record_exit, _record_failure


os.register_at_fork(after_in_child=_in_child)
