"""``session-rag serve`` end to end: a real server process, driven by the clients people point at it.

The official ``openai`` client, LangChain's ``ChatOpenAI``, and a scripted chat UI (the whole message array posted
every turn, streamed); and the attacks: no or a wrong token, one user reaching another's memory, a 2 MB question,
a question over the model's window, malformed requests. The echo model answers with what the server recalled.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from langchain_openai import ChatOpenAI

from langchain_session_rag.cli.app import main
from langchain_session_rag.cli.serve import supervise
from tests.integration_tests.serve_support import (
    CALL_LOG_ENV,
    ECHO,
    Server,
    free_port,
    serve_command,
    serve_env,
    write_tokens,
)

pytestmark = pytest.mark.slow

ALICE, BOB, CAROL = "alice-token-" + "a" * 20, "bob-token-" + "b" * 20, "carol-token-" + "c" * 20


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Server]:
    """The module's one-worker server; when it stops, its sign-out folder (in its own ``TMPDIR``) goes too."""
    tokens = write_tokens(folder / "tokens", {"alice": ALICE, "bob": BOB, "carol": CAROL})
    (folder / "tmp").mkdir()
    running = Server(
        folder / "serve.log",
        *("--token-file", str(tokens), "--path", str(folder / "store"), "--chat-model", ECHO),
        **{CALL_LOG_ENV: str(folder / "calls.log"), "TMPDIR": str(folder / "tmp")},
    )
    try:
        yield running
    finally:
        running.stop()
    # One worker: uvicorn re-raises the SIGTERM it stopped on; the command still removes its sign-out folder.
    assert running.proc.returncode == 128 + 15  # SIGTERM, through the command's clean-up
    assert list((folder / "tmp").glob("session-rag-serve-*")) == []


def client(server: Server, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=token, max_retries=0)


