"""The public surface is pinned: the root's names, each subpackage's names, and the names moved in 0.7."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import warnings
from pathlib import Path

import pytest

import langchain_session_rag

PACKAGE = Path(langchain_session_rag.__file__).parent

ROOT = [
    "CoreMemory",
    "LocalChatModel",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "RuntimeSettings",
    "SemanticCache",
    "SemanticLLMCache",
    "SessionMemoryStore",
    "SessionRAGError",
    "SessionVectorMemory",
    "TokenBudget",
    "TopicSegmenter",
    "aimport_conversations",
    "create_core_memory_tool",
    "create_manage_memory_tool",
    "create_memory_agent_graph",
    "create_search_memory_tool",
    "create_session_rag_graph",
    "default_chat_model",
    "get_default_embeddings",
    "import_conversations",
]

SUBPACKAGES = {
    "agents": ["CoreEdit", "Curation", "SessionMemoryStore", "acurate_core_memory", "create_core_memory_tool",
               "create_manage_memory_tool", "create_relations_tool", "create_search_memory_tool", "curate_core_memory"],
    "cache": ["CacheDecision", "CacheStats", "SemanticCache", "SemanticLLMCache", "cache_scope", "current_cache_user"],
    "chunking": ["Chunk", "ExchangeChunker", "Segment", "SimilarityProfile", "TopicSegmenter", "Turn",
                 "normalize_messages"],
    "evaluation": ["LocomoConversation", "LocomoQuestion", "LocomoReport", "LocomoSession", "evaluate_locomo",
                   "load_locomo"],
    "graph": ["Node", "SessionContext", "SessionRAGNodes", "SessionRAGState", "aend_session", "agent_node",
              "apurge_threads", "create_memory_agent_graph", "create_session_rag_graph", "encrypted_serde", "end_session",
              "graph_node",
              "purge_threads", "route_after_cache"],
    "privacy": ["FoundSecret", "Keyring", "MASTER_KEY_ENV", "RedactedText", "SECRET_KINDS", "ShredReceipt",
                "find_secrets", "generate_master_key", "redact_secrets"],
    "importers": ["ImportReport", "ImportedConversation", "aimport_conversations", "import_conversations",
                  "read_conversations"],
    "memory": ["Consolidation", "CoreMemory", "CoreVersion", "ErasureReceipt", "MemoryService", "RecallPolicy", "RuntimeSettings", "SessionInfo", "SessionVectorMemory", "read_daily_logs",
               "rebuild_from_daily_logs"],
    "models": ["LocalChatModel", "LocalEmbeddings", "MultilingualEmbeddings", "TokenCounter", "default_chat_model",
               "get_default_embeddings", "ollama_models", "pick_chat_model", "tiktoken_counter"],
    "prompt": ["AssembledPrompt", "BudgetReport", "HistoryWindow", "RecalledMemory", "SectionReport", "SummaryBuffer", "TokenBudget",
               "last_turns", "trim_turns"],
    "relations": ["EntityInfo", "Extraction", "Extractor", "LLMExtractor", "Mention", "PREDICATES", "PatternExtractor",
                  "Relation", "RelationGraph", "Source", "Statement"],
    "server": ["Authenticator", "ServeSettings", "create_app", "read_token_file"],
}  # fmt: skip


def test_the_root_exports_what_a_user_composes_and_no_more() -> None:
    assert sorted(langchain_session_rag.__all__) == ROOT
    assert len(langchain_session_rag.__all__) <= 25
    assert all(getattr(langchain_session_rag, name) is not None for name in ROOT)


def test_each_subpackage_exports_its_own_public_names() -> None:
    modules = {sub: importlib.import_module(f"langchain_session_rag.{sub}") for sub in SUBPACKAGES}
    assert {sub: sorted(module.__all__) for sub, module in modules.items()} == {
        sub: sorted(names) for sub, names in SUBPACKAGES.items()
    }
    assert [f"{sub}.{n}" for sub, m in modules.items() for n in m.__all__ if not hasattr(m, n)] == []


def test_every_root_name_is_the_same_object_as_in_its_subpackage() -> None:
    homes = {name: sub for sub, names in SUBPACKAGES.items() for name in names}
    for name in ROOT:
        if name in homes:
            sub = importlib.import_module(f"langchain_session_rag.{homes[name]}")
            assert getattr(sub, name) is getattr(langchain_session_rag, name), name


def test_every_name_moved_in_0_7_still_imports_from_the_root_with_a_warning_naming_its_place() -> None:
    for name, sub in sorted(langchain_session_rag.MOVED_IN_0_7.items()):
        with pytest.warns(DeprecationWarning, match=rf"langchain_session_rag\.{sub}\.{name}"):
            old = getattr(langchain_session_rag, name)
        assert old is getattr(importlib.import_module(f"langchain_session_rag.{sub}"), name), name
        assert name in SUBPACKAGES[sub], name


def test_the_graphs_node_constants_warn_and_name_node() -> None:
    from langchain_session_rag import graph

    with pytest.warns(DeprecationWarning, match=r"Node\.CALL_MODEL"):
        assert graph.CALL_MODEL == graph.Node.CALL_MODEL == "call_model"  # type: ignore[attr-defined]


def test_current_names_import_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for sub, names in SUBPACKAGES.items():
            module = importlib.import_module(f"langchain_session_rag.{sub}")
            for name in names:
                getattr(module, name)
        for name in ROOT:
            getattr(langchain_session_rag, name)


def test_no_package_code_imports_a_moved_name_from_the_root() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "langchain_session_rag":
                offenders += [
                    f"{path.name}: {a.name}" for a in node.names if a.name in langchain_session_rag.MOVED_IN_0_7
                ]
    assert offenders == []


def test_every_error_is_in_the_family() -> None:
    from langchain_session_rag import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SessionRAGError)


def test_only_the_subpackages_and_the_errors_module_declare_public_names() -> None:
    """Modules inside the subpackages are internal: none declares ``__all__`` (only the ``__init__``s do)."""
    declaring = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and any(
            isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for node in ast.parse(path.read_text()).body
        )
    )  # fmt: skip
    assert declaring == ["errors.py"]


def _imports_of(source: str) -> list[tuple[int, str, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a notebook cell with shell magics
        return []
    return [
        (node.lineno, node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(PACKAGE.name)
        for alias in node.names
    ]


def test_every_import_of_the_package_in_the_repository_resolves() -> None:
    """Benchmarks and notebooks import internal modules too: a move that breaks one fails here, not in a user's run."""
    root = PACKAGE.parent
    sources = [(p, p.read_text()) for d in ("tests", "benchmarks") for p in (root / d).rglob("*.py")]
    for notebook in (root / "notebooks").glob("*.ipynb"):
        cells = json.loads(notebook.read_text())["cells"]
        sources += [(notebook, "".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    broken = []
    for path, source in sources:
        for line, module_name, name in _imports_of(source):
            module = importlib.import_module(module_name)
            if not hasattr(module, name) and importlib.util.find_spec(f"{module_name}.{name}") is None:
                broken.append(f"{path.relative_to(root)}:{line}: {module_name}.{name}")
    assert broken == []
