"""``session-rag chat`` driven through a pseudo-terminal, as a person types: two sessions, the second recalls the first.

The local model (SmolLM2-135M) answers weakly, so recall is checked where the chat shows it: the memories a question
recalled, printed with their markers before the answer. What needs no terminal (an ingest before a chat, the
commands that read the store afterwards, one-line errors) runs in this process (``run``: Click's ``CliRunner``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from tests.ollama_server import OllamaLoopback
from tests.unit_tests.test_cli import run, run_process

IMPORTS = Path(__file__).parents[1] / "data" / "imports"
NO_OLLAMA = "http://127.0.0.1:9"  # nothing listens there


def spawn(*args: str, env: dict[str, str]) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "langchain_session_rag", *args],
        env={**os.environ, "NO_COLOR": "1", "TERM": "dumb", "PYTHONFAULTHANDLER": "1", **env},
        encoding="utf-8",
        timeout=240,
        use_poll=True,  # not select(): a test worker may hold more than 1,024 descriptors
        dimensions=(50, 250),
    )
    child.expect("Type /help for commands")
    return child


def say(child: pexpect.spawn, text: str) -> str:
    """Type a line at the prompt; return what the chat printed until the next prompt."""
    child.expect_exact("you> ")
    child.sendline(text)
    child.expect_exact("you> ")
    shown = child.before
    child.sendline("")  # an empty line: the prompt comes back for the next say()
    return shown


def expect_end(child: pexpect.spawn) -> None:
    """Wait for the chat to end; if it hangs, fail with every thread's stack (faulthandler, on SIGABRT)."""
    try:
        child.expect(pexpect.EOF, timeout=120)
    except pexpect.TIMEOUT:
        child.kill(signal.SIGABRT)
        child.expect(pexpect.EOF, timeout=30)
        pytest.fail(f"the chat did not end; its threads:\n{child.before}")


def quit_chat(child: pexpect.spawn) -> str:
    child.expect_exact("you> ")
    child.sendline("/quit")
    expect_end(child)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before


@pytest.fixture(scope="module")
def scripted_ollama() -> Iterator[OllamaLoopback]:
    """Ollama's API serving ``smollm2:135m`` as a scripted model, for the chats whose answer's words do not matter
    (the real model answers in the pty in test_two_sessions_the_second_recalls_the_first's first session and in
    test_chat_signals.py)."""
    answers = itertools.repeat(AIMessage("I see. Tell me more."))
    with OllamaLoopback({"smollm2:135m": GenericFakeChatModel(messages=answers)}) as server:
        yield server


def test_two_sessions_the_second_recalls_the_first_then_forget_asks(tmp_path: Path,
                                                                   scripted_ollama: OllamaLoopback) -> None:  # fmt: skip
    """The first session answers with the real local model (no Ollama answers); the second with a scripted one.

    What the second session shows (the recalled memory, the commands) does not depend on its model's words. The
    store the chats leave (the first session's exchange) is then the one ``forget --all`` asks about on a terminal.
    """
    env = {"SESSION_RAG_PATH": str(tmp_path / "db"), "SESSION_RAG_USER": "alice", "OLLAMA_HOST": NO_OLLAMA}
    # The stored exchange holds the model's answer too: a short one keeps it about the user's fact (a 135M model's
    # 32-token answer here can drift far enough to fall under the default 0.3 similarity).
    first = spawn("chat", "--max-tokens", "16", env=env)
    assert "SmolLM2-135M in process" in first.before
    assert f"no Ollama server answered at {NO_OLLAMA}" in first.before  # the fallback is said, not silent
    shown = say(first, "Remember this: my bicycle is a blue Gazelle from 1998.")
    assert "(no memory recalled)" in shown
    assert "assistant> " in shown
    first.expect_exact("you> ")
    first.sendintr()  # Ctrl-C at the prompt leaves, and what was said is kept
    expect_end(first)
    first.close()
    assert first.exitstatus == 0
    assert "kept (1 exchange(s))" in first.before

    second = spawn("chat", "--model", "smollm2:135m", "--max-tokens", "16",
                   env={**env, "OLLAMA_HOST": scripted_ollama.url})  # fmt: skip
    shown = say(second, "What bicycle do I ride?")
    assert "recalled [S: " in shown
    assert "my bicycle is a blue Gazelle from 1998" in shown
    sessions = say(second, "/sessions")
    assert sessions.count("chat-") == 2
    assert "(this chat)" in sessions
    assert "Unknown command /frobnicate" in say(second, "/frobnicate")
    assert "/forget SESSION" in say(second, "/help")
    assert "The core memory is empty." in say(second, "/core")
    assert "Forgot 1 chunk(s) of this session; a new one starts" in say(second, "/forget")
    ended = quit_chat(second)
    assert "forgotten chunk(s) erased from the store's files" in ended
    _forget_asks_on_a_terminal(env, stored=1)  # the first session's exchange: the second's was forgotten


