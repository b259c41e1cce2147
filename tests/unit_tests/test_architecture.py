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


def in_package(path: Path) -> Path:
    """``path`` relative to the package folder: a module of the package, or a probe under a temporary folder named
    like the package (the checkers' own tests write their probes there, never into the package)."""
    parts = path.parts
    return Path(*parts[len(parts) - parts[::-1].index(PACKAGE.name) :])


def unit_of(path: Path) -> str:
    rel = in_package(path)
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
    package = (PACKAGE.name, *in_package(path).with_suffix("").parts[:-1])
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


def test_imports_only_go_down() -> None:
    upward = {
        str(path.relative_to(PACKAGE)): sorted(u for u in imported_units(path) if layer_of(u) > layer_of(unit_of(path)))
        for path in modules()
    }
    assert {path: units for path, units in upward.items() if units} == {}, "modules importing a higher layer"


def module_name(path: Path) -> str:
    """``langchain_session_rag.memory.scoped`` for ``memory/scoped.py``; a package's ``__init__`` is the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def run_time_imports(source: str, package: str, known: set[str]) -> set[str]:
    """The modules of ``known`` a module's code imports when it runs, inside functions too.

    Relative and dynamic imports are resolved; ``from p import n`` imports the module ``p.n`` when there is one, else
    ``p`` (whose ``__init__`` defines ``n``). Imports under ``if TYPE_CHECKING:`` are left out: they never run.
    """
    tree = ast.parse(source)
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for sub in ast.walk(stmt)
    }
    found = set(dynamic_imports(tree))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found & known


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module → the modules of its own subpackage it imports at run time (the subpackage's ``__init__`` included).

    ``sources`` maps each module's name to its source and whether it is a package's ``__init__``.
    """
    graph = {}
    for name, (source, is_package) in sources.items():
        package = name if is_package else name.rpartition(".")[0]
        imported = run_time_imports(source, package, set(sources)) - {name}
        graph[name] = {t for t in imported if t == package or t.rpartition(".")[0] == package}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each group of modules that import one another, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = [stack.pop()]
            while group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_import_circle_inside_a_subpackage() -> None:
    """A module never imports, even inside a function, a module of its subpackage that imports it back.

    A circle is broken by moving a function to the module of its concept or to a lower module, or by passing a
    callable; never by importing inside a function (which this rule counts).
    """
    sources = {module_name(p): (p.read_text(), p.name == "__init__.py") for p in modules()}
    assert import_circles(import_graph(sources)) == []


def test_the_circle_check_sees_circles_through_functions_and_the_package() -> None:
    sources = {
        "pkg.sub": ("from pkg.sub.a import A\n", True),
        "pkg.sub.a": ("def f():\n    from pkg.sub import b\n", False),
        "pkg.sub.b": ("from . import c\n", False),
        "pkg.sub.c": ("from pkg.sub import A\nimport importlib\nimportlib.import_module('pkg.sub.a')\n", False),
        "pkg.sub.d": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.e import E\n", False),
        "pkg.sub.e": ("from pkg.sub.d import D\nfrom pkg.other import a\n", False),
        "pkg.other": ("", True),
        "pkg.other.a": ("from pkg.sub import a\n", False),
    }
    graph = import_graph(sources)
    assert graph["pkg.sub.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.c"] == {"pkg.sub", "pkg.sub.a"}
    assert graph["pkg.sub.d"] == set(), "an import for annotations only is no circle"
    assert import_circles(graph) == [["pkg.sub", "pkg.sub.a", "pkg.sub.b", "pkg.sub.c"]]


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
            and not (isinstance(node.value, ast.Name) and node.value.id == "os" and node.attr == "_exit")  # public
            and node.attr not in own
        ):
            found.append(f".{node.attr}")
    return found


NAME_TAKERS = frozenset({"getattr", "hasattr", "setattr", "delattr", "__getattribute__", "attrgetter"})


