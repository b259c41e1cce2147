"""A semantic cache's work is bounded in the question's length: a length limit, and guards linear in the words."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration

from langchain_session_rag import SemanticCache, SemanticLLMCache
from langchain_session_rag.cache import guards, questions
from tests.conftest import CountingEmbeddings

MAX_QUESTION_CHARS = 4096
"""The documented default limit."""
MEGABYTE = "How do I reset the password of account number 42 on the settings page? " * 15_000


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the question analysis reads."""
    lengths: list[int] = []
    real = questions.split_words

    def counting(text: str) -> list[str]:
        lengths.append(len(text))
        return real(text)

    monkeypatch.setattr(questions, "split_words", counting)
    return lengths


def make_cache(tmp_path: Path, **kwargs: Any) -> tuple[SemanticCache, CountingEmbeddings]:
    embeddings = CountingEmbeddings(DeterministicFakeEmbedding(size=16), model_id="fake16")
    return SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=embeddings, **kwargs), embeddings


def test_a_megabyte_question_is_a_counted_miss_and_is_not_stored(tmp_path: Path, seen: list[int]) -> None:
    cache, embeddings = make_cache(tmp_path)
    assert len(MEGABYTE) > 1_000_000
    decision = cache.decide(MEGABYTE)
    assert (decision.hit, decision.reason) == (False, "too_long")
    assert cache.update(MEGABYTE, "an answer") is False
    assert cache.stats.skipped_updates["too_long"] == 1
    assert cache.stats.misses["too_long"] == 1
    assert embeddings.texts == [], "nothing was embedded"
    assert max(seen, default=0) <= MAX_QUESTION_CHARS, "the analysis never read past the limit"
    assert cache._backend.get("user:alice", {}) == []  # nothing stored


def test_the_default_limit() -> None:
    assert getattr(questions, "MAX_QUESTION_CHARS", None) == MAX_QUESTION_CHARS
    assert SemanticCache.model_fields["max_question_chars"].default == MAX_QUESTION_CHARS


def test_the_limit_is_a_setting_and_a_question_at_the_limit_is_cached(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path, max_question_chars=200)
    at_limit = ("How do I reset my password " * 10)[:199] + "?"
    assert len(at_limit) == 200
    assert cache.update(at_limit, "Settings.") is True
    assert cache.lookup(at_limit) == "Settings."
    assert cache.decide(at_limit + " Please?").reason == "too_long"


def test_the_guards_refuse_to_compare_past_the_limit_without_reading(seen: list[int]) -> None:
    long = MEGABYTE[:20_000]
    result = guards.guard_mismatch(long, long)
    assert result.reason == "length"
    assert guards.guard_mismatch(MEGABYTE, MEGABYTE).reason == "length"
    assert seen == []


def _question(words: int, seed: int = 7) -> str:
    rng = random.Random(seed)  # noqa: S311 - a fixed test text, not a secret
    vocab = "reset password account email login settings page user data store cache from to into".split()
    return " ".join(f"{rng.choice(vocab)}{rng.randint(0, 60)}" if rng.random() < 0.5 else rng.choice(vocab)
                    for _ in range(words)) + "?"  # fmt: skip


def _line_events(call: Callable[[], object]) -> int:
    """Lines executed in the guards' module while ``call`` runs (a count of work, not a time)."""
    count = 0
    target = guards.__file__

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if frame.f_code.co_filename != target:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


def test_comparing_two_long_questions_is_linear_in_their_words() -> None:
    small, large = _question(600), _question(1200)
    work = {}
    for name, text in (("small", small), ("large", large)):
        work[name] = _line_events(lambda t=text: guards.guard_mismatch(t, t, max_chars=10**7))
    assert guards.guard_mismatch(large, large, max_chars=10**7).reason is None
    assert work["large"] < 2.5 * work["small"], f"twice the words, {work['large'] / work['small']:.1f}x the work"


def test_the_llm_cache_adapter_neither_raises_nor_caches_a_huge_prompt(tmp_path: Path) -> None:
    cache, embeddings = make_cache(tmp_path)
    adapter = SemanticLLMCache(cache).for_user("alice")
    prompt = dumps([HumanMessage(MEGABYTE)])
    generations = [ChatGeneration(message=AIMessage("Settings."))]
    adapter.update(prompt, "model-x", generations)
    assert embeddings.texts == [], "nothing was embedded"
    assert adapter.lookup(prompt, "model-x") is None
    assert cache._backend.get("user:alice", {}) == []


def _unrelated(words: int, seed: int) -> str:
    rng = random.Random(seed)  # noqa: S311 - a fixed test text, not a secret
    return " ".join("".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(4, 8))) for _ in range(words))


def test_comparing_two_different_long_questions_is_linear_and_embeds_few_words() -> None:
    work = {}
    for words in (300, 600):
        a, b = _unrelated(words, 1), _unrelated(words, 2)
        work[words] = _line_events(lambda a=a, b=b: guards.guard_mismatch(a, b, max_chars=10**7))
    assert work[600] < 2.5 * work[300], f"twice the words, {work[600] / work[300]:.1f}x the work"
    asked: list[int] = []

    def similarity(left: Sequence[str], right: Sequence[str]) -> list[list[float]]:
        asked.append(len(left) + len(right))
        return [[0.0] * len(right) for _ in left]

    a, b = _unrelated(600, 1), _unrelated(600, 2)
    assert guards.guard_mismatch(a, b, word_similarity=similarity, max_chars=10**7).reason == "content"
    assert asked == [], "past MAX_UNALIGNED_WORDS unaligned words no word is embedded"
    few_a, few_b = "How do I reset my password quickly?", "How do I reset my passphrase quickly?"
    guards.guard_mismatch(few_a, few_b, word_similarity=similarity)
    assert asked == [2], "a few unaligned words are still weighed by meaning"
