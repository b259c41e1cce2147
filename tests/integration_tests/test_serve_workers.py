"""Many workers over one Chroma server: a turn's exchange is visible to every worker by the time its response ends.

Twenty users, interleaved: each tells a fact on one worker and asks for it at once on another. Distribution is
forced by running four single-worker servers on four ports over the same Chroma server (what ``--workers 4``
does, with the worker chosen by the test), then checked once more with one ``serve --workers 4``. The memory's
write linger is set to 30 s, so an exchange that only reached the store by its background writer would be missed:
the server must flush it before the response ends. Then each user forgets on a third worker and asks on a
fourth: the forgotten fact never comes back.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration_tests.serve_support import ECHO, Server, write_tokens

PID = "tests.integration_tests.serve_support:pid"

pytestmark = pytest.mark.slow

USERS = [f"user{i:02d}" for i in range(20)]
LINGER = {"SESSION_RAG_SERVE_WRITE_LINGER": "30"}


def token(user: str) -> str:
    return f"{user}-token-0123456789abcdef"


def code(user: str) -> str:
    return f"ZQ{user[-2:]}K{int(user[-2:]) * 37 % 100:02d}"


def turn(base: str, user: str, text: str, *, stream: bool = False) -> tuple[str, float]:
    """One question in a new conversation on the server at ``base``: the answer and the seconds it took."""
    body = {"model": "session-rag", "stream": stream, "messages": [{"role": "user", "content": text}]}
    headers = {"Authorization": f"Bearer {token(user)}", "Connection": "close"}  # a new connection every turn
    started = time.perf_counter()
    reply = httpx.post(f"{base}/v1/chat/completions", json=body, headers=headers, timeout=120)
    took = time.perf_counter() - started
    assert reply.status_code == 200, reply.text
    if not stream:
        return reply.json()["choices"][0]["message"]["content"], took
    pieces = [line.removeprefix("data: ") for line in reply.text.splitlines() if line.startswith("data: ")]
    assert pieces[-1] == "[DONE]"
    chunks = [json.loads(p) for p in pieces[:-1]]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]), took


def others(user: str, answer: str) -> list[str]:
    return [u for u in USERS if u != user and code(u) in answer]


def run_users(bases: list[str]) -> dict[str, object]:
    """Tell, then ask on another worker, for every user at once (five at a time, interleaved); then forget and ask."""
    latencies: list[float] = []

    def tell_and_ask(index: int) -> tuple[bool, list[str]]:
        user = USERS[index]
        _, took = turn(bases[index % len(bases)], user, f"Remember: my locker code is {code(user)}.")
        answer, took2 = turn(bases[(index + 1) % len(bases)], user, "What is my locker code?", stream=index % 2 == 0)
        latencies.extend([took, took2])
        return code(user) in answer, others(user, answer)

    def forget_and_ask(index: int) -> tuple[bool, list[str]]:
        user = USERS[index]
        headers = {"Authorization": f"Bearer {token(user)}"}
        receipt = httpx.post(f"{bases[(index + 2) % len(bases)]}/v1/memory/forget", json={"all": True}, headers=headers)
        assert receipt.status_code == 200
        assert receipt.json()["removed_chunks"] >= 2
        asked_on = bases[(index + 3) % len(bases)]
        answer, _ = turn(asked_on, user, "What is my locker code?")
        found = httpx.get(f"{asked_on}/v1/memory/search", params={"q": "locker code"}, headers=headers).text
        return code(user) in answer or code(user) in found, others(user, answer)

    with ThreadPoolExecutor(max_workers=5) as pool:
        told = list(pool.map(tell_and_ask, range(len(USERS))))
        forgotten = list(pool.map(forget_and_ask, range(len(USERS))))
    ordered = sorted(latencies)
    print(
        f"\n{len(bases)} server(s): turn latency p50 {statistics.median(ordered) * 1000:.0f} ms, "
        f"p95 {ordered[int(len(ordered) * 0.95) - 1] * 1000:.0f} ms over {len(ordered)} turns"
    )
    return {
        "misses": [u for u, (hit, _) in zip(USERS, told, strict=True) if not hit],
        "cross": {u: c for u, (_, c) in zip(USERS, told, strict=True) if c},
        "cross_after_forget": {u: c for u, (_, c) in zip(USERS, forgotten, strict=True) if c},
        "returned_after_forget": [u for u, (hit, _) in zip(USERS, forgotten, strict=True) if hit],
    }


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    return write_tokens(tmp_path / "tokens", {user: token(user) for user in USERS})


@pytest.fixture
def four_servers(tmp_path: Path, tokens: Path, chroma_server: tuple[str, int]) -> Iterator[list[str]]:
    host, port = chroma_server
    args = ("--token-file", str(tokens), "--server", f"{host}:{port}", "--chat-model", ECHO)
    with ThreadPoolExecutor(max_workers=4) as pool:  # started side by side: each loads the embedding model
        starting = [pool.submit(Server, tmp_path / f"serve{index}.log", *args, **LINGER) for index in range(4)]
    servers = [s.result() for s in starting if s.exception() is None]
    try:
        for failed in (s.exception() for s in starting if s.exception() is not None):
            raise failed
        yield [s.base for s in servers]
    finally:
        for server in servers:
            server.stop()


def test_four_workers_twenty_users_read_their_writes_and_forget_everywhere(four_servers: list[str]) -> None:
    outcome = run_users(four_servers)
    assert outcome == {"misses": [], "cross": {}, "cross_after_forget": {}, "returned_after_forget": []}


def test_one_serve_with_four_uvicorn_workers(tmp_path: Path, tokens: Path, chroma_server: tuple[str, int]) -> None:
    host, port = chroma_server
    args = ("--token-file", str(tokens), "--server", f"{host}:{port}", "--chat-model", ECHO, "--workers", "4")
    server = Server(tmp_path / "serve.log", *args, **LINGER)
    try:
        outcome = run_users([server.base])
    finally:
        server.stop()
    assert outcome == {"misses": [], "cross": {}, "cross_after_forget": {}, "returned_after_forget": []}


ALICE, BOB = "alice-signin-token-0123456789", "bob-signin-token-0123456789ab"
COOKIE = "session_rag_ui_"  # then a short id of the server's pages secret: one name for all its workers


def worker_of(http: httpx.Client, bearer: str) -> int:
    """The pid of the worker on the other end of ``http``'s kept-alive connection (asked through a chat turn)."""
    body = {"model": "session-rag", "messages": [{"role": "user", "content": "Which worker are you?"}]}
    reply = http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {bearer}"})
    assert reply.status_code == 200, reply.text
    return int(reply.json()["choices"][0]["message"]["content"].removeprefix("pid "))


