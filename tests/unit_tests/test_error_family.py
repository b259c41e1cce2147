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
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp
from pydantic import ValidationError

import langchain_session_rag
from langchain_session_rag import (
    LocalChatModel,
    SemanticCache,
    SemanticLLMCache,
    SessionMemoryStore,
    SessionVectorMemory,
    TokenBudget,
    TopicSegmenter,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langchain_session_rag import errors as errors_module
from langchain_session_rag.agents import curate_core_memory
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.graph import create_memory_agent_graph, create_session_rag_graph
from langchain_session_rag.memory import read_daily_logs
from langchain_session_rag.models import tiktoken_counter
from langchain_session_rag.models.tokens import get_encoding
from langchain_session_rag.prompt import SummaryBuffer, last_turns, trim_turns
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend

PACKAGE = Path(langchain_session_rag.__file__).parent
BUILTIN_ERRORS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


def bare_raises(path: Path) -> list[str]:
    """Raises of built-in exceptions, except ``AttributeError`` in a module ``__getattr__`` (Python's protocol)."""
    tree = ast.parse(path.read_text())
    protocol = {
        id(node)
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef) and func.name == "__getattr__"
        for node in ast.walk(func)
        if isinstance(node, ast.Raise)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None and id(node) not in protocol:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in BUILTIN_ERRORS:
                found.append(f"line {node.lineno}: raise {exc.id}")
    return found


def test_no_bare_builtin_raise() -> None:
    found = {str(p.relative_to(PACKAGE)): bare_raises(p) for p in sorted(PACKAGE.rglob("*.py"))}
    assert {path: raises for path, raises in found.items() if raises} == {}, "built-in exceptions raised"


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
    "consolidate a non-string session": lambda m, _: m.consolidate(5),  # type: ignore[arg-type]
    "export into a folder": lambda m, _: m.export_jsonl("/"),
    "cache update with operator metadata": lambda _, c: c.update("Where is the office?", "Berlin", metadata={"$x": 1}),
    "cache update with a non-string answer": lambda _, c: c.update("Where is the office?", 5),  # type: ignore[arg-type]
    "cache update with a negative ttl": lambda _, c: c.update("Where is the office?", "Berlin", ttl=-1),
    "cache lookup with a numeric llm_string": lambda _, c: c.lookup("Where is the office?", llm_string=5),
    "cache lookup with an unknown option": lambda _, c: c.lookup("Where is the office?", bogus=1),
    "assemble with a non-message history": lambda _m, _c: TokenBudget(context_window=4096).assemble("q", history=[5]),  # type: ignore[list-item]
    "assemble with memories as text": lambda _m, _c: TokenBudget(context_window=4096).assemble("q", memories="x"),  # type: ignore[arg-type]
    "last_turns with a string n": lambda _m, _c: last_turns([HumanMessage("hi")], "a"),  # type: ignore[arg-type]
    "SummaryBuffer with a string max_turns": lambda _m, _c: SummaryBuffer(_model(), max_turns="x"),  # type: ignore[arg-type]
    "SummaryBuffer without a model": lambda _m, _c: SummaryBuffer(None),  # type: ignore[arg-type]
    "TopicSegmenter without embeddings": lambda _m, _c: TopicSegmenter(None),  # type: ignore[arg-type]
    "a missing GGUF file": lambda _m, _c: LocalChatModel(model_path="/nope.gguf").invoke("hi"),
    "graph over a non-memory": lambda _m, _c: create_session_rag_graph(_model(), "x"),  # type: ignore[arg-type]
    "graph with a non-cache": lambda m, _: create_session_rag_graph(_model(), m, cache=5),  # type: ignore[arg-type]
    "graph with a non-budget": lambda m, _: create_session_rag_graph(_model(), m, budget="x"),  # type: ignore[arg-type]
    "graph with window_turns=-1": lambda m, _: create_session_rag_graph(_model(), m, window_turns=-1),
    "agent graph over a non-agent": lambda m, _: create_memory_agent_graph(5, m),  # type: ignore[arg-type]
    "cache lookup with a numeric history": lambda _, c: c.lookup("Where is the office?", history=5),
    "cache update with non-document sources": lambda _, c: c.update("Where is the office?", "Berlin", sources=[5]),  # type: ignore[list-item]
    "LLM cache update with non-generations": lambda _, c: SemanticLLMCache(c).for_user("alice").update("p", "x", 5),  # type: ignore[arg-type]
    "budget count of a non-string": lambda _m, _c: TokenBudget(context_window=4096).count(5),  # type: ignore[arg-type]
    "segment non-documents": lambda m, _: TopicSegmenter(m.embeddings).segment([5]),  # type: ignore[arg-type, list-item]
    "trim_turns of non-messages": lambda _m, _c: trim_turns([5], 1),  # type: ignore[list-item]
    "token count of a non-string": lambda _m, _c: tiktoken_counter()(5),  # type: ignore[arg-type]
    "graph invoked with a string context": lambda m, _: _graph(m).invoke(
        {"messages": [("user", "hi")]},
        context="alice",  # type: ignore[arg-type]
    ),
    "graph invoked with an empty question": lambda m, _: _graph(m).invoke(
        {"messages": [("user", "  ")]}, context={"user_id": "alice", "session_id": "s"}
    ),
    "graph invoked with disagreeing users": lambda m, _: _graph(m).invoke(
        {"messages": [("user", "hi")]},
        {"configurable": {"user_id": "bob"}},
        context={"user_id": "alice", "session_id": "s"},
    ),
    "invoke for another user than the bound one": lambda m, _: m.invoke("q", {"configurable": {"user_id": "bob"}}),
    "invoke with a numeric configurable user": lambda m, _: m.invoke("q", {"configurable": {"user_id": 5}}),
    "list_memories with limit=0": lambda m, _: m.list_memories(limit=0),
    "list_memories with a bad source type": lambda m, _: m.list_memories(source_type="secret"),
    "list_sessions with a bad date": lambda m, _: m.list_sessions(since="not a date"),
    "add_note without text": lambda m, _: m.add_note("  "),
    "add_note with reserved metadata": lambda m, _: m.add_note("x", metadata={"user_id": "bob"}),
    "search tool over a non-memory": lambda _m, _c: create_search_memory_tool("x"),  # type: ignore[arg-type]
    "manage tool with an unknown action": lambda m, _: create_manage_memory_tool(m, actions=("drop",)),  # type: ignore[arg-type]
    "store with a template without a user": lambda m, _: SessionMemoryStore(m, namespace=("memories",)),
    "store namespace naming no user": lambda m, _: SessionMemoryStore(m).put(("notes",), "k", {"content": "x"}),
    "store value that is not a dict": lambda m, _: SessionMemoryStore(m).batch(
        [PutOp(("memories", "alice"), "k", "text")]  # type: ignore[arg-type]
    ),
    "store listing with a wildcard": lambda m, _: SessionMemoryStore(m).list_namespaces(prefix=("memories", "*")),
    "core memory over its limit": lambda m, _: m.core.write("now", "word " * 400),
    "core memory unknown block": lambda m, _: m.core.read("secrets"),
    "core memory removing a missing line": lambda m, _: m.core.remove("now", "not there"),
    "core memory undo of an unedited block": lambda m, _: m.for_user("fresh-user").core.undo("now"),
    "core memory import from a missing folder": lambda m, _: (
        m.core.import_markdown("/nonexistent-folder") or m.core.export_markdown("/proc/no-such/dir")
    ),
    "invoke with min_importance=2": lambda m, _: m.invoke("q", min_importance=2),
    "invoke with topics as text": lambda m, _: m.invoke("q", topics="api"),
    "invoke with all_if_fits=0": lambda m, _: m.invoke("q", all_if_fits=0),
    "read_daily_logs of a missing folder": lambda _m, _c: list(read_daily_logs("/nonexistent-logs")),
    "curation with max_calls=0": lambda m, _: curate_core_memory(m, _model(), [], max_calls=0),
}


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("ok")] * 3))


