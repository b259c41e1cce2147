"""``session-rag serve`` in front of Ollama: ``--chat-model auto`` answers with Ollama when it serves the model.

The Ollama here is ``tests/ollama_server.py``: Ollama's REST API on a loopback port (no Ollama can be installed on
this machine), answered by a scripted chat model: the words are not what is checked (the real model over Ollama's
API is in test_ollama_wire.py). The server process reaches it as it would reach Ollama.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from tests.integration_tests.serve_support import Server, write_tokens
from tests.ollama_server import OllamaLoopback

pytestmark = pytest.mark.slow

SAID = "Your locker code is noted."


@pytest.fixture(scope="module")
def ollama_loopback() -> Iterator[OllamaLoopback]:
    """Ollama's API serving ``smollm2:135m`` as a scripted model that always says ``SAID``."""
    with OllamaLoopback({"smollm2:135m": GenericFakeChatModel(messages=itertools.repeat(AIMessage(SAID)))}) as server:
        yield server


ALICE = "alice-token-" + "a" * 20


def test_auto_answers_with_ollama_when_it_serves_the_model(tmp_path: Path, ollama_loopback: OllamaLoopback) -> None:
    tokens = write_tokens(tmp_path / "tokens", {"alice": ALICE})
    before = ollama_loopback.requests["/api/chat"]
    server = Server(
        tmp_path / "serve.log",
        *("--token-file", str(tokens), "--path", str(tmp_path / "store")),
        *("--chat-model", "auto", "--ollama-model", "smollm2:135m", "--max-tokens", "16"),
        OLLAMA_HOST=ollama_loopback.url,
    )
    try:
        client = openai.OpenAI(base_url=f"{server.base}/v1", api_key=ALICE, max_retries=0, timeout=300)
        reply = client.chat.completions.create(
            model="session-rag", messages=[{"role": "user", "content": "My locker code is 4471."}]
        )
        assert reply.choices[0].message.content == SAID
        streamed = client.chat.completions.create(
            model="session-rag", messages=[{"role": "user", "content": "What is my locker code?"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == SAID
        assert ollama_loopback.requests["/api/chat"] - before == 2, "both answers came from Ollama"
        ready = openai.OpenAI(base_url=server.base, api_key=ALICE).get("/readyz", cast_to=dict)
        assert ready["status"] == "ready"
    finally:
        server.stop()
