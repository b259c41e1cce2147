"""Ollama over the wire, offline: ``langchain_ollama`` and the ``ollama`` client against ``tests/ollama_server.py``.

The server speaks Ollama's REST API and answers with the package's real local models (all-MiniLM-L6-v2 as
``all-minilm``, SmolLM2-135M as ``smollm2:135m``): every call here crosses HTTP, and the answers are real.
"""

from __future__ import annotations

import functools
import logging
import operator
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import ollama
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama, OllamaEmbeddings

from langchain_session_rag import LocalChatModel, LocalEmbeddings, SessionVectorMemory, TokenBudget
from langchain_session_rag.models.local_llm import default_chat_model, has_model, ollama_models
from tests.conftest import chroma_session, cooking_session

if TYPE_CHECKING:
    from tests.ollama_server import OllamaLoopback

pytest_plugins = ["tests.ollama_server"]  # the session fixture ollama_loopback (imported first: assertion rewriting)

CHAT, EMBED = "smollm2:135m", "all-minilm"
TEXTS = ["ChromaDB keeps losing my collection", "Bake sourdough at 230 degrees", "hello"]
LOGGER = "langchain_session_rag.models.local_llm"


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny in {city}"


def chat_model(url: str, num_predict: int = 16) -> ChatOllama:
    return ChatOllama(model=CHAT, base_url=url, num_predict=num_predict, temperature=0)


def post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_ollama_embeddings_match_the_local_model(ollama_loopback: OllamaLoopback) -> None:
    before = ollama_loopback.requests["/api/embed"]
    remote = OllamaEmbeddings(model=EMBED, base_url=ollama_loopback.url, validate_model_on_init=True)
    local = LocalEmbeddings()
    expected = np.array(local.embed_documents(TEXTS))
    assert np.allclose(remote.embed_documents(TEXTS), expected, atol=1e-5)
    assert np.allclose(remote.embed_query(TEXTS[0]), expected[0], atol=1e-5)
    assert np.array(remote.embed_documents(TEXTS)).shape == (3, 384)
    assert ollama_loopback.requests["/api/embed"] - before == 3


async def test_ollama_embeddings_async(ollama_loopback: OllamaLoopback) -> None:
    before = ollama_loopback.requests["/api/embed"]
    remote = OllamaEmbeddings(model=f"{EMBED}:latest", base_url=ollama_loopback.url)
    vectors = await remote.aembed_documents(TEXTS)
    assert np.allclose(vectors, LocalEmbeddings().embed_documents(TEXTS), atol=1e-5)
    assert np.allclose(await remote.aembed_query(TEXTS[1]), vectors[1], atol=1e-5)
    assert ollama_loopback.requests["/api/embed"] - before == 2


def test_the_ollama_client_sees_ollamas_shapes(ollama_loopback: OllamaLoopback) -> None:
    client = ollama.Client(host=ollama_loopback.url)
    assert {m.model for m in client.list().models} == {"all-minilm:latest", CHAT}
    embedder, chat = client.show(EMBED), client.show(CHAT)
    assert embedder.capabilities == ["embedding"]
    assert (embedder.modelinfo or {})["bert.embedding_length"] == 384
    assert chat.capabilities == ["completion", "tools"]
    assert chat.details is not None
    assert chat.details.family == "llama"
    legacy = client.embeddings(EMBED, "hello").embedding
    assert np.allclose(legacy, client.embed(EMBED, "hello").embeddings[0], atol=1e-6)
    short = client.embed(EMBED, ["hello", "world"], dimensions=32)
    assert [len(v) for v in short.embeddings] == [32, 32]
    assert np.allclose(np.linalg.norm(short.embeddings, axis=1), 1.0, atol=1e-6)
    assert short.prompt_eval_count == 6  # [CLS] word [SEP], twice
    with urllib.request.urlopen(ollama_loopback.url, timeout=5) as response:
        assert response.read() == b"Ollama is running"
    with urllib.request.urlopen(f"{ollama_loopback.url}/api/version", timeout=5) as response:
        assert b'"version"' in response.read()


