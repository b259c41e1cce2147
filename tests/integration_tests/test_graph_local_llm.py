"""The graph end to end with a real local model: SmolLM2-135M through llama.cpp (weak answers, real plumbing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from langchain_session_rag.local_llm import LocalChatModel


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
