from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from langchain_session_rag import LocalEmbeddings, SessionVectorMemory
from tests.integration_tests.another_process import AnotherProcess


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_chroma_server(folder: Path, port: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``chroma run`` on a loopback port and wait until it answers."""
    chroma = Path(sys.executable).parent / "chroma"
    port = port or _free_port()
    log = (folder / "server.log").open("a")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(folder / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    log.close()
    for _ in range(300):  # bounded: at most about 30 s (or 300 refused connections)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc, port
        except OSError:  # noqa: PERF203 - polling until the server answers
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    proc.kill()
    pytest.fail(f"chroma server did not start; see {folder / 'server.log'}")


def stop_chroma_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A real Chroma server (``chroma run``) on a free loopback port, stopped by its PID."""
    proc, port = start_chroma_server(tmp_path_factory.mktemp("chroma-server"))
    try:
        yield "127.0.0.1", port
    finally:
        stop_chroma_server(proc)


def ollama_host() -> str:
    return os.environ.get("OLLAMA_HOST", "http://localhost:11434")


@pytest.fixture(scope="module")
def memory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, real_embeddings: LocalEmbeddings
) -> SessionVectorMemory:
    """One embedded store per module, with the real embedding model; each test gives itself users of its own."""
    folder = tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
    return SessionVectorMemory.local(path=folder, user_id="nobody", embeddings=real_embeddings)


@pytest.fixture(scope="session")
def _process_pool() -> Iterator[list[AnotherProcess]]:
    """The session's other processes (in this xdist worker), started when first needed and reused by every test."""
    pool: list[AnotherProcess] = []
    try:
        yield pool
    finally:
        for process in pool:
            process.stop()


@pytest.fixture
def other_processes(_process_pool: list[AnotherProcess]) -> Iterator[Callable[[int], list[AnotherProcess]]]:
    """``take(n)``: ``n`` other Python processes of the session (see ``another_process.py``), each with an empty
    namespace for this test (cleared when it ends); one that ended is replaced."""

    def take(n: int) -> list[AnotherProcess]:
        for dead in [p for p in _process_pool if p.proc.poll() is not None]:
            _process_pool.remove(dead)
        _process_pool.extend(AnotherProcess() for _ in range(n - len(_process_pool)))
        return _process_pool[:n]

    yield take
    for process in _process_pool:
        if process.proc.poll() is None:
            process.reset()