def test_chat_invoke_over_the_wire(ollama_loopback: OllamaLoopback) -> None:
    before = ollama_loopback.requests["/api/chat"]
    answer = chat_model(ollama_loopback.url, 12).invoke("Say hello to Bob.")
    assert isinstance(answer, AIMessage)
    assert answer.text.strip()
    assert answer.usage_metadata is not None
    assert answer.usage_metadata["input_tokens"] > 0
    assert 0 < answer.usage_metadata["output_tokens"] <= 12
    assert answer.response_metadata["model_name"] == CHAT
    assert answer.response_metadata["done_reason"] in {"stop", "length"}
    assert ollama_loopback.requests["/api/chat"] - before == 1


def test_the_streamed_usage_matches_the_local_models(ollama_loopback: OllamaLoopback) -> None:
    """The final NDJSON line counts the prompt as llama.cpp does (the GGUF's chat template)."""
    streamed = chat_model(ollama_loopback.url, 8).invoke("Name a colour.")
    local = LocalChatModel(max_tokens=8).invoke("Name a colour.")
    assert streamed.text == local.text
    assert streamed.usage_metadata == local.usage_metadata


def test_chat_streams_token_by_token(ollama_loopback: OllamaLoopback) -> None:
    chunks = list(chat_model(ollama_loopback.url).stream("Tell me about the sea."))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 1
    whole = functools.reduce(operator.add, chunks)
    assert whole.text == "".join(texts)
    assert whole.usage_metadata is not None
    assert whole.usage_metadata["output_tokens"] == len(texts)  # one NDJSON line per token
    assert whole.response_metadata["done"] is True


async def test_chat_astream(ollama_loopback: OllamaLoopback) -> None:
    texts = [c.text async for c in chat_model(ollama_loopback.url).astream("Tell me about the sea.") if c.text]
    assert len(texts) > 1
    answer = await chat_model(ollama_loopback.url, 8).ainvoke("Say hi.")
    assert answer.text.strip()


def test_options_reach_the_model(ollama_loopback: OllamaLoopback) -> None:
    """num_predict caps the answer; a stop string cuts it where the unstopped answer had it."""
    client = ollama.Client(host=ollama_loopback.url)
    messages = [
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "user", "content": "Describe a cat."},
    ]
    full = client.chat(CHAT, messages, options={"num_predict": 16, "temperature": 0})
    assert full.done_reason == "length"
    assert full.eval_count == 16
    text = full.message.content or ""
    word = text.split()[3]
    stopped = client.chat(CHAT, messages, options={"num_predict": 16, "temperature": 0, "stop": [word]})
    assert stopped.done_reason == "stop"
    assert stopped.message.content is not None
    assert word not in stopped.message.content
    assert text.startswith(stopped.message.content)


def test_memory_with_ollama_embeddings_over_the_wire(tmp_path: Path, ollama_loopback: OllamaLoopback) -> None:
    embeddings = OllamaEmbeddings(model=EMBED, base_url=ollama_loopback.url)
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice", embeddings=embeddings)
    memory.add_messages(chroma_session(), session_id="s1")
    memory.add_messages(cooking_session(), session_id="s2")
    assert memory.model_id == "ollama:all-minilm"
    assert (
        memory.invoke("my vector database forgets its collections when I restart", k=1)[0].metadata["session_id"]
        == "s1"
    )
    assert memory.invoke("how long does bread stay in the oven?", k=1)[0].metadata["session_id"] == "s2"


