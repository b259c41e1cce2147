"""Shared fixtures, and the two test tiers.

The fast tier (``pytest -m "not slow"``) runs on fake embeddings and an embedded Chroma, with sockets disabled
(pytest-socket, ``--disable-socket --allow-unix-socket``). Everything else is marked ``slow`` here, centrally:
tests using the real model or a Chroma server (by fixture name), the integration tests and notebooks (by path),
whole modules (``pytestmark = pytest.mark.slow``) and the few tests listed in ``SLOW_TESTS``. A guard keeps the
tiers honest: a fast test that runs the real embedding model or spawns a subprocess fails and says to mark it.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_session_rag import LocalEmbeddings, SessionVectorMemory, get_default_embeddings
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.models.fingerprint import PROBE_TEXTS
from langchain_session_rag.models.onnx_encoder import OnnxEncoder

# Hypothesis keeps its examples and caches outside the checkout (read when it first stores something, in a test)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir()) / "session-rag-hypothesis"))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # chromadb: no telemetry (the store also sets it)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background (`cmd &`, nohup): ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the tests press Ctrl-C: their children must hear it

SLOW_FIXTURES = frozenset({"real_embeddings", "make_memory", "chroma_server"})
"""A test using one of these (directly or through another fixture) loads the real model or starts a server."""
SLOW_FOLDERS = ("integration_tests", "notebooks")
SLOW_TESTS = frozenset({
    # the real embedding model (the default of a memory built without embeddings), or a quality measured with it
    "test_docstrings.py::test_docstring_examples_run",
    "test_importers.py::test_a_broken_conversation_is_skipped_with_its_reason_and_strict_refuses_all",
    "test_importers.py::test_a_broken_file_is_refused_whole_naming_the_problem",
    "test_importers.py::test_a_conversation_that_went_on_adds_to_its_session",
    "test_importers.py::test_a_conversation_without_an_id_that_went_on_keeps_its_session",
    "test_importers.py::test_a_lone_surrogate_skips_its_conversation_only",
    "test_importers.py::test_a_regenerated_answer_replaces_the_old_one_on_reimport",
    "test_importers.py::test_a_session_rag_export_is_pointed_to_import",
    "test_importers.py::test_an_edited_note_replaces_its_earlier_version",
    "test_importers.py::test_an_import_never_removes_another_conversations_memories",
    "test_importers.py::test_async_import",
    "test_importers.py::test_facts_of_every_format_are_recalled",
    "test_importers.py::test_one_odd_conversation_never_refuses_the_export",
    "test_importers.py::test_two_notes_with_one_name_in_two_folders_are_two_notes",
    "test_input_bounds.py::test_an_attack_leaves_the_other_users_of_its_shard_able_to_write_and_read_after_a_restart",
    "test_importers.py::test_everything_imports_and_a_second_import_stores_nothing",
    "test_memory.py::test_readme_contract",
    "test_model_integrity.py::test_a_damaged_torch_tokenizer_is_a_typed_error_not_a_transformers_error",
    "test_model_integrity.py::test_a_flipped_exponent_bit_in_the_torch_weights_is_refused",
    "test_time_window.py::test_dateparser_is_loaded_only_for_a_question_with_a_date_word",
    # the langchain-tests standard cache suites
    "test_cache.py::TestSemanticLLMCacheSync",
    "test_cache.py::TestSemanticLLMCacheAsync",
    "test_cache.py::TestSharedSemanticLLMCacheSync",
    # subprocesses: the CLI, ``chroma vacuum`` (compaction), another process on the store
    "test_bounded_importers.py::test_the_cli_refuses_a_device_or_fifo_in_one_line",
    "test_bounded_importers.py::test_the_cli_refuses_a_zip_bomb_in_one_line",
    "test_core_memory.py::test_compact_in_another_process_erases_forgotten_core_text",
    "test_fork_safety.py::test_a_forked_child_refuses_an_embedded_store_its_parent_opened",
    "test_fork_safety.py::test_a_child_whose_parent_never_opened_an_embedded_store_opens_one",
    "test_hostile_text.py::test_the_cli_lists_a_screenful_of_skipped_items_then_the_count",
    "test_quoting_attacks.py::test_the_cli_refuses_an_unfit_session_and_reports_renamed_imports",
    # loopback TCP servers (a port that hangs up, a silent one)
    "test_low_items.py::test_an_address_without_a_chroma_server_is_one_typed_error_naming_it",
    "test_low_items.py::test_the_cli_prints_the_sentence_not_a_class_name",
    # large inputs on purpose, or many generated examples (seconds each)
    "test_budget.py::test_no_field_can_leave_its_block_or_reach_the_instructions",
    "test_heavy_user.py::test_a_user_past_the_sql_variable_limit_answers_the_first_query",
    "test_ingest_coverage.py::test_every_character_of_every_message_is_stored",
    "test_ingest_coverage.py::test_a_100k_token_message_is_stored_whole",
    "test_replica_memory.py::test_memory_per_chunk_stays_under_its_bound",
})  # fmt: skip
"""Single slow tests (or classes) of otherwise fast modules, as ``module.py::name`` (parameters ignored)."""


def is_slow(item: pytest.Item) -> bool:
    """Whether the item belongs to the slow tier (see the module docstring)."""
    path = Path(str(item.path))
    parts = [path.name, *item.nodeid.split("[")[0].split("::")[1:]]
    names = {"::".join(parts[:end]) for end in range(2, len(parts) + 1)}  # the test, and its class
    return (
        item.get_closest_marker("slow") is not None
        or bool(SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())))
        or any(folder in path.parts for folder in SLOW_FOLDERS)
        or path.suffix == ".ipynb"
        or not names.isdisjoint(SLOW_TESTS)
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tier; its tests may open sockets (a Chroma server, an Ollama stand-in)."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.enable_socket)


def _refuse(what: str) -> Callable[..., NoReturn]:
    def refuse(*_args: object, **_kwargs: object) -> NoReturn:
        msg = f"a fast-tier test {what}: mark it slow (tests/conftest.py SLOW_TESTS, or pytestmark in its module)"
        raise RuntimeError(msg)

    return refuse


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """In a fast test (its fixtures too), running the real embedding model or spawning a process fails."""
    if item.get_closest_marker("slow") is not None:
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        real_model = _refuse("runs the real embedding model (or use the fake_embeddings fixture)")
        patch.setattr(OnnxEncoder, "_run", real_model)
        patch.setattr(subprocess.Popen, "_execute_child", _refuse("spawns a subprocess"))
        return (yield)


@pytest.fixture
def fake_embeddings() -> DeterministicFakeEmbedding:
    """Deterministic vectors (a hash of the text) for tests that need embeddings but not their meaning."""
    return DeterministicFakeEmbedding(size=16)


class CountingEmbeddings(Embeddings):
    """Wraps a real model and counts every text it embeds (the fingerprint's probe texts apart, in ``probes``)."""

    def __init__(self, inner: Embeddings, model_id: str | None = None) -> None:
        self.inner = inner
        self.model_id = model_id or getattr(inner, "model_id", "counting")
        self.texts: list[str] = []
        self.calls = 0
        self.probes = 0
        """How often the store checked the model's fingerprint (once per opening that embeds)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if tuple(texts) == PROBE_TEXTS:
            self.probes += 1
            return self.inner.embed_documents(texts)
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts.append(text)
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts.append(text)
        return await self.inner.aembed_query(text)


@pytest.fixture(scope="session")
def real_embeddings() -> LocalEmbeddings:
    return get_default_embeddings()


_names = itertools.count()


@pytest.fixture
def make_memory(tmp_path: Path, real_embeddings: LocalEmbeddings) -> Callable[..., SessionVectorMemory]:
    """Open a memory on an embedded Chroma in a temp dir, with a unique store name per call."""

    def make(user_id: str = "alice", *, chunker_min: int | None = None, **kwargs: Any) -> SessionVectorMemory:
        kwargs.setdefault("embeddings", real_embeddings)
        if chunker_min is not None:
            kwargs["chunker"] = ExchangeChunker(min_tokens=chunker_min)
        kwargs.setdefault("collection_name", f"mem{next(_names):04d}")
        return SessionVectorMemory.local(path=tmp_path / "store", user_id=user_id, **kwargs)

    return make


def chroma_session() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "id": "u1",
            "timestamp": "2026-02-06T10:00:00",
            "content": "ChromaDB keeps throwing 'collection not found' after restart",
        },
        {
            "role": "assistant",
            "id": "a1",
            "content": "Your client is EphemeralClient; switch to chromadb.PersistentClient(path='./chroma_db').",
        },
    ]


def cooking_session() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "id": "c1",
            "timestamp": "2026-03-01T18:00:00",
            "content": "How long should I bake a sourdough loaf at 230 degrees?",
        },
        {
            "role": "assistant",
            "id": "c2",
            "content": "Bake it covered for 20 minutes, then uncovered for another 20 to 25 minutes until deep brown.",
        },
    ]