def _graph(memory: SessionVectorMemory) -> Any:
    return create_session_rag_graph(_model(), memory).compile()


def test_constructors_report_a_bad_field_as_a_validation_error(real_embeddings: Any) -> None:
    with pytest.raises(ValidationError, match="chromadb client"):
        SemanticCache(chroma_client=5, user_id="alice", embeddings=real_embeddings)
    with pytest.raises(ValidationError, match="user_id"):
        SessionVectorMemory(chroma_client=None, user_id="", embeddings=real_embeddings)


def _not_in_the_family(call: Callable[[], object]) -> str | None:
    """What is wrong with what ``call`` raised (``None``: a ``SessionRAGError`` with a message)."""
    try:
        call()
    except SessionRAGError as error:
        return None if str(error) else "an error with no message"
    except Exception as error:  # noqa: BLE001 - what the test reports
        return f"{type(error).__module__}.{type(error).__name__}: {error}"
    return "no error"


def test_public_paths_raise_the_family(memory: SessionVectorMemory, cache: SemanticCache) -> None:
    """Every call of ``CALLS`` raises a ``SessionRAGError`` with a message; the test lists each one that does not."""
    outcomes = {name: _not_in_the_family(lambda c=call: c(memory, cache)) for name, call in CALLS.items()}
    assert {name: wrong for name, wrong in outcomes.items() if wrong} == {}


