"""The ``.. code-block:: python`` examples in public docstrings run (top-level ``await`` allowed)."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import re
import textwrap
from pathlib import Path
from types import CodeType

import pytest

import langchain_session_rag
from langchain_session_rag import chunking, models
from langchain_session_rag.memory import timewindow

SUBPACKAGES = [
    "agents",
    "cache",
    "chunking",
    "evaluation",
    "graph",
    "importers",
    "memory",
    "models",
    "prompt",
    "relations",
    "server",
]
PUBLIC = {
    id(obj): obj
    for module in [langchain_session_rag, *(importlib.import_module(f"langchain_session_rag.{s}") for s in SUBPACKAGES)]
    for obj in (getattr(module, name) for name in module.__all__)
    if callable(obj)
}
OBJECTS = [*PUBLIC.values(), timewindow]


def blocks(obj: object) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    found = re.findall(r"\.\. code-block:: python\n\n((?:[ \t]+.*\n|\n)+)", doc + "\n")
    return [textwrap.dedent(b) for b in found]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: getattr(o, "__name__", str(o)))
def test_docstring_examples_run(obj: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "doc"}
    for n, block in enumerate(blocks(obj)):
        code: CodeType = compile(block, f"{obj} example {n}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)  # noqa: S307 - our own docstrings
        if inspect.iscoroutine(result):
            asyncio.run(result)


def test_the_main_classes_have_examples() -> None:
    assert blocks(langchain_session_rag.SessionVectorMemory)
    assert blocks(chunking.ExchangeChunker)
    assert blocks(models.LocalEmbeddings)
