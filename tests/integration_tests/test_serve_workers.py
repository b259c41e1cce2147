from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.integration_tests.serve_support import Server, write_tokens

PID = "tests.integration_tests.serve_support:pid"

pytestmark = pytest.mark.slow

USERS = [f"user{i:02d}" for i in range(20)]
LINGER = {"SESSION_RAG_SERVE_WRITE_LINGER": "30"}
ALICE, BOB, PROBE = "alice-signin-token-0123456789", "bob-signin-token-0123456789ab", "probe-token-0123456789abcdef"
COOKIE = "session_rag_ui_"  # then a short id of the server's pages secret: one name for all its workers


def token(user: str) -> str:
    return f"{user}-token-0123456789abcdef"


def code(user: str) -> str:
    return f"ZQ{user[-2:]}K{int(user[-2:]) * 37 % 100:02d}"


@dataclass
class Serve:
    """The module's ``serve --workers 4``: its address, its token file, the sign-out folders its tests saw."""

    base: str
    tokens: Path
    users: dict[str, str]
    sign_out_dirs: list[Path] = field(default_factory=list)


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory, chroma_server: tuple[str, int]) -> Iterator[Serve]:
    folder = tmp_path_factory.mktemp("serve-workers")
    users = {user: token(user) for user in USERS} | {"alice": ALICE, "bob": BOB, "probe": PROBE}
    tokens = write_tokens(folder / "tokens", users)
    host, port = chroma_server
    args = ("--token-file", str(tokens), "--server", f"{host}:{port}", "--chat-model", PID, "--workers", "4")
    server = Server(folder / "serve.log", *args, **LINGER)
    started = Serve(server.base, tokens, users)
    try:
        yield started
    finally:
        server.stop()
    for gone in started.sign_out_dirs:  # removed at exit, with the secret that signed the sign-ins
        assert not gone.exists()


def worker_of(http: httpx.Client, bearer: str) -> int:
    """The pid of the worker on the other end of ``http``'s kept-alive connection (asked through a chat turn)."""
    body = {"model": "session-rag", "messages": [{"role": "user", "content": "Which worker are you?"}]}
    reply = http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {bearer}"})
    assert reply.status_code == 200, reply.text
    return int(reply.json()["choices"][0]["message"]["content"].split()[1])


def one_client_per_worker(base: str, workers: int) -> dict[int, httpx.Client]:
    """A client whose one kept-alive connection each of ``workers`` workers accepted, checked once more at the end.

    The kernel hands each new connection to any worker, so new ones are opened until every worker took one; uvicorn
    closes a connection idle for 5 s (the client would then reconnect to any worker), so the ones found are kept busy
    meanwhile, and the set is asked again at the end and looked for anew if a connection moved (bounded tries).
    """
    for _ in range(5):
        found: dict[int, httpx.Client] = {}
        for _ in range(200):
            limits = httpx.Limits(max_connections=1)  # requests from several threads wait for the one connection
            http = httpx.Client(base_url=base, follow_redirects=False, timeout=60, limits=limits)
            pid = worker_of(http, PROBE)
            if pid in found:
                http.close()
            else:
                found[pid] = http
            for kept in found.values():
                assert kept.get("/healthz").status_code == 200
            if len(found) == workers:
                break
        if len(found) == workers and [worker_of(http, PROBE) for http in found.values()] == list(found):
            return found
        for http in found.values():
            http.close()
    msg = f"found no kept-alive connection to each of {workers} workers"
    raise AssertionError(msg)


def turn(http: httpx.Client, user: str, text: str, *, stream: bool = False) -> tuple[str, int, float]:
    """One question in a new conversation on ``http``'s worker: the answer, the worker's pid, the seconds it took."""
    body = {"model": "session-rag", "stream": stream, "messages": [{"role": "user", "content": text}]}
    started = time.perf_counter()
    reply = http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {token(user)}"})
    took = time.perf_counter() - started
    assert reply.status_code == 200, reply.text
    if stream:
        pieces = [line.removeprefix("data: ") for line in reply.text.splitlines() if line.startswith("data: ")]
        assert pieces[-1] == "[DONE]"
        chunks = [json.loads(p) for p in pieces[:-1]]
        answer = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    else:
        answer = reply.json()["choices"][0]["message"]["content"]
    return answer, int(answer.split()[1]), took


def others(user: str, answer: str) -> list[str]:
    return [u for u in USERS if u != user and code(u) in answer]


