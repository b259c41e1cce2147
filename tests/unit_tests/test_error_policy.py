"""One error class per kind of mistake, on every public entry point, as ``docs/errors.md`` documents.

Each case feeds one bad argument to one entry point and checks the exact class (not a subclass, not a sibling) that
the doc's table names for its kind of mistake. The graph cases also check that a refused run streamed nothing,
checkpointed nothing and stored nothing.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import InvalidNamespaceError
from pydantic import ValidationError

import langchain_session_rag
from langchain_session_rag import (
    LocalEmbeddings,
    SemanticCache,
    SemanticLLMCache,
    SessionMemoryStore,
    SessionVectorMemory,
    TokenBudget,
    TopicSegmenter,
    create_core_memory_tool,
    create_manage_memory_tool,
    create_search_memory_tool,
    import_conversations,
)
from langchain_session_rag import errors as errors_module
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    InvalidRequestError,
    InvalidTimestampError,
    UnknownOptionError,
)
from langchain_session_rag.graph import create_memory_agent_graph, create_session_rag_graph, end_session, purge_threads
from langchain_session_rag.prompt import SummaryBuffer

DOC = Path(langchain_session_rag.__file__).parent.parent / "docs" / "errors.md"

KINDS: dict[str, tuple[str, type[Exception]]] = {
    "argument": ("A bad argument to a Python call", InvalidArgumentError),
    "option": ("A retrieval or lookup option the call does not know", UnknownOptionError),
    "field": ("A bad field of a pydantic configuration model", ValidationError),
    "factory": ("A bad option of any other constructor or factory", InvalidArgumentError),
    "graph input": ("A graph run's input", InvalidRequestError),
    "message": ("A malformed message in a conversation batch", InvalidMessageError),
    "timestamp": ("A time that does not parse", InvalidTimestampError),
    "namespace label": ("A store namespace label LangGraph's store interface refuses", InvalidNamespaceError),
}
"""Kind of mistake -> (the start of its row in the doc's first table, the class that row names)."""


def _rows(text: str, columns: int) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == columns and not set(cells[0]) <= {"-"}:
            rows.append(cells)
    return rows


def _class_name(cell: str) -> str:
    return cell.strip("`").rsplit(".", 1)[-1]


def test_the_kinds_here_are_the_kinds_the_doc_names() -> None:
    named = {row[0]: _class_name(row[1]) for row in _rows(DOC.read_text(encoding="utf-8"), 2)}
    for kind, (start, error) in KINDS.items():
        rows = [cls for mistake, cls in named.items() if mistake.startswith(start)]
        assert rows == [error.__name__], f"docs/errors.md names {rows} for {kind!r}, the test {error.__name__}"


def _builtin_bases(error: type[BaseException]) -> set[str]:
    skip = {"BaseException", "Exception", "object"}
    return {c.__name__ for c in error.__mro__ if vars(builtins).get(c.__name__) is c and c.__name__ not in skip}


def test_the_doc_lists_every_error_class_with_its_real_bases_and_a_status() -> None:
    table = {_class_name(row[0]): row for row in _rows(DOC.read_text(encoding="utf-8"), 4) if row[0] != "Error"}
    assert set(table) == set(errors_module.__all__), "every class of errors.py is in the table, and no other"
    for name, (_, meaning, bases, status) in table.items():
        error = getattr(errors_module, name)
        assert meaning
        assert {b.strip() for b in bases.split(",")} == (_builtin_bases(error) or {"Exception"}), name
        assert re.fullmatch(r"[45]\d\d", status), f"{name}: {status!r} is not an HTTP status"
        if issubclass(error, InvalidArgumentError):
            assert status.startswith("4"), f"{name} is a caller's mistake: a 4xx"


def test_a_graph_input_error_is_an_argument_error_and_old_clauses_still_catch() -> None:
    assert issubclass(InvalidRequestError, InvalidArgumentError)
    assert issubclass(UnknownOptionError, TypeError)
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(InvalidArgumentError, TypeError)


# -- the cases -------------------------------------------------------------------------------------------------
class World:
    """A memory, a cache, a store and a conversation on fake embeddings (the errors do not depend on vectors)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.embeddings = DeterministicFakeEmbedding(size=16)
        self.memory = SessionVectorMemory.local(path=tmp / "m", user_id="alice", embeddings=self.embeddings)
        self.memory.add_messages(
            [{"role": "user", "content": "My locker code is 1234."}, {"role": "assistant", "content": "Noted."}],
            session_id="s1",
        )
        self.cache = SemanticCache.local(path=tmp / "c", user_id="alice", embeddings=self.embeddings)
        self.store = SessionMemoryStore(self.memory)
        self.export = tmp / "export.jsonl"
        self.memory.export_jsonl(self.export)


def _edited(world: World, **metadata: object) -> Path:
    """The world's export with its first line's metadata changed."""
    line = json.loads(world.export.read_text(encoding="utf-8").splitlines()[0])
    line["metadata"].update(metadata)
    path = world.tmp / f"edited-{len(metadata)}-{min(metadata)}.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("ok")] * 3))


ALICE = ("memories", "alice")
MESSAGES = [{"role": "user", "content": "hi"}]
Case = tuple[str, str, Callable[[World], object]]
LABEL_KIND = {"empty": "namespace label", "a number": "namespace label", "NUL": "namespace label"}
"""Namespace labels LangGraph's ``BaseStore`` methods refuse before the store sees them."""

BAD_IDS = [("empty", ""), ("blank", "  "), ("a number", 5), ("NUL", "a\x00b"), ("too long", "x" * 600)]
BAD_USERS = [*BAD_IDS, ("system prefix", "\x1fshared\x1fx")]
BAD_SESSIONS = [*BAD_IDS, ("a line break", "a\nb")]

CASES: list[Case] = [
    # SessionVectorMemory: constructor, local(), for_user
    *[
        (
            f"SessionVectorMemory(user_id={n})",
            "field",
            lambda w, v=v: SessionVectorMemory(  # type: ignore[misc]
                chroma_client=None, user_id=v, embeddings=w.embeddings
            ),
        )
        for n, v in BAD_USERS
        if n != "system prefix"
    ],
    *[
        (
            f"SessionVectorMemory.local(user_id={n})",
            "field",
            lambda w, v=v: SessionVectorMemory.local(path=w.tmp / "m2", user_id=v, embeddings=w.embeddings),
        )
        for n, v in BAD_USERS
        if n != "system prefix"
    ],
    (
        "SessionVectorMemory(k=0)",
        "field",
        lambda w: SessionVectorMemory(chroma_client=None, user_id="a", embeddings=w.embeddings, k=0),
    ),
    *[
        (f"memory.for_user({n})", "argument", lambda w, v=v: w.memory.for_user(v))
        for n, v in BAD_USERS
        if n != "system prefix"
    ],
    # invoke: query, k, filters, time bounds, thresholds, configurable user
    ("invoke(query=5)", "argument", lambda w: w.memory.invoke(5)),  # type: ignore[arg-type]
    *[(f"invoke(k={v!r})", "argument", lambda w, v=v: w.memory.invoke("q", k=v)) for v in (0, -1, "3", 2.5, True)],
    ("invoke(filter='x')", "argument", lambda w: w.memory.invoke("q", filter="x")),
    ("invoke(filter={'$or': 1})", "argument", lambda w: w.memory.invoke("q", filter={"$or": 1})),
    ("invoke(filter={'user_id': 'bob'})", "argument", lambda w: w.memory.invoke("q", filter={"user_id": "bob"})),
    *[(f"invoke(since={v!r})", "timestamp", lambda w, v=v: w.memory.invoke("q", since=v)) for v in ("not a date", 5j)],
    ("invoke(until='garbage')", "timestamp", lambda w: w.memory.invoke("q", until="garbage")),
    ("invoke(since after until)", "argument", lambda w: w.memory.invoke("q", since="2026-03-10", until="2026-03-01")),
    ("invoke(time_window=3)", "argument", lambda w: w.memory.invoke("q", time_window=3)),
    *[
        (f"invoke(score_threshold={v!r})", "argument", lambda w, v=v: w.memory.invoke("q", score_threshold=v))
        for v in (5, float("nan"))
    ],
    ("invoke(min_importance=2)", "argument", lambda w: w.memory.invoke("q", min_importance=2)),
    ("invoke(session_ids='ab')", "argument", lambda w: w.memory.invoke("q", session_ids="ab")),
    ("invoke(colour='red')", "option", lambda w: w.memory.invoke("q", colour="red")),
    ("invoke(configurable user_id=5)", "argument", lambda w: w.memory.invoke("q", {"configurable": {"user_id": 5}})),
    # add_messages / aadd_messages: session ids, messages
    *[
        (f"add_messages(session_id={n})", "argument", lambda w, v=v: w.memory.add_messages(MESSAGES, session_id=v))
        for n, v in BAD_SESSIONS
    ],
    *[
        (
            f"aadd_messages(session_id={n})",
            "argument",
            lambda w, v=v: asyncio.run(w.memory.aadd_messages(MESSAGES, session_id=v)),
        )
        for n, v in BAD_SESSIONS
    ],
    (
        "add_messages(role='robot')",
        "message",
        lambda w: w.memory.add_messages([{"role": "robot", "content": "x"}], session_id="s"),
    ),
    ("add_messages(messages='text')", "message", lambda w: w.memory.add_messages("hello", session_id="s")),
    # add_note, forget, aforget, listing
    ("add_note(text=5)", "argument", lambda w: w.memory.add_note(5)),  # type: ignore[arg-type]
    ("add_note(text=' ')", "argument", lambda w: w.memory.add_note("  ")),
    ("add_note(session_id='a\\nb')", "argument", lambda w: w.memory.add_note("x", session_id="a\nb")),
    ("forget()", "argument", lambda w: w.memory.forget()),
    ("forget(ids='abc')", "argument", lambda w: w.memory.forget(ids="abc")),  # type: ignore[arg-type]
    *[(f"forget(session_id={n})", "argument", lambda w, v=v: w.memory.forget(session_id=v)) for n, v in BAD_SESSIONS],
    ("forget(before='garbage')", "timestamp", lambda w: w.memory.forget(before="garbage")),
    ("aforget()", "argument", lambda w: asyncio.run(w.memory.aforget())),
    ("aforget(session_id='')", "argument", lambda w: asyncio.run(w.memory.aforget(session_id=""))),
    ("list_memories(limit=0)", "argument", lambda w: w.memory.list_memories(limit=0)),
    ("list_memories(since='garbage')", "timestamp", lambda w: w.memory.list_memories(since="garbage")),
    # export / import
    ("export_jsonl(path=5)", "argument", lambda w: w.memory.export_jsonl(5)),  # type: ignore[arg-type]
    ("import_jsonl(path=5)", "argument", lambda w: w.memory.import_jsonl(5)),  # type: ignore[arg-type]
    (
        "import_jsonl(a line's session_id 'a\\nb')",
        "argument",
        lambda w: w.memory.for_user("carol").import_jsonl(_edited(w, session_id="a\nb"), reassign=True),
    ),
    (
        "import_jsonl(a line's timestamp 'x')",
        "timestamp",
        lambda w: w.memory.for_user("carol").import_jsonl(_edited(w, timestamp="x"), reassign=True),
    ),
    # SemanticCache: constructor, for_user, lookup, update
    *[
        (
            f"SemanticCache(user_id={n})",
            "field",
            lambda w, v=v: SemanticCache.local(path=w.tmp / "c2", user_id=v, embeddings=w.embeddings),
        )
        for n, v in BAD_USERS
    ],
    (
        "SemanticCache(threshold=2)",
        "field",
        lambda w: SemanticCache.local(path=w.tmp / "c3", user_id="a", embeddings=w.embeddings, threshold=2),
    ),
    *[(f"cache.for_user({n})", "argument", lambda w, v=v: w.cache.for_user(v)) for n, v in BAD_USERS],
    ("cache.lookup(42)", "argument", lambda w: w.cache.lookup(42)),  # type: ignore[arg-type]
    ("cache.lookup(llm_string=5)", "argument", lambda w: w.cache.lookup("q", llm_string=5)),
    ("cache.lookup(bogus=1)", "option", lambda w: w.cache.lookup("q", bogus=1)),
    ("cache.update(answer=5)", "argument", lambda w: w.cache.update("q", 5)),  # type: ignore[arg-type]
    ("cache.update(ttl=-1)", "argument", lambda w: w.cache.update("q", "a", ttl=-1)),
    # TokenBudget, TopicSegmenter, SummaryBuffer
    ("TokenBudget(context_window=0)", "field", lambda _: TokenBudget(context_window=0)),
    ("TokenBudget(reserve_for_answer=-1)", "field", lambda _: TokenBudget(context_window=4096, reserve_for_answer=-1)),
    ("budget.assemble(None)", "argument", lambda _: TokenBudget(context_window=4096).assemble(None)),  # type: ignore[arg-type]
    ("TopicSegmenter(None)", "factory", lambda _: TopicSegmenter(None)),  # type: ignore[arg-type]
    ("TopicSegmenter(threshold=2)", "factory", lambda w: TopicSegmenter(w.embeddings, threshold=2)),
    ("TopicSegmenter(min_exchanges=0)", "factory", lambda w: TopicSegmenter(w.embeddings, min_exchanges=0)),
    ("SummaryBuffer(max_turns='x')", "factory", lambda _: SummaryBuffer(_model(), max_turns="x")),  # type: ignore[arg-type]
    # the graph factories
    ("create_session_rag_graph(memory='x')", "factory", lambda _: create_session_rag_graph(_model(), "x")),  # type: ignore[arg-type]
    (
        "create_session_rag_graph(window_turns=0)",
        "factory",
        lambda w: create_session_rag_graph(_model(), w.memory, window_turns=0),
    ),
    (
        "create_session_rag_graph(memory_k=0)",
        "factory",
        lambda w: create_session_rag_graph(_model(), w.memory, memory_k=0),
    ),
    ("create_memory_agent_graph(agent=5)", "factory", lambda w: create_memory_agent_graph(5, w.memory)),  # type: ignore[arg-type]
    ("purge_threads(thread_ids='t')", "argument", lambda _: purge_threads(InMemorySaver(), "t")),
    # SessionMemoryStore: constructor, put, get, search
    (
        "SessionMemoryStore(namespace without a user)",
        "factory",
        lambda w: SessionMemoryStore(w.memory, namespace=("memories",)),
    ),
    ("store.put(namespace naming no user)", "argument", lambda w: w.store.put(("notes",), "k", {"content": "x"})),
    ("store.put(value='text')", "argument", lambda w: w.store.put(ALICE, "k", "text")),  # type: ignore[arg-type]
    ("store.put(key='')", "argument", lambda w: w.store.put(ALICE, "", {"content": "x"})),
    *[
        (
            f"store.put(user {n})",
            LABEL_KIND.get(n, "argument"),
            lambda w, v=v: w.store.put(("memories", v), "k", {"content": "x"}),
        )
        for n, v in BAD_USERS
    ],
    *[
        (f"store.get(user {n})", LABEL_KIND.get(n, "argument"), lambda w, v=v: w.store.get(("memories", v), "k"))
        for n, v in BAD_USERS
    ],
    *[
        (f"store.search(user {n})", LABEL_KIND.get(n, "argument"), lambda w, v=v: w.store.search(("memories", v)))
        for n, v in BAD_USERS
    ],
    (
        "store.search(filter={'topic': {'$regex': 1}})",
        "argument",
        lambda w: w.store.search(ALICE, filter={"topic": {"$regex": 1}}),
    ),
    ("store.search(prefix naming no user)", "argument", lambda w: w.store.search(("notes",))),
    # the agent tool factories
    ("create_search_memory_tool('x')", "factory", lambda _: create_search_memory_tool("x")),  # type: ignore[arg-type]
    (
        "create_manage_memory_tool(actions=('drop',))",
        "factory",
        lambda w: create_manage_memory_tool(w.memory, actions=("drop",)),
    ),  # type: ignore[arg-type]
    ("create_core_memory_tool(5)", "factory", lambda _: create_core_memory_tool(5)),  # type: ignore[arg-type]
    # the importers: import_conversations
    ("import_conversations(memory='x')", "argument", lambda w: import_conversations("x", w.export)),  # type: ignore[arg-type]
    (
        "import_conversations(file_format='pdf')",
        "argument",
        lambda w: import_conversations(w.memory, w.export, file_format="pdf"),
    ),
    ("import_conversations(max_bytes=0)", "argument", lambda w: import_conversations(w.memory, w.export, max_bytes=0)),
    # CoreMemory write / append
    ("core.write(block='secrets')", "argument", lambda w: w.memory.core.write("secrets", "x")),
    ("core.write(text=5)", "argument", lambda w: w.memory.core.write("now", 5)),  # type: ignore[arg-type]
    ("core.append(block='')", "argument", lambda w: w.memory.core.append("", "x")),
    ("core.append(text=None)", "argument", lambda w: w.memory.core.append("memory", None)),  # type: ignore[arg-type]
    # store paths and server addresses: an argument, not an unavailable store
    *[
        (
            f"SessionVectorMemory.local(path={n})",
            "argument",
            lambda w, v=v: SessionVectorMemory.local(path=v, user_id="a", embeddings=w.embeddings),
        )
        for n, v in [("empty", ""), ("NUL", "a\x00b"), ("a number", 5), ("bytes", b"/tmp/x")]
    ],
    ("SemanticCache.local(path=NUL)", "argument", lambda w: SemanticCache.local(path="a\x00b", user_id="a")),
    *[
        (
            f"SessionVectorMemory.server({n})",
            "argument",
            lambda w, a=a: SessionVectorMemory.server(user_id="a", embeddings=w.embeddings, **a),
        )
        for n, a in [
            ("port=-1", {"port": -1}),
            ("port=70000", {"port": 70_000}),
            ("port='abc'", {"port": "abc"}),
            ("port=True", {"port": True}),
            ("host=5", {"host": 5}),
            ("connect_timeout=0", {"connect_timeout": 0}),
        ]
    ],
    # the other factories and entry points
    ("SemanticLLMCache(None)", "factory", lambda _: SemanticLLMCache(None)),  # type: ignore[arg-type]
    ("end_session(memory=5)", "argument", lambda _: end_session(5, user_id="a", session_id="s")),  # type: ignore[arg-type]
    ("store.search(limit='3')", "argument", lambda w: w.store.search(ALICE, query="x", limit="3")),  # type: ignore[arg-type]
    ("get_by_ids('abc')", "argument", lambda w: w.memory.get_by_ids("abc")),  # type: ignore[arg-type]
    ("get_by_ids([5])", "argument", lambda w: w.memory.get_by_ids([5])),  # type: ignore[list-item]
    ("embed_query(5)", "argument", lambda _: LocalEmbeddings().embed_query(5)),  # type: ignore[arg-type]
    ("embed_documents('abc')", "argument", lambda _: LocalEmbeddings().embed_documents("abc")),  # type: ignore[arg-type]
    ("create_search_memory_tool(k=3)", "factory", lambda w: create_search_memory_tool(w.memory, k=3)),
    ("create_search_memory_tool(sinse=...)", "option", lambda w: create_search_memory_tool(w.memory, sinse="x")),
    (
        "create_search_memory_tool(since='garbage')",
        "timestamp",
        lambda w: create_search_memory_tool(w.memory, since="garbage"),
    ),
    (
        "SessionVectorMemory(k=True)",
        "field",
        lambda w: SessionVectorMemory(chroma_client=None, user_id="a", embeddings=w.embeddings, k=True),
    ),
    (
        "SessionVectorMemory(k='3')",
        "field",
        lambda w: SessionVectorMemory(chroma_client=None, user_id="a", embeddings=w.embeddings, k="3"),
    ),
    *[
        (f"memory.for_user({n})", "argument", lambda w, v=v: w.memory.for_user(v))
        for n, v in [("a tab", "a\tb"), ("a line break", "a\nb"), ("DEL", "a\x7fb")]
    ],
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("policy"))


def _mismatch(world: World, expected: type[Exception], call: Callable[..., Any]) -> str | None:
    """What is wrong with what ``call`` raised (``None``: exactly ``expected``, with a message, nothing changed)."""
    try:
        call(world)
    except Exception as error:  # noqa: BLE001 - what the test reports
        if type(error) is not expected:
            return f"{type(error).__name__}: {error}"
        if not str(error):
            return "an error with no message"
    else:
        return "no error"
    return None if world.memory.count() == 1 else "the refused call changed the store"


def test_each_bad_argument_raises_the_one_documented_class(world: World) -> None:
    """Each case of ``CASES`` raises exactly the class its kind names; the test lists every case that does not."""
    wrong = {name: _mismatch(world, KINDS[kind][1], call) for name, kind, call in CASES}
    assert {name: found for name, found in wrong.items() if found} == {}


# -- a graph run's input: refused before the run starts ------------------------------------------------------------
GOOD = {"user_id": "alice", "session_id": "s1"}
BAD_RUNS: list[tuple[str, object, object]] = [
    *[(f"context user_id {n}", {"messages": [("user", "hi")]}, {**GOOD, "user_id": v}) for n, v in BAD_USERS],
    *[(f"context session_id {n}", {"messages": [("user", "hi")]}, {**GOOD, "session_id": v}) for n, v in BAD_SESSIONS],
    ("no session_id", {"messages": [("user", "hi")]}, {"user_id": "alice"}),
    ("a string context", {"messages": [("user", "hi")]}, "alice"),
    ("no messages", {"messages": []}, GOOD),
    ("an AI message last", {"messages": [("user", "hi"), ("ai", "yo")]}, GOOD),
    ("an empty question", {"messages": [("user", "  ")]}, GOOD),
    ("a malformed message", {"messages": [{"role": "robot", "content": "x"}]}, GOOD),
    ("a message that is a number", {"messages": [5]}, GOOD),
    ("a string state", "hello", GOOD),
    ("a list state", [("user", "hi")], GOOD),
]
RUNS = ("invoke", "ainvoke", "stream", "astream")


def _run(graph: Any, how: str, state: object, config: dict[str, Any], context: object) -> list[Any]:
    got: list[Any] = []
    modes = ["values", "updates", "messages"]
    if how == "invoke":
        got.append(graph.invoke(state, config, context=context))
    elif how == "stream":
        got.extend(graph.stream(state, config, context=context, stream_mode=modes))
    else:

        async def go() -> None:
            if how == "ainvoke":
                got.append(await graph.ainvoke(state, config, context=context))
            else:
                got.extend([part async for part in graph.astream(state, config, context=context, stream_mode=modes)])

        asyncio.run(go())
    return got


@pytest.mark.parametrize("factory", ["session_rag", "agent"])
@pytest.mark.parametrize("how", RUNS)
def test_a_bad_graph_input_is_refused_before_anything_streams_or_is_stored(
    tmp_path: Path, factory: str, how: str
) -> None:
    embeddings = DeterministicFakeEmbedding(size=16)
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="anyone", embeddings=embeddings)
    calls: list[object] = []
    model = GenericFakeChatModel(messages=iter([AIMessage("Hello!")] * 50))
    if factory == "session_rag":
        cache = SemanticCache.local(path=tmp_path / "c", user_id="anyone", embeddings=embeddings)
        builder = create_session_rag_graph(model, memory, cache=cache, background_writes=False)
    else:
        from langchain_core.runnables import RunnableLambda

        def agent(state: dict[str, Any]) -> dict[str, Any]:
            calls.append(state)
            return {"messages": [*state["messages"], AIMessage("Done.")]}

        builder = create_memory_agent_graph(RunnableLambda(agent), memory, background_writes=False)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    for n, (name, state, context) in enumerate(BAD_RUNS):
        config: dict[str, Any] = {"configurable": {"thread_id": f"t{n}"}}
        got: list[Any] = []
        with pytest.raises(Exception) as caught:
            got = _run(graph, how, state, config, context)
        assert type(caught.value) is InvalidRequestError, f"{name}: {type(caught.value).__name__}: {caught.value}"
        assert got == [], f"{name}: nothing streamed"
        assert graph.get_state(config).values == {}, f"{name}: nothing checkpointed"
        assert list(saver.list(config)) == [], f"{name}: no checkpoint written"
    assert memory.for_user("alice").count() == 0, "nothing stored"
    assert calls == [], "the agent never ran"
    out = _run(graph, how, {"messages": [("user", "hi")]}, {"configurable": {"thread_id": "ok"}}, GOOD)
    assert out, "a good run still answers"
    assert len(graph.get_state({"configurable": {"thread_id": "ok"}}).values["messages"]) == 2
