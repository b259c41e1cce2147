"""Connections that never finish their headers are closed, and a worker keeps at most ``--max-connections``.

Without a deadline, a client that connects and sends nothing (or half a header) held its descriptor for ever;
about 20,000 of them, no token needed, exhausted the server's file descriptors.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration_tests.serve_support import ECHO, Server, write_tokens

pytestmark = pytest.mark.slow

HEADER_TIMEOUT = 2
CAP = 20
BOUND = 30.0
"""Generous upper bound (seconds) for the server to close what it must close: behaviour, not a benchmark."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve-connections")
    tokens = write_tokens(folder / "tokens", {"alice": "alice-token-" + "a" * 20})
    args = ("--token-file", str(tokens), "--path", str(folder / "store"), "--chat-model", ECHO)
    limits = ("--header-timeout", str(HEADER_TIMEOUT), "--max-connections", str(CAP))
    running = Server(folder / "serve.log", *args, *limits)
    try:
        yield running
    finally:
        running.stop()


def _connect(port: int, first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    if first:
        sock.sendall(first)
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed the connection (EOF or reset) before ``BOUND`` seconds, sending no answer."""
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    finally:
        sock.close()
    return data == b""


def test_connections_that_never_finish_their_headers_are_closed(server: Server) -> None:
    silent = [_connect(server.port) for _ in range(5)]
    partial = [_connect(server.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") for _ in range(5)]
    assert httpx.get(f"{server.base}/healthz").status_code == 200  # a whole request is served meanwhile
    assert [_closed_by_server(s) for s in silent + partial] == [True] * 10  # each within its socket's BOUND
    with httpx.Client(base_url=server.base) as client:  # keep-alive: a second request on one connection is served
        assert [client.get("/healthz").status_code for _ in range(3)] == [200, 200, 200]


def test_a_worker_closes_connections_beyond_its_cap_and_serves_again_after(server: Server) -> None:
    idle = [_connect(server.port) for _ in range(CAP)]
    time.sleep(0.5)  # let the worker accept them (ordering only; nothing is timed)
    extra = _connect(server.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert _closed_by_server(extra)  # closed with no answer: the cap holds
    assert [_closed_by_server(s) for s in idle] == [True] * CAP  # the idle ones reach their headers' deadline
    assert httpx.get(f"{server.base}/healthz").status_code == 200
