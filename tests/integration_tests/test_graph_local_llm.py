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
from tests.scripted_models import RecordingModel


class PromptRecorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.prompts.extend(messages)


def test_two_sessions_with_the_real_local_model(memory: SessionVectorMemory) -> None:
    graph = create_session_rag_graph(LocalChatModel(max_tokens=8), memory).compile()
    recorder = PromptRecorder()
    config = {"callbacks": [recorder]}
    first = graph.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, config,
                         context={"user_id": "two-alice", "session_id": "s1"})  # fmt: skip
    assert first["messages"][-1].type == "ai"
    assert first["messages"][-1].usage_metadata["output_tokens"] > 0
    second = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, config,
                          context={"user_id": "two-alice", "session_id": "s2"})  # fmt: skip
    marker = second["memories"][0].metadata["marker"]
    prompt = "\n".join(m.text for m in recorder.prompts[-1])
    assert f"{marker}\n> User: My cat is called Pixel." in prompt
    other = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, config,
                         context={"user_id": "two-bob", "session_id": "s3"})  # fmt: skip
    assert other["memories"] == []
    assert "Pixel" not in "\n".join(m.text for m in recorder.prompts[-1])


def test_local_model_streams_tokens() -> None:
    chunks = [c.text for c in LocalChatModel(max_tokens=12).stream("Say hi")]
    assert len(chunks) > 1


GARDEN = "tell me about my garden. " + "I grow many vegetables every summer. " * 30  # a turn > 200 tokens


def _summary_graph(answers: Any, summariser: Any, memory: SessionVectorMemory, window_turns: int) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_session_rag import TokenBudget
    from langchain_session_rag.prompt import SummaryBuffer

    graph = create_session_rag_graph(answers, memory, window_turns=window_turns,
                                     summary=SummaryBuffer(summariser, max_summary_words=30),
                                     budget=TokenBudget(context_window=1024, reserve_for_answer=128))  # fmt: skip
    return graph.compile(checkpointer=InMemorySaver())


def _quoted_summary(summary: str) -> str:
    """The summary's block in an answer's system prompt (the instructions name its tag too, so match it whole)."""
    from langchain_session_rag.prompt.quoting import quote_data
    from langchain_session_rag.prompt.texts import SUMMARY_CLOSE, SUMMARY_HEADER, SUMMARY_OPEN

    return f"{SUMMARY_OPEN}\n{SUMMARY_HEADER}\n{quote_data(summary)}\n{SUMMARY_CLOSE}"


def _answer_prompts(recorder: PromptRecorder) -> list[str]:
    return [p[0].text for p in recorder.prompts if p and p[0].type == "system"]


def test_the_running_summary_over_6_turns_stays_bounded_and_reaches_the_prompt(memory: SessionVectorMemory) -> None:
    """Turns leaving the window are folded into the summary, each fold on the one before; the summary is quoted.

    Scripted models: what is checked is the graph's plumbing, not the words (the real model's fold is below).
    """
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    folds = RecordingModel(f"Summary number {n}: the user grows vegetables." for n in range(1, 100))
    answers = GenericFakeChatModel(messages=iter([AIMessage(f"Answer {n}.") for n in range(6)]))
    app = _summary_graph(answers, folds, memory, window_turns=2)
    recorder = PromptRecorder()
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [recorder]}
    out: dict[str, Any] = {}
    for turn in range(6):
        out = app.invoke({"messages": [HumanMessage(f"Turn {turn}: {GARDEN}")]}, config,
                         context={"user_id": "summary-user", "session_id": "s"})  # fmt: skip
        assert len([m for m in out["messages"] if m.type == "human"]) <= 2, "the window stays at two turns"
        assert all(isinstance(m, HumanMessage | AIMessage) for m in out["messages"])
    assert len(folds.prompts) == 6 - 2, "every turn leaving the window is folded (a turn holds > 200 tokens)"
    for n, prompt in enumerate(folds.prompts[1:], start=1):
        assert f"Summary number {n}:" in prompt[0].text, "each fold starts from the summary before it"
        assert f"Turn {n}:" in prompt[0].text, "and holds the turn that left the window"
    assert out["summary"] == "Summary number 4: the user grows vegetables."
    prompts = _answer_prompts(recorder)
    assert _quoted_summary("Summary number 3: the user grows vegetables.") in prompts[-1], "quoted data, in the prompt"
    assert "<conversation_summary>\n" not in prompts[2], "no summary before a turn has left the window"


def test_the_real_local_model_writes_the_running_summary(memory: SessionVectorMemory) -> None:
    """One fold by the real model (SmolLM2 through llama.cpp): its summary is kept and quoted in the next prompt.

    The answers are scripted (their words are not checked; the real model answers the graph's prompts in
    test_two_sessions_with_the_real_local_model): the real model's words checked here are the summary's.
    """
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    answers = GenericFakeChatModel(messages=iter([AIMessage(f"Answer {n}.") for n in range(3)]))
    app = _summary_graph(answers, LocalChatModel(max_tokens=16), memory, window_turns=1)
    recorder = PromptRecorder()
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [recorder]}
    calls = []
    # a long turn, then short ones (about something else: few memories to read): the long turn leaving the window
    # is folded once; a short one is not folded
    for text in (f"Turn 0: {GARDEN}", "Hello.", "Thanks."):
        out = app.invoke({"messages": [HumanMessage(text)]}, config,
                         context={"user_id": "real-summary-user", "session_id": "s"})  # fmt: skip
        calls.append(out["llm_calls"])
    assert calls == [1, 2, 1], "one fold (a turn's model calls), after the turn that pushed the long one out"
    assert out["summary"], "the real model's summary is kept"
    assert _quoted_summary(out["summary"]) in _answer_prompts(recorder)[-1], "the real model's words, quoted"


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