def test_no_private_dependency_api_outside_the_adapter() -> None:
    uses = {str(p.relative_to(PACKAGE)): private_uses(p) for p in modules() if p != ADAPTER}
    assert {path: found for path, found in uses.items() if found} == {}, "modules reaching into a private API"


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """Where the checkers' tests write a module to check: ``models/`` of a folder named like the package."""
    (tmp_path / PACKAGE.name / "models").mkdir(parents=True)
    return tmp_path / PACKAGE.name / "models" / "_probe_for_the_checker.py"


def test_the_checker_sees_private_uses(probe: Path) -> None:
    probe.write_text(
        "import importlib, operator\n"
        "from langgraph._internal._runnable import RunnableCallable\n"
        "from torch._C import _get_tracing_state\n"
        "def f(store, client, name):\n"
        "    importlib.import_module('langgraph._internal')\n"
        "    vars(store)['_client'], store.__dict__['_collection'], operator.attrgetter('_client')(store)\n"
        "    getattr(client, '_' + name), object.__getattribute__(store, '_client')\n"
        "    return store._client, store._lock, getattr(client, '_identifier', None)\n"
    )
    uses = private_uses(probe)
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


def test_the_layer_check_sees_relative_and_dynamic_imports(probe: Path) -> None:
    probe.write_text(
        "import importlib\n"
        "from ..graph import nodes\n"
        "from . import tokens\n"
        "importlib.import_module('langchain_session_rag.cache.semantic')\n"
    )
    units = imported_units(probe)
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
            found.append(f"{in_package(path)}:{node.lineno}")
    return found


def test_no_code_outside_stores_tests_the_back_ends_class() -> None:
    """Callers ask ``backend.capabilities`` (core memory, reembed, daily logs, compaction, user listing)."""
    outside = [p for p in modules() if unit_of(p) != "stores"]
    assert [hit for p in outside for hit in backend_class_tests(p)] == []


def test_the_class_test_finds_what_it_looks_for(probe: Path) -> None:
    probe.write_text(
        "from langchain_session_rag.stores import chroma\n"
        "isinstance(b, ChromaBackend)\n"
        "isinstance(b, (int, chroma.ChromaBackend))\n"
        "isinstance(b, int)\n"
    )
    hits = backend_class_tests(probe)
    assert [h.rsplit(":", 1)[1] for h in hits] == ["2", "3"]


def test_the_memory_is_a_retriever_over_a_service_not_a_mixin_chain() -> None:
    from langchain_core.retrievers import BaseRetriever

    from langchain_session_rag.memory.retriever import SessionVectorMemory

    assert SessionVectorMemory.__bases__ == (BaseRetriever,)
    assert SessionVectorMemory.__mro__[1] is BaseRetriever, "no class between the memory and BaseRetriever"
    assert not SessionVectorMemory.__pydantic_decorators__.model_validators, "no validator opens the store"


FORK_MODULE = PACKAGE / "_fork.py"


def _names(node: ast.AST) -> set[object]:
    """What a node could name: ``os.register_at_fork``, ``from os import register_at_fork``, ``getattr(os, "...")``."""
    return {
        getattr(node, "attr", None),
        getattr(node, "id", None),
        getattr(node, "value", None) if isinstance(node, ast.Constant) else None,
    } | ({node.name} if isinstance(node, ast.alias) else set())


def test_the_fork_code_is_one_module_with_the_one_fork_hook() -> None:
    """Every after-fork step runs from ``_fork.py``'s one hook (150 lines at most, its docstring aside)."""
    hooks = sorted(
        {
            str(p.relative_to(PACKAGE))
            for p in modules()
            for node in ast.walk(ast.parse(p.read_text()))
            if "register_at_fork" in _names(node)
        }
    )
    assert hooks == ["_fork.py"]
    tree = ast.parse(FORK_MODULE.read_text())
    docstring = tree.body[0]
    assert isinstance(docstring, ast.Expr)
    assert docstring.end_lineno is not None
    assert len(FORK_MODULE.read_text().splitlines()) - docstring.end_lineno <= 150  # the cap
