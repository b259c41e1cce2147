"""Metadata conditions: the in-memory check (the fail-closed post-filter) and their Chroma ``where`` form."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from langchain_session_rag.stores.base import Where


def _defined(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda value, arg: value is not None and test(value, arg)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$in": lambda value, arg: value in arg,
    "$nin": lambda value, arg: value not in arg,
    "$gte": _defined(operator.ge),
    "$lte": _defined(operator.le),
    "$gt": _defined(operator.gt),
    "$lt": _defined(operator.lt),
}


def matches(metadata: dict[str, Any], where: Where) -> bool:
    """Check a metadata dict against conditions in memory (the fail-closed post-filter)."""
    for key, cond in where.items():
        value = metadata.get(key)
        if isinstance(cond, dict):
            if not all(_OPS[op](value, arg) for op, arg in cond.items()):
                return False
        elif value != cond:
            return False
    return True


def to_chroma_where(where: Where) -> dict[str, Any]:
    """Turn flat conditions into Chroma's ``where`` syntax (``$and`` of single-key clauses)."""
    clauses: list[dict[str, Any]] = []
    for key, cond in where.items():
        if isinstance(cond, dict):
            clauses.extend({key: {op: arg}} for op, arg in cond.items())
        else:
            clauses.append({key: cond})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