def _forget_asks_on_a_terminal(env: dict[str, str], *, stored: int) -> None:
    """``forget --all`` asks on a terminal: "n" keeps everything (all ``stored`` chunks are forgotten after "y")."""
    for answer in ("n", "y"):
        child = pexpect.spawn(
            sys.executable,
            ["-m", "langchain_session_rag", "forget", "--all"],
            env={**os.environ, "NO_COLOR": "1", **env},
            encoding="utf-8",
            timeout=240,
            use_poll=True,  # not select(): a test worker may hold more than 1,024 descriptors
        )
        child.expect_exact("Forget EVERYTHING stored for user 'alice'")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        if answer == "n":
            assert child.exitstatus != 0
            assert "Forgot" not in child.before
        else:
            assert child.exitstatus == 0
            # every chunk stored is still there to forget: "no" kept everything
            assert f"Forgot {stored} chunk(s): EVERYTHING stored for user 'alice'" in child.before


def test_ingest_a_chatgpt_export_then_chat_recalls_it_and_closing_the_terminal_after_forget_still_erases(
    tmp_path: Path, scripted_ollama: OllamaLoopback
) -> None:
    env = {"SESSION_RAG_PATH": str(tmp_path / "db"), "SESSION_RAG_USER": "alice", "OLLAMA_HOST": scripted_ollama.url}
    ingest = run_process("ingest", str(IMPORTS / "chatgpt" / "chatgpt-export.zip"), env=env)
    assert ingest.returncode == 0, ingest.stderr
    assert "6 new" in ingest.stdout
    chat = spawn("chat", "--model", "smollm2:135m", "--max-tokens", "24", env=env)
    shown = say(chat, "What is my sourdough starter called?")
    assert "recalled [S: 2025-" in shown
    assert "called Bubbles" in shown
    say(chat, "My bank PIN is ZEBRAFISH7781.")
    assert "Forgot 2 chunk(s) of this session" in say(chat, "/forget")
    chat.expect_exact("you> ")
    chat.kill(signal.SIGTERM)  # the terminal window closed
    expect_end(chat)
    chat.close()
    assert "forgotten chunk(s) erased from the store's files" in chat.before
    stored = b"".join(p.read_bytes() for p in (tmp_path / "db").rglob("*") if p.is_file())
    assert b"ZEBRAFISH7781" not in stored


def test_chat_over_the_ollama_protocol(tmp_path: Path, real_embeddings: Any) -> None:
    """Ollama's wire protocol end to end: ChatOllama streams the answer and OllamaEmbeddings writes the store.

    The chat model behind the Ollama API is scripted (the words are not what is checked; the real model over the
    wire is in test_ollama_wire.py), the embeddings are the real model's. The chat runs in this process.
    """
    said = "Noted: your gym locker code is 4471."
    chat_model = GenericFakeChatModel(messages=itertools.repeat(AIMessage(said)))
    with OllamaLoopback({"smollm2:135m": chat_model, "all-minilm": real_embeddings}) as server:
        env = {"SESSION_RAG_PATH": str(tmp_path / "db"), "SESSION_RAG_USER": "alice", "OLLAMA_HOST": server.url}
        args = ("chat", "--model", "smollm2:135m", "--max-tokens", "24", "--embeddings", "ollama:all-minilm")
        chat = run(*args, env=env, stdin="My locker code at the gym is 4471.\n/quit\n")
        assert f"smollm2:135m on Ollama at {server.url}" in chat.stderr
        assert f"assistant> {said}" in chat.stdout, "the streamed answer, shown whole"
        assert server.requests["/api/chat"] == 1
        assert server.requests["/api/embed"] >= 1
        found = json.loads(run("search", "gym locker code", "--json", env=env).stdout)  # the store knows its model
        assert found[0]["embedding_model"] == "ollama:all-minilm"
        assert "4471" in found[0]["text"]
        assert said in found[0]["text"]
        # a real process, on a store of its own (this process holds the first one's lock), of Ollama's embeddings
        stopped = spawn("chat", "--model", "smollm2:135m", "--max-tokens", "16", "--embeddings", "ollama:all-minilm",
                        env={**env, "SESSION_RAG_PATH": str(tmp_path / "db-stopped")})  # fmt: skip
    # the server is gone now: the chat says so and goes on; listing works without the embedding model
    shown = say(stopped, "Are you still there?")
    assert "No answer: a model server did not answer" in shown
    assert f"chat model: smollm2:135m on Ollama at {server.url}" in shown
    assert "(1 exchange(s)" not in quit_chat(stopped)
    assert len(json.loads(run("sessions", "--json", env=env).stdout)) == 1
    assert "no Ollama server answers" in run("search", "locker", env=env, check=1).stderr
    bad_host = run("chat", env={**env, "OLLAMA_HOST": "http://[::1"}, check=1).stderr
    assert "The Ollama address 'http://[::1' (OLLAMA_HOST, or the host given) cannot be read" in bad_host
    with OllamaLoopback({"all-minilm": real_embeddings}) as server:
        env = {**env, "OLLAMA_HOST": server.url, "SESSION_RAG_PATH": str(tmp_path / "db2")}
        missing = run("chat", "--embeddings", "ollama:nomic-embed-text", env=env, check=1).stderr
        assert "has no model 'nomic-embed-text'" in missing
