"""The ``.. code-block:: python`` examples in public docstrings run (top-level ``await`` allowed)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import textwrap
from pathlib import Path
from types import CodeType

import pytest

import langchain_session_rag
from langchain_session_rag import graph
from langchain_session_rag.memory import timewindow
from langchain_session_rag.models import tokens

OBJECTS = [getattr(langchain_session_rag, name) for name in langchain_session_rag.__all__] + [
    tokens.tiktoken_counter,
    graph.create_session_rag_graph,
    graph.create_memory_agent_graph,
    timewindow,
]


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
    assert blocks(langchain_session_rag.ExchangeChunker)
    assert blocks(langchain_session_rag.LocalEmbeddings)
