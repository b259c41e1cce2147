"""One error family: every error the package raises is a ``SessionRAGError`` (and the built-in it replaces).

Constructors of the pydantic models (``SessionVectorMemory``, ``TokenBudget``, ``SemanticCache``, ...) report a bad
field as pydantic's ``ValidationError`` (a ``ValueError``), as every LangChain component does; everything else
raises from ``langchain_session_rag.errors``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import langchain_session_rag
from langchain_session_rag import (
    ExchangeChunker,
    SemanticCache,
    SessionVectorMemory,
    TokenBudget,
    TopicSegmenter,
    last_turns,
)
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.models.tokens import get_encoding
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend

PACKAGE = Path(langchain_session_rag.__file__).parent
BUILTIN_ERRORS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


def bare_raises(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in BUILTIN_ERRORS:
                found.append(f"line {node.lineno}: raise {exc.id}")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_bare_builtin_raise(path: Path) -> None:
    assert bare_raises(path) == []


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, real_embeddings: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path_factory.mktemp("mem"), user_id="alice", embeddings=real_embeddings)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, real_embeddings: Any) -> SemanticCache:
    return SemanticCache.local(path=tmp_path_factory.mktemp("cache"), user_id="alice", embeddings=real_embeddings)


CALLS: dict[str, Callable[[SessionVectorMemory, SemanticCache], object]] = {
    "invoke with a non-string query": lambda m, _: m.invoke(123),  # type: ignore[arg-type]
    "invoke with an unknown option": lambda m, _: m.invoke("q", colour="red"),
    "invoke with k=0": lambda m, _: m.invoke("q", k=0),
    "invoke with a malformed filter": lambda m, _: m.invoke("q", filter={"$or": 1}),
    "add_messages with no message": lambda m, _: m.add_messages([], session_id="s"),
    "add_messages with an empty session id": lambda m, _: m.add_messages(
        [{"role": "user", "content": "x"}], session_id=""
    ),
    "add_messages with a bad role": lambda m, _: m.add_messages([{"role": "robot", "content": "x"}], session_id="s"),
    "add_messages with reserved metadata": lambda m, _: m.add_messages(
        [{"role": "user", "content": "x"}], session_id="s", metadata={"user_id": "bob"}
    ),
    "forget with no criterion": lambda m, _: m.forget(),
    "forget with ids as one string": lambda m, _: m.forget(ids="abc"),
    "for_user with an empty id": lambda m, _: m.for_user(""),
    "import of a missing file": lambda m, _: m.import_jsonl("/nonexistent/file.jsonl"),
    "cache lookup of a non-string": lambda _, c: c.lookup(42),  # type: ignore[arg-type]
    "cache for_user with NUL": lambda _, c: c.for_user("a\x00b"),
    "unknown tiktoken encoding": lambda _m, _c: get_encoding("no-such-encoding"),
    "last_turns with n < 0": lambda _m, _c: last_turns([HumanMessage("hi"), AIMessage("yo")], -1),
    "budget assemble of a non-string question": lambda _m, _c: TokenBudget(context_window=4096).assemble(None),  # type: ignore[arg-type]
    "chunker on a non-sequence": lambda _m, _c: ExchangeChunker().chunk(5),  # type: ignore[arg-type]
    "segmenter with mismatched vectors": lambda m, _: TopicSegmenter(m.embeddings).segment([], [[1.0]]),  # type: ignore[arg-type]
    "embedded store without a path": lambda _m, _c: open_chroma_client(),
    "store name too short": lambda m, _: ChromaBackend(m.backend.client, name="ab"),  # type: ignore[attr-defined]
}


@pytest.mark.parametrize("name", list(CALLS))
def test_public_paths_raise_the_family(name: str, memory: SessionVectorMemory, cache: SemanticCache) -> None:
    with pytest.raises(SessionRAGError) as caught:
        CALLS[name](memory, cache)
    assert str(caught.value), "an error says what was wrong"