def run_users(workers: list[httpx.Client]) -> dict[str, object]:
    """Tell, then ask on another worker, for every user at once (five at a time, interleaved); then forget and ask."""
    latencies: list[float] = []

    def tell_and_ask(index: int) -> tuple[bool, list[str], bool]:
        user = USERS[index]
        _, told_on, took = turn(workers[index % len(workers)], user, f"Remember: my locker code is {code(user)}.")
        for step in range(1, len(workers)):  # the next worker; past one whose connection moved to the teller's
            asked = workers[(index + step) % len(workers)]
            answer, asked_on, took2 = turn(asked, user, "What is my locker code?", stream=index % 2 == 0)
            latencies.extend([took, took2])
            if asked_on != told_on:
                break
        return code(user) in answer, others(user, answer), told_on == asked_on

    def forget_and_ask(index: int) -> tuple[bool, list[str]]:
        user = USERS[index]
        headers = {"Authorization": f"Bearer {token(user)}"}
        receipt = workers[(index + 2) % len(workers)].post("/v1/memory/forget", json={"all": True}, headers=headers)
        assert receipt.status_code == 200
        assert receipt.json()["removed_chunks"] >= 2
        asked_on = workers[(index + 3) % len(workers)]
        answer, _, _ = turn(asked_on, user, "What is my locker code?")
        found = asked_on.get("/v1/memory/search", params={"q": "locker code"}, headers=headers).text
        return code(user) in answer or code(user) in found, others(user, answer)

    with ThreadPoolExecutor(max_workers=5) as pool:
        told = list(pool.map(tell_and_ask, range(len(USERS))))
        forgotten = list(pool.map(forget_and_ask, range(len(USERS))))
    ordered = sorted(latencies)
    print(
        f"\n{len(workers)} workers: turn latency p50 {statistics.median(ordered) * 1000:.0f} ms, "
        f"p95 {ordered[int(len(ordered) * 0.95) - 1] * 1000:.0f} ms over {len(ordered)} turns"
    )
    return {
        "misses": [u for u, (hit, _, _) in zip(USERS, told, strict=True) if not hit],
        "cross": {u: c for u, (_, c, _) in zip(USERS, told, strict=True) if c},
        "asked_on_the_worker_told": [u for u, (_, _, same) in zip(USERS, told, strict=True) if same],
        "cross_after_forget": {u: c for u, (_, c) in zip(USERS, forgotten, strict=True) if c},
        "returned_after_forget": [u for u, (hit, _) in zip(USERS, forgotten, strict=True) if hit],
    }


def test_four_workers_twenty_users_read_their_writes_and_forget_everywhere(serve: Serve) -> None:
    clients = one_client_per_worker(serve.base, 4)
    try:
        outcome = run_users(list(clients.values()))
    finally:
        for http in clients.values():
            http.close()
    assert outcome == {
        "misses": [],
        "cross": {},
        "asked_on_the_worker_told": [],
        "cross_after_forget": {},
        "returned_after_forget": [],
    }


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


def test_a_sign_out_on_one_worker_ends_the_sign_in_on_every_worker(serve: Serve) -> None:
    """Issue 43: a cookie captured from another port opens nothing after sign-out, in any worker, and is no API key."""
    clients = one_client_per_worker(serve.base, 2)  # two of the four: one signs in, the other signs out
    try:
        pids, every = list(clients), list(clients.values())
        one, other = every[:2]
        for signs_in, signs_out in ((one, one), (other, other), (one, other)):
            value = signed_in_on(signs_in, ALICE)
            assert ALICE not in value
            assert [page(c, "/ui/sessions", value).status_code for c in every] == [200] * 2
            for c in every:  # the value is no API key on any worker
                bearer = {"Authorization": f"Bearer {value.partition('=')[2]}"}
                assert c.get("/v1/memory/sessions", headers=bearer).status_code == 401
            signed_out_on(signs_out, value)
            ended = [page(c, "/ui/sessions", value) for c in every]
            assert [(r.status_code, r.headers["location"]) for r in ended] == [(303, "/ui/login")] * 2
        # The token leaves the token file: her API key and her sign-in end on every worker, without a restart.
        value = signed_in_on(one, ALICE)
        bob = signed_in_on(other, BOB)
        write_tokens(serve.tokens, {user: t for user, t in serve.users.items() if user != "alice"})
        assert [page(c, "/ui/sessions", value).status_code for c in every] == [303] * 2
        assert [page(c, "/ui/sessions", bob).status_code for c in every] == [200] * 2
        for c in every:
            assert c.get("/v1/memory/sessions", headers={"Authorization": f"Bearer {ALICE}"}).status_code == 401
        assert [worker_of(c, BOB) for c in every] == pids  # the same two connections all along
        folder = Path(json.loads(settings_of(pids[0]))["sign_out_dir"])
        serve.sign_out_dirs.append(folder)  # the module's server checks at exit that it is gone
        assert {json.loads(settings_of(pid))["sign_out_dir"] for pid in pids} == {str(folder)}
        assert folder.stat().st_mode & 0o777 == 0o700
        assert len(list(folder.iterdir())) == 3  # the three sign-outs above
    finally:
        for c in clients.values():
            c.close()


def settings_of(pid: int) -> str:
    """The settings ``session-rag serve`` handed a worker (its environment)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(v for k, _, v in (e.partition(b"=") for e in environ) if k == b"SESSION_RAG_SERVE_SETTINGS").decode()
