"""The folder list is the architecture: layers that only import downwards, small modules, public dependency APIs.

Layers, bottom first (a module may import its own layer and the ones below, never above):

    errors, _time → models/ → stores/ → chunking/ → prompt/ → memory/ → cache/ → graph/ → cli, the package root

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
    {"errors", "_time"},
    {"models"},
    {"stores"},
    {"chunking"},
    {"prompt"},
    {"memory"},
    {"cache"},
    {"graph"},
    {"cli", "__main__", "__init__"},
]
ADAPTER = PACKAGE / "stores" / "adapter.py"
MAX_LINES = 450
"""About 400 lines: a module this long holds one concept."""
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
    "llama",
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


def imported_units(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "langchain_session_rag" and len(parts) > 1:
                found.add(parts[1])
    return found - {"__init__"}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path: Path) -> None:
    unit = unit_of(path)
    tree = ast.parse(path.read_text())
    upward = {u for u in imported_units(tree) if layer_of(u) > layer_of(unit)}
    assert not upward, f"{path.relative_to(PACKAGE)} imports the higher layer(s) {sorted(upward)}"


def test_every_unit_has_a_layer_and_the_layer_list_matches_the_folder_list() -> None:
    units = {unit_of(p) for p in modules()}
    listed = set().union(*LAYERS)
    assert units <= listed
    assert {u for u in listed if (PACKAGE / u).is_dir()} == {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines: split it by concept"


def private_uses(path: Path) -> list[str]:
    """Private names of dependencies used in a module: ``_x`` import components, ``getattr(obj, "_x")``, and
    ``obj._x`` where ``_x`` is not a private attribute of one of this package's own classes."""
    tree = ast.parse(path.read_text())
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(THIRD_PARTY):
            if any(p.startswith("_") for p in node.module.split(".")) or any(
                a.name.startswith("_") for a in node.names
            ):
                found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(THIRD_PARTY) and "._" in a.name]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}:
            arg = node.args[1] if len(node.args) > 1 else None
            name = arg.value if isinstance(arg, ast.Constant) else None
            if isinstance(name, str) and name.startswith("_") and not name.startswith("__"):
                found.append(f"{node.func.id}(..., {name!r})")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
            and node.attr not in OWN_PRIVATE
        ):
            found.append(f"._{node.attr.lstrip('_')}")
    return found


def own_private_attributes() -> set[str]:
    """Private attributes this package's classes define (``self._x = ...``, ``_x: T = PrivateAttr()``)."""
    names: set[str] = set()
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
                names.add(node.attr)
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id.startswith("_")
                and not node.target.id.isupper()
            ):
                names.add(node.target.id)
    return names


OWN_PRIVATE = own_private_attributes()


@pytest.mark.parametrize("path", [p for p in modules() if p != ADAPTER], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_dependency_api_outside_the_adapter(path: Path) -> None:
    assert private_uses(path) == [], f"{path.relative_to(PACKAGE)} reaches into a dependency's private API"


def test_the_checker_sees_private_uses(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from langgraph._internal._runnable import RunnableCallable\n"
        "def f(store, client):\n"
        "    return store._client, getattr(client, '_identifier', None)\n"
    )
    assert sorted(private_uses(sample)) == sorted(
        ["from langgraph._internal._runnable import ...", "._client", "getattr(..., '_identifier')"]
    )
    assert private_uses(ADAPTER), "the adapter is where langchain-chroma's internals are read"
