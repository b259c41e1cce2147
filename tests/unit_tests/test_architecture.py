"""The folder list is the architecture: layers that only import downwards, small modules, public dependency APIs.

Layers, bottom first (a module may import its own layer and the ones below, never above):

    errors, _time, identity → models/ → stores/ → chunking/ → prompt/ → memory/ → cache/ → graph/ → agents/ →
    importers/, evaluation/ → cli/, server/, the package root

Dependencies are used through their public APIs only; the one exception is ``stores/adapter.py``, which reads
langchain-chroma's ``Chroma`` internals (it has no public accessor for its client and collection).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import langchain_session_rag

PACKAGE = Path(langchain_session_rag.__file__).parent
LAYERS: list[set[str]] = [
    {"errors", "_time", "_checks", "_fork", "_faults", "identity"},
    {"models"},
    {"privacy"},
    {"stores"},
    {"chunking"},
    {"prompt"},
    {"relations"},
    {"memory"},
    {"cache"},
    {"graph"},
    {"agents"},
    {"importers", "evaluation"},
    {"cli", "server", "__main__", "__init__"},
]
ADAPTER = PACKAGE / "stores" / "adapter.py"
THIRD_PARTY = (
    "langchain_core",
    "langchain_chroma",
    "langchain_ollama",
    "langchain_huggingface",
    "langgraph",
    "chromadb",
    "pydantic",
    "tiktoken",
    "numpy",
    "sentence_transformers",
    "xllamacpp",
)


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def unit_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def layer_of(unit: str) -> int:
    for index, units in enumerate(LAYERS):
        if unit in units:
            return index
    msg = f"{unit!r} is in no layer: add it to LAYERS (and to the README's drawing)"
    raise AssertionError(msg)


def dynamic_imports(tree: ast.AST) -> list[str]:
    """Module names given as text to ``importlib.import_module`` / ``__import__``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                found.append(node.args[0].value)
    return found


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, relative imports resolved, dynamic imports included."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = dynamic_imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found += [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return found


def imported_units(path: Path) -> set[str]:
    units = set()
    for name in imported_modules(path):
        parts = name.split(".")
        if parts[0] == "langchain_session_rag" and len(parts) > 1 and parts[1] != "__init__":
            units.add(parts[1])
    return units


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path: Path) -> None:
    unit = unit_of(path)
    upward = {u for u in imported_units(path) if layer_of(u) > layer_of(unit)}
    assert not upward, f"{path.relative_to(PACKAGE)} imports the higher layer(s) {sorted(upward)}"


def test_every_unit_has_a_layer_and_the_layer_list_matches_the_folder_list() -> None:
    units = {unit_of(p) for p in modules()}
    listed = set().union(*LAYERS)
    assert units <= listed
    assert {u for u in listed if (PACKAGE / u).is_dir()} == {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }


