"""How :class:`~langchain_session_rag.stores.chroma.ChromaBackend` runs each of its Chroma calls."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.stores.adapter import is_connection_error
from langchain_session_rag.stores.index_files import IndexFileGuard

_P = ParamSpec("_P")
_R = TypeVar("_R")


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