def ask(server: Server, token: str, text: str, *, stream: bool = False) -> str:
    """One question in a new conversation, through the official client."""
    messages = [{"role": "user", "content": text}]
    if not stream:
        reply = client(server, token).chat.completions.create(model="session-rag", messages=messages)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""
    chunks = client(server, token).chat.completions.create(model="session-rag", messages=messages, stream=True)  # type: ignore[arg-type]
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def calls(folder: Path) -> int:
    log = folder / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_the_openai_client_tells_and_recalls_streaming_and_not(server: Server) -> None:
    assert ask(server, ALICE, "My bike lock code is 9931, please remember it.") == "Recalled: nothing"
    assert "9931" in ask(server, ALICE, "What is my bike lock code?", stream=True)
    assert "9931" in ask(server, ALICE, "Remind me of the bike lock code.")
    assert [m.id for m in client(server, ALICE).models.list().data] == ["session-rag"]
    chunks = list(
        client(server, ALICE).chat.completions.create(
            model="session-rag",
            messages=[{"role": "user", "content": "The bike lock code, again?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens > 0
    assert chunks[-1].usage.completion_tokens > 0


def test_chat_openai_invokes_and_streams(server: Server) -> None:
    chat = ChatOpenAI(base_url=f"{server.base}/v1", api_key=ALICE, model="session-rag", max_retries=0)  # type: ignore[arg-type]
    chat.invoke("Our team's standup is at 09:45 every Tuesday.")
    assert "09:45" in chat.invoke("When is our standup?").text
    streamed = "".join(chunk.text for chunk in chat.stream("At what time is the standup on Tuesday?"))
    assert "09:45" in streamed


def test_a_chat_ui_posts_the_whole_conversation_and_each_exchange_is_stored_once(server: Server) -> None:
    """As Open WebUI and friends do: every turn sends every message so far, streamed."""
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful assistant."}]
    questions = [
        "My favourite tomato variety is San Marzano.",
        "Which tomato variety is my favourite?",
        "Remind me: my favourite tomato variety?",
    ]
    session = None
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {CAROL}"}, timeout=60) as http:
        for question in questions:
            messages.append({"role": "user", "content": question})
            body = {"model": "session-rag", "messages": messages, "stream": True}
            with http.stream("POST", "/v1/chat/completions", json=body) as reply:
                assert reply.status_code == 200
                session = reply.headers["x-session-id"]
                events = [line.removeprefix("data: ") for line in reply.iter_lines() if line.startswith("data: ")]
            assert events[-1] == "[DONE]"
            chunks = [json.loads(e) for e in events[:-1]]
            assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
            assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
            answer = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            # The earlier turns are in the conversation sent: never recalled again as memories.
            assert answer == "Recalled: nothing"
            messages.append({"role": "assistant", "content": answer})
        listed = http.get("/v1/memory/sessions").json()["data"]
    assert [(s["session_id"], s["chunks"], s["messages"]) for s in listed] == [(session, 3, 6)]


def test_no_token_or_a_wrong_one_is_a_401_in_openais_shape(server: Server) -> None:
    with pytest.raises(openai.AuthenticationError):
        ask(server, "not-a-token-of-this-server", "Hello?")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for headers in ({}, {"Authorization": "Bearer wrong-token-xxxxxxxxxxxx"}, {"Authorization": "Basic abc"}):
        reply = httpx.post(f"{server.base}/v1/chat/completions", json=body, headers=headers)
        assert reply.status_code == 401
        assert set(reply.json()["error"]) == {"message", "type", "param", "code"}
        assert reply.json()["error"]["code"] == "invalid_api_key"
    for path in ("/v1/models", "/v1/memory/sessions", "/v1/memory/export", "/v1/memory/core"):
        assert httpx.get(f"{server.base}{path}").status_code == 401


def test_bob_never_recalls_or_reaches_alices_memory(server: Server) -> None:
    ask(server, ALICE, "The vault combination is 55-12-87.")
    answer = ask(server, BOB, "What is the vault combination?")
    assert "55-12-87" not in answer
    bob = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {BOB}"})
    alice = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {ALICE}"})
    assert "55-12-87" not in bob.get("/v1/memory/search", params={"q": "vault combination"}).text
    assert "55-12-87" not in bob.get("/v1/memory/export").text
    alice_sessions = [s["session_id"] for s in alice.get("/v1/memory/sessions").json()["data"]]
    for session in alice_sessions:  # Bob forgetting Alice's sessions by their ids removes nothing of hers
        receipt = bob.post("/v1/memory/forget", json={"session_id": session}).json()
        assert receipt["removed_chunks"] == 0
        assert receipt["user_id"] == "bob"
    assert bob.post("/v1/memory/forget", json={"all": True}).json()["user_id"] == "bob"
    assert bob.put("/v1/memory/core/memory", json={"text": "Bob likes tea."}).status_code == 200
    assert "Bob likes tea" not in alice.get("/v1/memory/core").text
    assert [s["session_id"] for s in alice.get("/v1/memory/sessions").json()["data"]] == alice_sessions
    assert "55-12-87" in ask(server, ALICE, "Tell me the vault combination.")


def test_forget_returns_a_receipt_and_the_fact_is_gone(server: Server) -> None:
    http = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {CAROL}"}, timeout=60)
    reply = http.post(
        "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "My passport number is X7741."}]},
    )
    session = reply.headers["x-session-id"]
    receipt = http.post("/v1/memory/forget", json={"session_id": session}).json()
    assert receipt["object"] == "memory.forget_receipt"
    assert (receipt["removed_chunks"], receipt["sessions_removed"]) == (1, [session])
    assert "X7741" not in ask(server, CAROL, "What is my passport number?")
    assert "X7741" not in http.get("/v1/memory/export").text


def test_a_2_mb_question_is_a_413_before_any_model_call(server: Server, folder: Path) -> None:
    before, sessions = (
        calls(folder),
        httpx.get(f"{server.base}/v1/memory/sessions", headers={"Authorization": f"Bearer {BOB}"}).json(),
    )
    huge = "remember this " * 150_000  # about 2 MB
    for stream in (False, True):
        body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": huge}]}
        reply = httpx.post(f"{server.base}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {BOB}"})
        assert reply.status_code == 413
        assert reply.json()["error"]["code"] == "request_too_large"
    assert calls(folder) == before
    after = httpx.get(f"{server.base}/v1/memory/sessions", headers={"Authorization": f"Bearer {BOB}"}).json()
    assert after == sessions


def test_a_question_over_the_window_is_refused_before_the_stream_starts(server: Server, folder: Path) -> None:
    before = calls(folder)
    long = "word " * 20_000  # 100 KB: under the body limit, over an 8,192-token window
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": long}]}
    reply = httpx.post(f"{server.base}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {BOB}"})
    assert reply.status_code == 400
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json()["error"]["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):
        ask(server, BOB, long, stream=True)
    assert calls(folder) == before


@pytest.mark.parametrize(
    ("content", "param"),
    [
        (b"{not json", None),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}', "messages[0].role"),
        (b'{"model": "m", "messages": [{"role": "assistant", "content": "hi"}]}', "messages[0].role"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "  "}]}', "messages[0].content"),
        (b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}', "messages[0].content"),
    ],
)
def test_malformed_requests_are_422_in_openais_shape(server: Server, content: bytes, param: str | None) -> None:
    reply = httpx.post(
        f"{server.base}/v1/chat/completions",
        content=content,
        headers={"Authorization": f"Bearer {BOB}", "Content-Type": "application/json"},
    )
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert (error["param"] or "").startswith(param or "")


