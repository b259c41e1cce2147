"""A Chroma server call that does not answer trips its server's breaker: the next calls fail at once, typed.

The breaker asks the server's heartbeat (a stand-in here) at most every ``PROBE_EVERY`` seconds and closes when it
answers. The real frozen server (SIGSTOP) under 50 concurrent requests is
``tests/integration_tests/test_store_deadlines.py``.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import httpx
import pytest
from chromadb.config import Settings

from langchain_session_rag.errors import InvalidArgumentError, StoreUnavailableError
from langchain_session_rag.stores import chroma_calls
from langchain_session_rag.stores.adapter import open_chroma_client


class _ServerClient:
    """Stands in for a chromadb HttpClient (only its settings are read)."""

    def __init__(self, port: int) -> None:
        self._settings = Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI", chroma_server_host="127.0.0.1", chroma_server_http_port=port
        )

    def get_settings(self) -> Settings:
        return self._settings


class _Store:
    """A store whose calls do what ``outcome`` says: answer, or time out as a frozen server does."""

    name = "frozen"

    def __init__(self, port: int) -> None:
        self.client = _ServerClient(port)
        self.calls = 0
        self.frozen = False
        self.hold: threading.Event | None = None

    @chroma_calls.server_call
    def read(self) -> str:
        self.calls += 1
        if self.hold is not None:
            self.hold.wait(5)
        if self.frozen:
            msg = "timed out"
            raise httpx.ReadTimeout(msg)
        return "ok"


@pytest.fixture
def heartbeat(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The server's heartbeat as the breaker sees it: ``answers`` or not; ``asked`` counts the probes."""
    state: dict[str, Any] = {"answers": False, "asked": 0}

    def probe(host: str, port: int, timeout: float) -> None:
        del timeout
        state["asked"] += 1
        if not state["answers"]:
            msg = f"No Chroma server answers at {host}:{port} (timed out)"
            raise StoreUnavailableError(msg)

    monkeypatch.setattr(chroma_calls, "probe_server", probe)
    return state


_PORTS = itertools.count(40_001)
"""A port per test: breakers are per server address, per process."""


def test_a_call_past_its_deadline_trips_the_breaker_and_the_next_fail_at_once(heartbeat: dict[str, Any]) -> None:
    store = _Store(next(_PORTS))
    assert store.read() == "ok"
    store.frozen = True
    with pytest.raises(StoreUnavailableError, match=r"did not answer .*sending it again is safe"):
        store.read()
    calls = store.calls
    for _ in range(20):  # refused without calling the server
        with pytest.raises(StoreUnavailableError, match="fail at once until it answers its heartbeat"):
            store.read()
    assert store.calls == calls
    assert heartbeat["asked"] == 1  # the late call's own check (a server that answers it is slow, not down)
    assert "did not answer" in (chroma_calls.server_problem() or "")

    store.frozen = False
    time.sleep(chroma_calls.PROBE_EVERY + 0.05)
    with pytest.raises(StoreUnavailableError):  # the probe: the heartbeat does not answer yet
        store.read()
    assert (heartbeat["asked"], store.calls) == (2, calls)
    heartbeat["answers"] = True
    time.sleep(chroma_calls.PROBE_EVERY + 0.05)
    assert store.read() == "ok"  # the heartbeat answers: the breaker closes by itself
    assert store.read() == "ok"
    assert heartbeat["asked"] == 3
    assert chroma_calls.server_problem() is None


def test_a_slow_server_that_answers_its_heartbeat_fails_that_call_only(heartbeat: dict[str, Any]) -> None:
    """A loaded server, alive but slower than the deadline: each late call fails, typed; the breaker stays closed."""
    heartbeat["answers"] = True
    store = _Store(next(_PORTS))
    store.frozen = True
    for _ in range(5):  # calls that each reach the server and time out there
        with pytest.raises(StoreUnavailableError, match=r"did not answer within 5 s .*raise its read_timeout"):
            store.read()
    assert store.calls == 5  # none refused at once
    assert heartbeat["asked"] == 1  # asked once, its answer trusted for PROBE_EVERY
    assert chroma_calls.server_problem() is None
    store.frozen = False
    assert store.read() == "ok"
    heartbeat["answers"] = False  # now the server is down too: the next late call trips the breaker
    store.frozen = True
    time.sleep(chroma_calls.PROBE_EVERY + 0.05)
    with pytest.raises(StoreUnavailableError):
        store.read()
    with pytest.raises(StoreUnavailableError, match="fail at once"):
        store.read()
    assert "did not answer" in (chroma_calls.server_problem() or "")
    heartbeat["answers"], store.frozen = True, False
    time.sleep(chroma_calls.PROBE_EVERY + 0.05)
    assert store.read() == "ok"  # closed again: the next test's worker is ready
    assert chroma_calls.server_problem() is None


def test_a_call_stuck_past_the_limit_makes_the_worker_not_ready(heartbeat: dict[str, Any]) -> None:
    del heartbeat
    store = _Store(next(_PORTS))
    store.hold = threading.Event()
    worker = threading.Thread(target=store.read)
    worker.start()
    try:
        for _ in range(100):  # bounded: the call is under way within a second
            if store.calls:
                break
            time.sleep(0.01)
        assert chroma_calls.server_problem(stuck_after=10.0) is None
        assert "has been waiting" in (chroma_calls.server_problem(stuck_after=0.0) or "")
    finally:
        store.hold.set()
        worker.join()
    assert chroma_calls.server_problem(stuck_after=0.0) is None


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), True, "5"])
def test_a_read_timeout_that_is_no_number_of_seconds_is_refused_before_any_connection(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"read_timeout must be a positive number of seconds, got"):
        open_chroma_client(host="127.0.0.1", port=8000, read_timeout=value)  # type: ignore[arg-type]
