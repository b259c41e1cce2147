"""``session-rag serve`` in front of Ollama: ``--chat-model auto`` answers with Ollama when it serves the model.

The Ollama here is ``tests/ollama_server.py``: Ollama's REST API on a loopback port, answered by the real local
model (no Ollama can be installed on this machine). The server process reaches it as it would reach Ollama.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import openai
import pytest

from tests.integration_tests.serve_support import Server, write_tokens

if TYPE_CHECKING:
    from tests.ollama_server import OllamaLoopback

pytestmark = pytest.mark.slow
pytest_plugins = ["tests.ollama_server"]  # the session fixture ollama_loopback

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
        assert reply.choices[0].message.content
        streamed = client.chat.completions.create(
            model="session-rag", messages=[{"role": "user", "content": "What is my locker code?"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert ollama_loopback.requests["/api/chat"] - before == 2, "both answers came from Ollama"
        ready = openai.OpenAI(base_url=server.base, api_key=ALICE).get("/readyz", cast_to=dict)
        assert ready["status"] == "ready"
    finally:
        server.stop()