OLD_BASES: dict[str, tuple[str, ...]] = {
    "InvalidArgumentError": ("SessionRAGError", "ValueError", "TypeError"),
    "InvalidMessageError": ("SessionRAGError", "ValueError"),
    "EmptyConversationError": ("InvalidMessageError",),
    "DuplicateMessageIdError": ("InvalidMessageError",),
    "ImportFormatError": ("InvalidMessageError",),
    "InvalidTimestampError": ("InvalidMessageError",),
    "MessageTooLargeError": ("InvalidMessageError",),
    "InvalidMetadataError": ("SessionRAGError", "ValueError"),
    "UnknownOptionError": ("SessionRAGError", "TypeError"),
    "EmbeddingModelMismatchError": ("SessionRAGError", "RuntimeError"),
    "UnsupportedOperationError": ("SessionRAGError", "RuntimeError"),
    "MissingDependencyError": ("SessionRAGError", "ImportError"),
    "BudgetExceededError": ("SessionRAGError", "ValueError"),
    "CoreMemoryFullError": ("BudgetExceededError",),
    "CoreMemoryConflictError": ("SessionRAGError", "RuntimeError"),
    "InvalidRequestError": ("SessionRAGError", "ValueError"),
    "StoreLockedError": ("SessionRAGError", "RuntimeError"),
    "StoreUnavailableError": ("SessionRAGError", "ConnectionError"),
    "FileAccessError": ("SessionRAGError", "OSError"),
    "InvalidStorePathError": ("SessionRAGError", "ValueError"),
    "StoreWriteError": ("SessionRAGError", "RuntimeError"),
    "IdentityConflictError": ("SessionRAGError", "ValueError"),
    "ImportLimitError": ("ImportFormatError",),
    "ReadOnlyNamespaceError": ("InvalidRequestError",),
}
"""Each class's bases in 0.6: an ``except`` clause written then still catches what it caught."""


def test_every_class_keeps_its_old_bases() -> None:
    lost = [
        (name, base)
        for name, bases in OLD_BASES.items()
        for base in bases
        if not issubclass(getattr(errors_module, name), getattr(errors_module, base, None) or getattr(builtins, base))
    ]
    assert lost == []