def _private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def private_uses(path: Path) -> list[str]:
    """Ways a module reaches private names of code that is not its own.

    Imports of a ``_x`` module or name from outside the package (static or through ``import_module``);
    ``getattr`` / ``hasattr`` / ``setattr`` / ``object.__getattribute__`` / ``attrgetter`` with a ``"_x"`` name or a
    computed one; ``vars(obj)["_x"]`` / ``obj.__dict__["_x"]``; and ``obj._x`` unless ``obj`` is ``self`` / ``cls``
    or ``_x`` is an attribute this same module assigns (its own class's private state).
    """
    tree = ast.parse(path.read_text())
    own = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    own |= {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    found = [
        f"import {name}"
        for name in imported_modules(path)
        if not name.startswith("langchain_session_rag") and any(_private(p) for p in name.split("."))
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in NAME_TAKERS:
            name = _call_name(node)
            index = 0 if name == "attrgetter" else 1
            arg = node.args[index] if len(node.args) > index else None
            if arg is not None and not isinstance(arg, ast.Constant):
                found.append(f"{name}(..., <computed name>)")
            elif arg is not None and _private(arg.value):
                found.append(f"{name}(..., {arg.value!r})")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and _private(node.slice.value):
            holder = node.value
            is_vars = isinstance(holder, ast.Call) and _call_name(holder) == "vars"
            if is_vars or (isinstance(holder, ast.Attribute) and holder.attr == "__dict__"):
                found.append(f"[{node.slice.value!r}]")
        elif (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
            and node.attr not in own
        ):
            found.append(f".{node.attr}")
    return found


NAME_TAKERS = frozenset({"getattr", "hasattr", "setattr", "delattr", "__getattribute__", "attrgetter"})


@pytest.mark.parametrize("path", [p for p in modules() if p != ADAPTER], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_dependency_api_outside_the_adapter(path: Path) -> None:
    assert private_uses(path) == [], f"{path.relative_to(PACKAGE)} reaches into a dependency's private API"


PROBE = PACKAGE / "models" / "_probe_for_the_checker.py"


def test_the_checker_sees_private_uses() -> None:
    PROBE.write_text(
        "import importlib, operator\n"
        "from langgraph._internal._runnable import RunnableCallable\n"
        "from torch._C import _get_tracing_state\n"
        "def f(store, client, name):\n"
        "    importlib.import_module('langgraph._internal')\n"
        "    vars(store)['_client'], store.__dict__['_collection'], operator.attrgetter('_client')(store)\n"
        "    getattr(client, '_' + name), object.__getattribute__(store, '_client')\n"
        "    return store._client, store._lock, getattr(client, '_identifier', None)\n"
    )
    try:
        uses = private_uses(PROBE)
    finally:
        PROBE.unlink()
    assert sorted(uses) == sorted(
        [
            "import langgraph._internal._runnable",
            "import langgraph._internal._runnable.RunnableCallable",
            "import torch._C",
            "import torch._C._get_tracing_state",
            "import langgraph._internal",
            "['_client']",
            "['_collection']",
            "attrgetter(..., '_client')",
            "getattr(..., <computed name>)",
            "__getattribute__(..., '_client')",
            "._client",
            "._lock",
            "getattr(..., '_identifier')",
        ]
    )
    assert private_uses(ADAPTER), "the adapter is where langchain-chroma's internals are read"


def test_the_layer_check_sees_relative_and_dynamic_imports() -> None:
    PROBE.write_text(
        "import importlib\n"
        "from ..graph import nodes\n"
        "from . import tokens\n"
        "importlib.import_module('langchain_session_rag.cache.semantic')\n"
    )
    try:
        units = imported_units(PROBE)
    finally:
        PROBE.unlink()
    assert units == {"graph", "models", "cache"}


# -- composition: capabilities, not classes; a retriever over a service, not a mixin chain ------------------------


def backend_class_tests(path: Path) -> list[str]:
    """Every ``isinstance(..., X)`` of a file whose class list names ``ChromaBackend`` (alone or in a tuple)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2):
            continue
        if node.func.id not in {"isinstance", "issubclass"}:
            continue
        classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        names = {c.attr if isinstance(c, ast.Attribute) else getattr(c, "id", "") for c in classes}
        if "ChromaBackend" in names:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_code_outside_stores_tests_the_back_ends_class() -> None:
    """Callers ask ``backend.capabilities`` (core memory, reembed, daily logs, compaction, user listing)."""
    outside = [p for p in modules() if unit_of(p) != "stores"]
    assert [hit for p in outside for hit in backend_class_tests(p)] == []


def test_the_class_test_finds_what_it_looks_for() -> None:
    PROBE.write_text(
        "from langchain_session_rag.stores import chroma\n"
        "isinstance(b, ChromaBackend)\n"
        "isinstance(b, (int, chroma.ChromaBackend))\n"
        "isinstance(b, int)\n"
    )
    try:
        hits = backend_class_tests(PROBE)
    finally:
        PROBE.unlink()
    assert [h.rsplit(":", 1)[1] for h in hits] == ["2", "3"]


def test_the_memory_is_a_retriever_over_a_service_not_a_mixin_chain() -> None:
    from langchain_core.retrievers import BaseRetriever

    from langchain_session_rag.memory.retriever import SessionVectorMemory

    assert SessionVectorMemory.__bases__ == (BaseRetriever,)
    assert SessionVectorMemory.__mro__[1] is BaseRetriever, "no class between the memory and BaseRetriever"
    assert not SessionVectorMemory.__pydantic_decorators__.model_validators, "no validator opens the store"


_THREAD_LOCKS = {"Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "Event"}
"""``threading`` objects holding a lock: one held by another thread at a fork() stays held in the child."""


def _annotations(tree: ast.AST) -> set[int]:
    """The nodes inside type annotations (a ``threading.Lock`` named in a type makes no lock)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            roots: list[ast.expr | None] = [node.annotation]
        elif isinstance(node, ast.arg):
            roots = [node.annotation]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots = [node.returns]
        else:
            continue
        found.update(id(sub) for root in roots if root is not None for sub in ast.walk(root))
    return found


def thread_locks(path: Path) -> list[str]:
    """Every ``threading`` lock a module makes (``path:line:target``), at module level or in a function or class.

    ``target`` is what the new lock is assigned to (``_LOCK``, ``self._lock``), or ``?`` (an argument, a default
    factory). A lock held by another thread at a fork() stays held in the child.
    """
    tree = ast.parse(path.read_text())
    targets: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            targets[id(node.value)] = ast.unparse(target)
    calls = {id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)}
    typed = _annotations(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in _THREAD_LOCKS) or id(node) in typed:
            continue
        if isinstance(node.value, ast.Name) and node.value.id == "threading":
            call = calls.get(id(node))
            name = targets.get(id(call), "?") if call is not None else "?"
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}:{name}")
    return found


RENEWED_BY_THEIR_OWNER = {
    "models/_llama_server.py:_CLOSED",  # replaced by the module's own reset in a child
    "models/_llama_server.py:stop",  # a thread's stop flag, made and waited on by the function that starts it
    "memory/writes.py:self._lock",  # WriteQueue.start_empty makes both anew in a child
    "memory/writes.py:self._wake",
    "memory/replica.py:self.lock",  # re-entrant; a child replaces every ReplicaCache, so every replica
    "stores/adapter.py:module.SharedSystemClient._refcount_lock",  # chromadb's, replaced in a child
    "stores/chroma_calls.py:judging",  # one heartbeat check's verdict, set by the call that asks; a child's breakers are new
}
"""``threading`` objects their owner replaces in a forked child itself; every other lock is a ``ChildLock``."""


def test_every_lock_is_renewed_in_a_forked_child() -> None:
    """``_fork.ChildLock()`` instead of ``threading.Lock()``, at module level and per object."""
    hits = [hit for p in modules() if p.name != "_fork.py" for hit in thread_locks(p)]
    hits = [hit for hit in hits if f"{hit.split(':')[0]}:{hit.split(':')[2]}" not in RENEWED_BY_THEIR_OWNER]
    assert hits == [], "use _fork.ChildLock() for these locks, or renew them in a child and list them"


def test_the_lock_check_finds_what_it_looks_for() -> None:
    PROBE.write_text(
        "import threading\n_A = threading.Lock()\n_B: threading.RLock = threading.RLock()\n"
        "_C = _fork.ChildLock()\ndef f(x: threading.Lock) -> threading.Lock:\n    lock = threading.Lock()\n"
        "_D = threading.Event()\nclass K:\n    _e: threading.Lock = PrivateAttr(default_factory=threading.Lock)\n"
        "    def __init__(self):\n        self._f = threading.Condition()\n"
    )
    try:
        hits = thread_locks(PROBE)
    finally:
        PROBE.unlink()
    assert sorted(h.split(":", 1)[1] for h in hits) == ["11:self._f", "2:_A", "3:_B", "6:lock", "7:_D", "9:?"]