def one_client_per_worker(base: str, workers: int) -> dict[int, httpx.Client]:
    """A client whose kept-alive connection each worker accepted (new connections until every worker took one)."""
    found: dict[int, httpx.Client] = {}
    for _ in range(60):  # the kernel hands each new connection to any worker: bounded tries
        http = httpx.Client(base_url=base, follow_redirects=False, timeout=60)
        pid = worker_of(http, ALICE)
        if pid in found:
            http.close()
        else:
            found[pid] = http
        if len(found) == workers:
            return found
    msg = f"{workers} workers, but 60 connections reached only {sorted(found)}"
    raise AssertionError(msg)


def page(http: httpx.Client, path: str, cookie: str) -> httpx.Response:
    """A page fetched with a captured ``name=value`` cookie (the client keeps no cookie of its own)."""
    http.cookies.clear()
    return http.get(path, headers={"cookie": cookie})


def signed_in_on(http: httpx.Client, token: str) -> str:
    """Sign in on this worker; the cookie the browser would keep and send back, as ``name=value``."""
    http.cookies.clear()
    answer = http.post("/ui/login", data={"token": token}, headers={"sec-fetch-site": "same-origin"})
    assert answer.status_code == 303, answer.text
    [(name, value)] = [(name, value) for name, value in answer.cookies.items() if name.startswith(COOKIE)]
    return f"{name}={value}"


def signed_out_on(http: httpx.Client, cookie: str) -> None:
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page(http, "/ui/core", cookie).text)
    assert csrf is not None
    http.cookies.clear()
    headers = {"cookie": cookie, "sec-fetch-site": "same-origin"}
    assert http.post("/ui/logout", data={"csrf": csrf.group(1)}, headers=headers).status_code == 303


def test_a_sign_out_on_one_worker_ends_the_sign_in_on_every_worker(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """Issue 43: a cookie captured from another port opens nothing after sign-out, in any worker, and is no API key."""
    tokens = write_tokens(tmp_path / "tokens", {"alice": ALICE, "bob": BOB})
    host, port = chroma_server
    args = ("--token-file", str(tokens), "--server", f"{host}:{port}", "--chat-model", PID, "--workers", "2")
    server = Server(tmp_path / "serve.log", *args)
    clients: dict[int, httpx.Client] = {}
    try:
        clients.update(one_client_per_worker(server.base, 2))
        (first, one), (second, other) = clients.items()
        for signs_in, signs_out, checks in ((one, one, other), (other, other, one), (one, other, one)):
            value = signed_in_on(signs_in, ALICE)
            assert ALICE not in value
            assert [page(c, "/ui/sessions", value).status_code for c in (one, other)] == [200, 200]
            for c in (one, other):  # the value is no API key on any worker
                bearer = {"Authorization": f"Bearer {value.partition('=')[2]}"}
                assert c.get("/v1/memory/sessions", headers=bearer).status_code == 401
            signed_out_on(signs_out, value)
            ended = [page(c, "/ui/sessions", value) for c in (checks, signs_out)]
            assert [(r.status_code, r.headers["location"]) for r in ended] == [(303, "/ui/login")] * 2
        # The token leaves the token file: her API key and her sign-in end on both workers, without a restart.
        value = signed_in_on(one, ALICE)
        bob = signed_in_on(other, BOB)
        write_tokens(tokens, {"bob": BOB})
        assert [page(c, "/ui/sessions", value).status_code for c in (one, other)] == [303, 303]
        assert [page(c, "/ui/sessions", bob).status_code for c in (one, other)] == [200, 200]
        for c in (one, other):
            assert c.get("/v1/memory/sessions", headers={"Authorization": f"Bearer {ALICE}"}).status_code == 401
        assert {worker_of(one, BOB), worker_of(other, BOB)} == {first, second}  # the same two connections all along
        folder = Path(json.loads(settings_of(first))["sign_out_dir"])
        assert json.loads(settings_of(second))["sign_out_dir"] == str(folder)
        assert folder.stat().st_mode & 0o777 == 0o700
        assert len(list(folder.iterdir())) == 3  # the three sign-outs above
    finally:
        for c in clients.values():
            c.close()
        server.stop()
    assert not folder.exists()  # removed at exit, with the secret that signed the sign-ins


def settings_of(pid: int) -> str:
    """The settings ``session-rag serve`` handed a worker (its environment)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(v for k, _, v in (e.partition(b"=") for e in environ) if k == b"SESSION_RAG_SERVE_SETTINGS").decode()
