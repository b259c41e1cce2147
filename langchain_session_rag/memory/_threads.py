"""Async twins of sync methods: one body, run in a worker thread, instead of a hand-written twin that can drift."""

from __future__ import annotations

import asyncio
import functools
import operator
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


def in_thread(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``: ``await obj.aNAME(...)`` runs ``method(obj, ...)`` in a worker thread.

    The thread runs with the caller's context (the run's user, as the sync call would see it), and the method is
    looked up on ``obj`` at each call, as a hand-written twin calling ``self.NAME`` would: a subclass's override
    (or a patch) of the sync method is what the async one runs too.
    """
    name = method.__name__

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call: Callable[[S], R] = operator.methodcaller(name, *args, **kwargs)
        return await asyncio.to_thread(call, self)

    twin.__name__ = f"a{name}"
    twin.__qualname__ = f"{method.__qualname__.rpartition('.')[0]}.a{name}".lstrip(".")
    twin.__doc__ = f"Async :meth:`{name}`."
    return twin
