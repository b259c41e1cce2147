"""``session-rag chat`` ended by SIGTERM or SIGHUP while it answers: the question typed is kept, not lost.

The chat waits at a named point (``SESSION_RAG_CHAT_FAULT=generating``: after the answer's first token) and the
test signals it there, so the signal lands inside the turn every time. At ``generating`` the chat answers with a
scripted model behind Ollama's API (the point is in the chat's loop, whatever the model); at ``held`` with the real
local model, which holds its answer open until the signal's handler stops it.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
from pathlib import Path

import pexpect
import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_session_rag import SessionVectorMemory
from tests.integration_tests.test_cli_chat import NO_OLLAMA, spawn
from tests.ollama_server import OllamaLoopback

FAULT_ENV = "SESSION_RAG_CHAT_FAULT"  # the chat's named fault points (cli/chat.py)
QUESTION = "Remember this: my spare key hides under the blue flowerpot."


@pytest.mark.parametrize(
    ("fault", "max_tokens", "sig"),
    [
        ("generating", "32", signal.SIGTERM),  # the signal lands while the answer is being streamed
        # `held`: the local model holds the answer open after its first token until it is stopped (up to 10
        # minutes), as a long answer would: the chat must store the question, stop the answer and end, not wait.
        ("held", "1024", signal.SIGHUP),
    ],
    ids=["generating-SIGTERM", "held-SIGHUP"],  # one handler for both signals (cli/chat.py _SIGNALS): one each
)
def test_a_signal_during_the_answer_keeps_the_question_and_ends_the_chat(
    tmp_path: Path, sig: signal.Signals, fault: str, max_tokens: str, real_embeddings: Embeddings
) -> None:
    env = {"SESSION_RAG_PATH": str(tmp_path / "db"), "SESSION_RAG_USER": "alice", "OLLAMA_HOST": NO_OLLAMA,
           FAULT_ENV: fault}  # fmt: skip
    model = ("--local",)
    with contextlib.ExitStack() as stack:
        if fault == "generating":  # any model: a scripted one, streamed word by word over Ollama's API
            scripted = GenericFakeChatModel(messages=itertools.repeat(AIMessage("I see. Tell me more.")))
            env["OLLAMA_HOST"] = stack.enter_context(OllamaLoopback({"smollm2:135m": scripted})).url
            model = ("--model", "smollm2:135m")
        child = spawn("chat", *model, "--max-tokens", max_tokens, env=env)
        child.expect_exact("you> ")
        child.sendline(QUESTION)
        child.expect_exact(f"[fault point: {fault}]")
        child.kill(sig)
        child.expect(pexpect.EOF, timeout=60)  # far less than a held answer: it was stopped, not awaited
        child.close()
    assert child.exitstatus == 0, child.before
    assert "kept (1 exchange(s))" in child.before
    assert "the interrupted question is kept" in child.before

    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice", embeddings=real_embeddings)
    stored = memory.invoke("where does my spare key hide?")
    assert len(stored) == 1
    assert stored[0].page_content.startswith(f"User: {QUESTION}\nAssistant: ")  # the part of the answer shown
    assert stored[0].metadata["interrupted"] is True