def test_health_and_readiness(server: Server) -> None:
    assert httpx.get(f"{server.base}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{server.base}/readyz").json() == {"status": "ready", "problems": {}}


def test_the_real_local_model_answers_through_serve(tmp_path: Path) -> None:
    """The default ``--chat-model auto`` without an Ollama server (``serve_env``): SmolLM2 in process, and the log says why."""
    tokens = write_tokens(tmp_path / "tokens", {"dana": "dana-token-" + "d" * 20})
    running = Server(
        tmp_path / "serve.log",
        *("--token-file", str(tokens), "--path", str(tmp_path / "store"), "--max-tokens", "16"),
    )
    try:
        answer = ask(running, "dana-token-" + "d" * 20, "Say hello.")
        streamed = ask(running, "dana-token-" + "d" * 20, "Say hello again.", stream=True)
        sessions = httpx.get(
            f"{running.base}/v1/memory/sessions", headers={"Authorization": "Bearer dana-token-" + "d" * 20}
        ).json()["data"]
    finally:
        running.stop()
    assert answer.strip()
    assert streamed.strip()
    assert sum(s["chunks"] for s in sessions) == 2
    said = running.log.read_text(errors="replace")
    assert "--chat-model auto: not using Ollama" in said
    assert "serving SmolLM2 instead" in said


def test_a_bad_token_file_is_refused_at_start_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loose = write_tokens(tmp_path / "loose", {"erin": "e" * 24})
    loose.chmod(0o644)
    assert main(["serve", "--token-file", str(loose), "--path", str(tmp_path / "s")]) == 1
    assert "chmod 600" in capsys.readouterr().err
    short = write_tokens(tmp_path / "short", {"erin": "tooshort"})
    assert main(["serve", "--token-file", str(short), "--path", str(tmp_path / "s")]) == 1
    assert "line 1" in capsys.readouterr().err
    assert main(["serve", "--path", str(tmp_path / "s")]) == 1
    assert "--token-file" in capsys.readouterr().err
    good = write_tokens(tmp_path / "good", {"erin": "e" * 24})
    for spec in ("nosuch.module:make", "bogus"):  # refused before any worker could fail on it in a loop
        assert main(["serve", "--token-file", str(good), "--path", str(tmp_path / "s"), "--chat-model", spec]) == 2
        assert spec in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_serve_without_fastapi_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)
    tokens = write_tokens(tmp_path / "tokens", {"erin": "e" * 24})
    assert main(["serve", "--token-file", str(tokens), "--path", str(tmp_path / "s")]) == 1
    said = capsys.readouterr().err
    assert "pip install 'langchain-session-rag[serve]'" in said
    assert "Traceback" not in said


