"""Short-term history strategies (plumbing with a fake chat model)."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_session_rag.prompt import SummaryBuffer, last_turns, trim_turns


def conversation(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out += [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]
    return out


def test_fixed_window_keeps_whole_turns() -> None:
    msgs = [*conversation(3), ToolMessage("tool output", tool_call_id="t")]
    assert [m.text for m in last_turns(msgs, 1)] == ["question 2", "answer 2", "tool output"]
    assert last_turns(msgs, 0) == []
    assert len(last_turns(msgs, 10)) == len(msgs)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        last_turns(msgs, -1)


def test_token_trimmed_window_counts_exactly() -> None:
    msgs = conversation(3)  # each turn: (3 + 10) + (3 + 8) = 24 with len
    assert [m.text for m in trim_turns(msgs, 48, token_counter=len)] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert [m.text for m in trim_turns(msgs, 47, token_counter=len)] == ["question 2", "answer 2"]
    assert trim_turns(msgs, 23, token_counter=len) == []


def test_summary_buffer_summarises_only_what_leaves_the_window() -> None:
    model = FakeListChatModel(responses=["S1", "S2"])
    buffer = SummaryBuffer(model, max_turns=2)
    first = buffer.update(conversation(2))
    assert (first.summary, first.llm_calls, first.summarised_turns) == (None, 0, 0)
    second = buffer.update(conversation(4), summary=None)
    assert (second.summary, second.llm_calls, second.summarised_turns) == ("S1", 1, 2)
    assert [m.text for m in second.recent] == ["question 2", "answer 2", "question 3", "answer 3"]
    third = buffer.update([*second.recent, *conversation(5)[8:]], summary=second.summary)
    assert (third.summary, third.summarised_turns) == ("S2", 1)


def test_summary_buffer_prompt_carries_the_previous_summary() -> None:
    seen: list[str] = []

    class Recording(FakeListChatModel):
        def _call(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(messages[0].text)
            return super()._call(messages, stop, run_manager, **kwargs)

    buffer = SummaryBuffer(Recording(responses=["new"]), max_turns=1, max_summary_words=40)
    buffer.update(conversation(2), summary="Alice likes tea.")
    assert "Alice likes tea." in seen[0]
    assert "human: question 0" in seen[0]
    assert "question 1" not in seen[0]
    assert "at most 40 words" in seen[0]


async def test_summary_buffer_async_and_token_cap() -> None:
    buffer = SummaryBuffer(FakeListChatModel(responses=["sum"]), max_turns=5, max_tokens=30, token_counter=len)
    window = await buffer.aupdate(conversation(3))
    assert [m.text for m in window.recent] == ["question 2", "answer 2"]
    assert (window.summary, window.summarised_turns) == ("sum", 2)


@pytest.mark.parametrize(("turns", "n", "kept"), [(3, 4, 3), (3, 5, 3), (3, 3, 3), (3, 2, 2), (5, 6, 5), (0, 2, 0)])
def test_last_turns_keeps_every_turn_when_asked_for_more(turns: int, n: int, kept: int) -> None:
    messages = [m for i in range(turns) for m in (HumanMessage(f"q{i}"), AIMessage(f"a{i}"))]
    assert len(last_turns(messages, n)) == 2 * kept