def test_one_graph_turn_with_ollama_over_the_wire(tmp_path: Path, ollama_loopback: OllamaLoopback) -> None:
    from langchain_session_rag.graph import create_session_rag_graph

    embeddings = OllamaEmbeddings(model=EMBED, base_url=ollama_loopback.url)
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice", embeddings=embeddings)
    memory.add_messages(chroma_session(), session_id="s1")
    memory.add_messages(cooking_session(), session_id="s2")
    chats, embeds = ollama_loopback.requests["/api/chat"], ollama_loopback.requests["/api/embed"]
    budget = TokenBudget(context_window=2048, reserve_for_answer=256)
    graph = create_session_rag_graph(chat_model(ollama_loopback.url, 24), memory, budget=budget).compile()
    question = "Why does Chroma say my collection is not found after a restart?"
    out = graph.invoke({"messages": [HumanMessage(question)]}, context={"user_id": "alice", "session_id": "s-new"})
    memory.flush()
    answer = out["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.text.strip()
    assert out["llm_calls"] == 1
    assert out["memories"][0].metadata["session_id"] == "s1"
    assert "PersistentClient" in out["memories"][0].page_content
    assert ollama_loopback.requests["/api/chat"] - chats == 1
    assert ollama_loopback.requests["/api/embed"] > embeds
    assert memory.invoke(question, session_ids=["s-new"], k=1), "the new exchange was stored"


def test_default_chat_model_uses_ollama_when_the_model_is_served(ollama_loopback: OllamaLoopback) -> None:
    model = default_chat_model(CHAT, host=ollama_loopback.url)
    assert isinstance(model, ChatOllama)
    assert model.model == CHAT
    assert model.base_url == ollama_loopback.url
    assert has_model(ollama_models(ollama_loopback.url) or [], EMBED)


def test_default_chat_model_falls_back_when_the_model_is_missing(
    ollama_loopback: OllamaLoopback, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        model = default_chat_model("llama3.2", host=ollama_loopback.url)
    assert isinstance(model, LocalChatModel)
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'llama3.2'" in warnings[0]
    assert ollama_loopback.url in warnings[0]


def test_default_chat_model_falls_back_when_no_server_answers(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:  # a port nothing listens on (bound, then released)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        model = default_chat_model(CHAT, host=f"http://127.0.0.1:{port}")
    assert isinstance(model, LocalChatModel)
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any("no Ollama server answered" in w for w in warnings)


def test_a_model_table_without_the_chat_model() -> None:
    from tests.ollama_server import serve_ollama

    with serve_ollama({EMBED: LocalEmbeddings()}) as url:
        assert ollama_models(url) == ["all-minilm:latest"]
        assert isinstance(default_chat_model(CHAT, host=url), LocalChatModel)
        with pytest.raises(ValueError, match="not found"):
            ChatOllama(model=CHAT, base_url=url, validate_model_on_init=True)
        assert len(OllamaEmbeddings(model=EMBED, base_url=url).embed_query("hi")) == 384


def test_tool_calling_over_the_wire(ollama_loopback: OllamaLoopback) -> None:
    model = chat_model(ollama_loopback.url, 48).bind_tools([get_weather])
    reply = model.invoke("What is the weather in Paris? Use the get_weather tool.")
    assert isinstance(reply, AIMessage)
    assert [c["name"] for c in reply.tool_calls] == ["get_weather"]
    args = reply.tool_calls[0]["args"]
    assert isinstance(args, dict)
    assert set(args) == {"city"}
    assert isinstance(args["city"], str)
    # The call and its result go back over the wire as assistant and tool messages.
    result = ToolMessage(get_weather.invoke(args), tool_call_id=reply.tool_calls[0]["id"])
    history = [HumanMessage("What is the weather in Paris? Use the get_weather tool."), reply, result]
    follow_up = chat_model(ollama_loopback.url, 16).invoke(history)
    assert isinstance(follow_up, AIMessage)


def test_errors_are_ollamas(ollama_loopback: OllamaLoopback) -> None:
    client = ollama.Client(host=ollama_loopback.url)
    for call in (
        lambda: client.chat("nope", [{"role": "user", "content": "hi"}]),
        lambda: client.embed("nope", "hi"),
        lambda: client.show("nope"),
    ):
        with pytest.raises(ollama.ResponseError) as raised:
            call()
        assert raised.value.status_code == 404
        assert raised.value.error == 'model "nope" not found, try pulling it first'
    with pytest.raises(ollama.ResponseError) as raised:
        list(client.chat(CHAT, [{"role": "user", "content": "hi"}], stream=True, think=True))
    assert raised.value.status_code == 400
    with pytest.raises(ollama.ResponseError, match="not found"):
        ChatOllama(model="nope", base_url=ollama_loopback.url).invoke("hi")
    with pytest.raises(ollama.ResponseError, match="does not support chat"):
        ChatOllama(model=EMBED, base_url=ollama_loopback.url).invoke("hi")
    chat_url = f"{ollama_loopback.url}/api/chat"
    assert post(chat_url, b"{not json")[0] == 400
    assert post(chat_url, b"")[0] == 400
    assert post(chat_url, b'{"model": "smollm2:135m", "messages": [{"content": "no role"}]}')[0] == 400
    assert post(f"{ollama_loopback.url}/api/embed", b'{"input": "no model"}') == (
        400,
        b'{"error": "model is required"}',
    )
    assert post(f"{ollama_loopback.url}/api/pull", b'{"model": "llama3.2"}')[0] == 404
