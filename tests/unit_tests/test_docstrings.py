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


def run_examples(obj: object, folder: Path) -> None:
    """Run ``obj``'s docstring examples in order, in one namespace, in ``folder``."""
    folder.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        namespace: dict[str, object] = {"__name__": "doc"}
        for n, block in enumerate(blocks(obj)):
            code: CodeType = compile(block, f"{obj} example {n}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)  # noqa: S307 - our own docstrings
            if inspect.iscoroutine(result):
                asyncio.run(result)


def test_docstring_examples_run(tmp_path: Path) -> None:
    """Every public object's examples run (each object in a folder of its own); the test lists each that fails."""
    failed = {}
    for n, obj in enumerate(OBJECTS):
        name = getattr(obj, "__name__", str(obj))
        try:
            run_examples(obj, tmp_path / str(n))
        except Exception as error:  # noqa: BLE001 - what the test reports
            failed[name] = f"{type(error).__name__}: {error}"
    assert failed == {}


def test_the_main_classes_have_examples() -> None:
    assert blocks(langchain_session_rag.SessionVectorMemory)
    assert blocks(chunking.ExchangeChunker)
    assert blocks(models.LocalEmbeddings)