def test_an_embedded_store_with_two_workers_is_refused_once_at_start(tmp_path: Path) -> None:
    import subprocess

    tokens = write_tokens(tmp_path / "tokens", {"erin": "e" * 24})
    done = subprocess.run(
        serve_command("--workers", "2", "--token-file", str(tokens), "--path", str(tmp_path / "store"), "--port", "9"),
        env=serve_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "needs a Chroma server" in done.stderr
    assert "chroma run" in done.stderr
    assert "--server" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "store").exists()  # refused before anything was opened


def test_workers_that_all_fail_to_start_make_serve_exit_non_zero(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """With several workers uvicorn's supervisor stops when they fail to start, and used to exit 0."""
    import os
    import signal
    import subprocess

    tokens = write_tokens(tmp_path / "tokens", {"erin": "e" * 24})
    host, port = chroma_server
    command = serve_command(
        *("--workers", "2", "--token-file", str(tokens), "--server", f"{host}:{port}", "--port", str(free_port())),
        *("--chat-model", "tests.integration_tests.serve_support:broken"),
    )
    proc = subprocess.Popen(
        command, env=serve_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        said, _ = proc.communicate(timeout=180)  # bounded: a worker restarted forever would never end
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 3, said
    assert "this factory always fails" in said
    assert "failed to start" in said


def test_a_worker_that_exits_while_the_supervisor_pings_it_ends_the_ping_at_once() -> None:
    """The supervisor saw a worker that failed to start still alive, pinged it, and waited out the health check.

    The worker is gone before the ping (it failed at once: no such app), and the supervisor is made to see it
    alive, as it does while a worker is still exiting; the health check is 600 s, so only the worker's exit can
    end the ping within the join's bound.
    """
    import signal
    import threading
    from unittest import mock

    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors.multiprocess import SIGNALS

    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}  # the supervisor takes the process's signals
    config = uvicorn.Config(
        "tests.integration_tests.no_such_module:app", workers=1, log_config=None, timeout_worker_healthcheck=600
    )
    try:
        supervisor = supervise(config, [])
        supervisor.init_processes()
        worker = supervisor.processes[0]
        worker.process.join(timeout=60)
        assert worker.exitcode == STARTUP_FAILURE
        with mock.patch.object(worker.process, "is_alive", return_value=True):
            check = threading.Thread(target=supervisor.keep_subprocess_alive, daemon=True)
            check.start()
            check.join(timeout=60)
        assert not check.is_alive(), "the supervisor still waits for the exited worker's answer"
        assert supervisor.should_exit.is_set()  # it stops: a worker that failed to start is not restarted
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def test_relations_are_served_per_user_and_forgetting_the_session_removes_them(server: Server) -> None:
    carol = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {CAROL}"}, timeout=60)
    bob = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {BOB}"}, timeout=60)
    said = "Our billing API moved from Heroku to Kubernetes in March."
    reply = carol.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": said}]})
    session = reply.headers["x-session-id"]
    asked = {"entity": "billing API"}
    lines = [r["line"] for r in carol.get("/v1/memory/relations", params=asked).json()["data"]]
    assert any(line.startswith("billing API — runs on → Kubernetes [S: ") for line in lines), lines
    assert bob.get("/v1/memory/relations", params=asked).json()["data"] == []
    carol.post("/v1/memory/forget", json={"session_id": session})
    assert carol.get("/v1/memory/relations", params=asked).json()["data"] == []


def test_the_sign_out_folder_is_private_and_removed_when_serve_stops(server: Server, folder: Path) -> None:
    """Private while the server runs; removed when it stops (checked by the module's ``server`` fixture at its end)."""
    made = list((folder / "tmp").glob("session-rag-serve-*"))
    assert [p.stat().st_mode & 0o777 for p in made] == [0o700]
