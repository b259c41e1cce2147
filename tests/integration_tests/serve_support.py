"""What the ``session-rag serve`` tests share: the echo chat model, starting and stopping real servers, tokens.

The echo model (``--chat-model tests.integration_tests.serve_support:echo``) answers with the memories the graph
put in its prompt (the ``<retrieved_context>`` block of the last user message), so a test reads from the answer
what the server recalled for that user. With ``SERVE_FAKE_CALL_LOG=FILE`` it appends a line to FILE per call, so a
test sees whether a request reached the model.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

CALL_LOG_ENV = "SERVE_FAKE_CALL_LOG"
ECHO = "tests.integration_tests.serve_support:echo"
REPO = Path(__file__).resolve().parents[2]
_CONTEXT = re.compile(r"<retrieved_context>(.*?)</retrieved_context>", re.DOTALL)


class EchoMemoryModel(BaseChatModel):
    """Answers ``Recalled: <the prompt's context block>`` (``Recalled: nothing`` without one), word by word."""

    @property
    def _llm_type(self) -> str:
        return "echo-memory"

    @staticmethod
    def _answer(messages: list[BaseMessage]) -> str:
        log = os.environ.get(CALL_LOG_ENV)
        if log:
            with Path(log).open("a", encoding="utf-8") as file:
                file.write("call\n")
        found = _CONTEXT.search(messages[-1].text)
        body = " ".join(found.group(1).split()) if found else "nothing"
        return f"Recalled: {body}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del stop, run_manager, kwargs
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self._answer(messages)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        del stop, run_manager, kwargs
        words = self._answer(messages).split(" ")
        for index, word in enumerate(words):
            piece = word if index == 0 else f" {word}"
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


def echo() -> BaseChatModel:
    """The factory ``--chat-model`` names."""
    return EchoMemoryModel()


def broken() -> BaseChatModel:
    """A ``--chat-model`` factory that fails in every worker (not at the command's checks)."""
    msg = "this factory always fails"
    raise RuntimeError(msg)


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """End a server started in its own process group (it and its children), by its id: TERM, then KILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_tokens(path: Path, users: dict[str, str]) -> Path:
    """A token file (``chmod 600``) giving each user (key) its token (value)."""
    path.write_text("".join(f"{token} {user}\n" for user, token in users.items()), encoding="utf-8")
    path.chmod(0o600)
    return path


def serve_command(*args: str) -> list[str]:
    """``python -m langchain_session_rag serve ARGS``."""
    return [sys.executable, "-m", "langchain_session_rag", "serve", *args]


def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a server under test: this checkout first on the path, no telemetry, Ollama absent."""
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)  # the caller's path first
    return {
        **os.environ,
        "PYTHONPATH": path,
        "ANONYMIZED_TELEMETRY": "False",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        **extra,
    }


class Server:
    """A real ``session-rag serve`` process (its own process group) on a free loopback port."""

    def __init__(self, log: Path, *args: str, **env: str) -> None:
        """Start it and wait (bounded) until ``/healthz`` answers."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                serve_command("--port", str(self.port), *args),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=serve_env(**env),
                start_new_session=True,
            )
        for _ in range(900):  # bounded: at most about 90 s (a worker loads the embedding model)
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        msg = f"session-rag serve did not start: {log.read_text(errors='replace')[-3000:]}"
        raise RuntimeError(msg)

    def stop(self) -> None:
        """End the process group (uvicorn and its workers), by its id."""
        stop_group(self.proc)


class EchoPromptModel(EchoMemoryModel):
    """Answers with its whole prompt (every message's text, in order): a test reads what the graph pinned in it."""

    @staticmethod
    def _answer(messages: list[BaseMessage]) -> str:
        return "\n".join(m.text for m in messages)


def prompt_echo() -> BaseChatModel:
    """The factory ``--chat-model`` names to echo the whole prompt."""
    return EchoPromptModel()


class PidModel(EchoMemoryModel):
    """Answers ``pid N Recalled: ...``: the id of the worker that answered (a test tells ``--workers N`` apart), then
    what the echo model answers."""

    @staticmethod
    def _answer(messages: list[BaseMessage]) -> str:
        return f"pid {os.getpid()} {EchoMemoryModel._answer(messages)}"


def pid() -> BaseChatModel:
    """The factory ``--chat-model`` names to learn which worker answered."""
    return PidModel()
