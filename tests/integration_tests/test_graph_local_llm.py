"""The graph end to end with a real local model: SmolLM2-135M through llama.cpp (weak answers, real plumbing)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.models.local_llm import LocalChatModel


class PromptRecorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.prompts.extend(messages)


def test_two_sessions_with_the_real_local_model(tmp_path: Path, real_embeddings) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    graph = create_session_rag_graph(LocalChatModel(max_tokens=32), memory).compile()
    recorder = PromptRecorder()
    config = {"callbacks": [recorder]}
    first = graph.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, config,
                         context={"user_id": "alice", "session_id": "s1"})  # fmt: skip
    assert first["messages"][-1].type == "ai"
    assert first["messages"][-1].usage_metadata["output_tokens"] > 0
    second = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, config,
                          context={"user_id": "alice", "session_id": "s2"})  # fmt: skip
    marker = second["memories"][0].metadata["marker"]
    prompt = "\n".join(m.text for m in recorder.prompts[-1])
    assert f"{marker}\n> User: My cat is called Pixel." in prompt
    other = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, config,
                         context={"user_id": "bob", "session_id": "s3"})  # fmt: skip
    assert other["memories"] == []
    assert "Pixel" not in "\n".join(m.text for m in recorder.prompts[-1])


def test_local_model_streams_tokens() -> None:
    chunks = [c.text for c in LocalChatModel(max_tokens=12).stream("Say hi")]
    assert len(chunks) > 1


def test_the_running_summary_over_8_turns_with_the_real_local_model(tmp_path: Path, real_embeddings) -> None:
    """Turns leaving the window are folded into the summary by the real model; the summary reaches the prompt."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_session_rag import TokenBudget
    from langchain_session_rag.prompt import SummaryBuffer
    from langchain_session_rag.prompt.texts import SUMMARY_OPEN

    memory = SessionVectorMemory.local(path=tmp_path, user_id="nobody", embeddings=real_embeddings)
    summariser = SummaryBuffer(LocalChatModel(max_tokens=32), max_summary_words=30)
    graph = create_session_rag_graph(LocalChatModel(max_tokens=16), memory, window_turns=2, summary=summariser,
                                     budget=TokenBudget(context_window=1024, reserve_for_answer=128))  # fmt: skip
    app = graph.compile(checkpointer=InMemorySaver())
    recorder = PromptRecorder()
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [recorder]}
    summary_calls = 0
    out: dict[str, Any] = {}
    for turn in range(8):
        text = f"Turn {turn}: tell me about my garden. " + "I grow many vegetables every summer. " * 30
        out = app.invoke({"messages": [HumanMessage(text)]}, config, context={"user_id": "alice", "session_id": "s"})
        summary_calls += out["llm_calls"] - 1
        assert len([m for m in out["messages"] if m.type == "human"]) <= 2, "the window stays at two turns"
        assert all(isinstance(m, HumanMessage | AIMessage) for m in out["messages"])
    assert summary_calls >= 5, "every turn leaving the window is folded (a turn holds > 200 tokens)"
    assert out["summary"], "the running summary exists"
    answer_prompts = [p for p in recorder.prompts if p and p[0].type == "system"]
    assert SUMMARY_OPEN in answer_prompts[-1][0].text, "the summary reaches the answer's prompt, as quoted data"


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = str(fd.readlink())
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


@pytest.mark.skipif(not Path("/proc/net/unix").exists(), reason="reads Linux's /proc")
def test_the_loaded_model_listens_where_no_other_process_can_connect() -> None:
    """llama.cpp's server always listens: on no TCP port here, and on a Unix socket whose path is gone."""
    before = _socket_inodes()
    model = LocalChatModel(n_ctx=512, max_tokens=4)  # a window of its own: a fresh server, loaded here
    assert model.invoke("Say hi").text
    opened = _socket_inodes() - before
    tcp = [
        line.split()
        for name in ("/proc/net/tcp", "/proc/net/tcp6")
        if Path(name).exists()
        for line in Path(name).read_text().splitlines()[1:]
    ]
    assert [f for f in tcp if f[9] in opened and f[3] == "0A"] == [], "a TCP port is listening"
    unix = [line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:]]
    listening = [f for f in unix if f[6] in opened and f[3] == "00010000"]  # __SO_ACCEPTCON: a listener
    assert listening, "llama.cpp's listener was not found: this test no longer sees it"
    for fields in listening:
        path = fields[7] if len(fields) > 7 else ""
        assert not path or not Path(path).exists(), f"another process could connect to {path}"
