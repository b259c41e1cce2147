"""A Chroma server that goes away is one typed, retryable error; when it is back, the memory works again."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.stores.chroma_calls import PROBE_EVERY
from tests.integration_tests.conftest import _free_port, start_chroma_server, stop_chroma_server


def test_no_server_is_a_typed_error() -> None:
    with pytest.raises(StoreUnavailableError, match="No Chroma server answers"):
        SessionVectorMemory.server(
            "127.0.0.1", _free_port(), user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)
        )
    assert issubclass(StoreUnavailableError, ConnectionError)


def _once_it_answers(call: Callable[[], int]) -> int:
    """``call()`` once the breaker's heartbeat probe (one a second) has seen the server again: at most 20 tries."""
    for _ in range(20):
        try:
            return call()
        except StoreUnavailableError:  # noqa: PERF203 - a retry loop, bounded
            time.sleep(PROBE_EVERY / 2)
    return call()


def test_a_server_that_goes_down_and_comes_back(tmp_path: Path) -> None:
    proc, port = start_chroma_server(tmp_path)
    try:
        memory = SessionVectorMemory.server(
            "127.0.0.1", port, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)
        )
        memory.add_messages([{"role": "user", "content": "The deploy key is in the vault."}], session_id="s1")
        stop_chroma_server(proc)
        with pytest.raises(StoreUnavailableError, match="did not answer"):
            memory.add_messages([{"role": "user", "content": "Second note."}], session_id="s2")
        with pytest.raises(StoreUnavailableError):
            memory.count()
        with pytest.raises(StoreUnavailableError):  # the core memory's store, first opened now
            memory.core.render()
        proc, _ = start_chroma_server(tmp_path, port)
        assert _once_it_answers(memory.count) == 1  # by itself, within the breaker's next heartbeat probes
        memory.add_messages([{"role": "user", "content": "Second note."}], session_id="s2")
        assert memory.count() == 2
    finally:
        stop_chroma_server(proc)
