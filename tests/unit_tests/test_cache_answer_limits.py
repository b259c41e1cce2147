"""A semantic cache stores no oversized answer or model configuration: ``update`` refuses it and stores nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration

from langchain_session_rag import SemanticCache, SemanticLLMCache
from tests.conftest import CountingEmbeddings

MAX_ANSWER_CHARS = 100_000
"""The documented default limit of an answer."""
MAX_LLM_STRING_BYTES = 64 * 1024
"""The documented limit of an ``llm_string``."""
QUESTION = "How do I reset my password?"


def make_cache(tmp_path: Path, **kwargs: Any) -> tuple[SemanticCache, CountingEmbeddings]:
    embeddings = CountingEmbeddings(DeterministicFakeEmbedding(size=16), model_id="fake16")
    return SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=embeddings, **kwargs), embeddings


def stored(cache: SemanticCache) -> list[Any]:
    return cache._backend.get("user:alice", {})


def test_a_ten_megabyte_answer_is_not_stored(tmp_path: Path) -> None:
    cache, embeddings = make_cache(tmp_path)
    assert cache.update(QUESTION, "A" * 10_000_000) is False
    assert asyncio.run(cache.aupdate(QUESTION, "A" * 10_000_000)) is False
    assert stored(cache) == [], "nothing was written"
    assert embeddings.texts == [], "nothing was embedded"
    assert cache.stats.skipped_updates["answer_too_long"] == 2
    assert cache.lookup(QUESTION) is None


def test_a_ten_megabyte_llm_string_is_not_stored(tmp_path: Path) -> None:
    cache, embeddings = make_cache(tmp_path)
    huge = "model-x " * 1_250_000
    assert cache.update(QUESTION, "Settings.", llm_string=huge) is False
    assert asyncio.run(cache.aupdate(QUESTION, "Settings.", llm_string=huge)) is False
    assert SemanticCache.local(path=tmp_path / "d", user_id="alice", embeddings=embeddings,
                               llm_string=huge).update(QUESTION, "Settings.") is False  # fmt: skip
    assert stored(cache) == []
    assert embeddings.texts == []
    assert cache.stats.skipped_updates["llm_string_too_long"] == 2


def test_the_limits_themselves_are_stored_and_served(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path)
    longest, key = "A" * MAX_ANSWER_CHARS, "é" * (MAX_LLM_STRING_BYTES // 2)  # two UTF-8 bytes each
    assert cache.update(QUESTION, longest, llm_string=key)
    assert cache.lookup(QUESTION, llm_string=key) == longest
    assert cache.update(QUESTION, longest + "A") is False
    assert cache.update(QUESTION, "Settings.", llm_string=key + "x") is False
    assert len(stored(cache)) == 1, "the refused updates changed nothing stored"
    assert cache.lookup(QUESTION, llm_string=key) == longest


def test_max_answer_chars_is_a_setting(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path, max_answer_chars=9)
    assert cache.update(QUESTION, "Settings.")
    assert cache.update("How do I reset my username?", "Settings!!") is False


def test_the_llm_cache_adapter_does_not_cache_a_huge_answer_or_llm_string(tmp_path: Path) -> None:
    cache, embeddings = make_cache(tmp_path)
    adapter = SemanticLLMCache(cache).for_user("alice")
    prompt = dumps([HumanMessage(QUESTION)])
    adapter.update(prompt, "model-x", [ChatGeneration(message=AIMessage("A" * 10_000_000))])
    adapter.update(prompt, "model-x " * 1_250_000, [ChatGeneration(message=AIMessage("Settings."))])
    asyncio.run(adapter.aupdate(prompt, "model-x", [ChatGeneration(message=AIMessage("A" * 10_000_000))]))
    assert stored(cache) == []
    assert embeddings.texts == []
    assert adapter.lookup(prompt, "model-x") is None
