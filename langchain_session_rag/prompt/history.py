"""Short-term history strategies: a fixed window of turns, a token-trimmed window, and a summary buffer.

A *turn* is a user message plus the replies that follow it; windows always keep whole turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable

from langchain_session_rag._checks import check_int, check_messages, check_text
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter
from langchain_session_rag.prompt.texts import SUMMARY_PROMPT


def split_turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Group messages into turns (a user message and what follows it)."""
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if message.type == "human" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def last_turns(messages: Sequence[BaseMessage], n: int) -> list[BaseMessage]:
    """The last ``n`` whole turns (a fixed window)."""
    check_int("n", n, 0)
    turns = split_turns(check_messages("messages", messages))
    return [m for turn in turns[max(len(turns) - n, 0) :] for m in turn] if n else []


def trim_turns(
    messages: Sequence[BaseMessage],
    max_tokens: int,
    *,
    token_counter: TokenCounter | None = None,
    tokens_per_message: int = 3,
) -> list[BaseMessage]:
    """The newest whole turns whose tokens (text + ``tokens_per_message`` each) fit ``max_tokens``."""
    check_int("max_tokens", max_tokens, 0)
    check_messages("messages", messages)
    count = token_counter or tiktoken_counter()
    kept: list[list[BaseMessage]] = []
    used = 0
    for turn in reversed(split_turns(messages)):
        cost = sum(tokens_per_message + count(m.text) for m in turn)
        if used + cost > max_tokens:
            break
        kept.append(turn)
        used += cost
    return [m for turn in reversed(kept) for m in turn]


@dataclass
class HistoryWindow:
    """The recent window to put in the prompt, and the running summary of what left it."""

    recent: list[BaseMessage]
    summary: str | None
    summarised_turns: int
    """Turns folded into the summary by this update."""
    llm_calls: int
    """Model calls made by this update (0 or 1)."""


class SummaryBuffer:
    """Keeps the last turns verbatim and folds older ones into a running summary written by a chat model.

    Each update makes at most one model call, and only when turns leave the window.

    Example:
        .. code-block:: python

            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_core.messages import AIMessage, HumanMessage
            from langchain_session_rag.prompt.history import SummaryBuffer

            buffer = SummaryBuffer(FakeListChatModel(responses=["Alice picked ClickHouse."]), max_turns=1)
            window = buffer.update([HumanMessage("Pick a DB"), AIMessage("ClickHouse"),
                                    HumanMessage("Thanks"), AIMessage("Welcome")])
            assert window.summary == "Alice picked ClickHouse."
            assert [m.text for m in window.recent] == ["Thanks", "Welcome"]
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        max_turns: int = 6,
        max_tokens: int | None = None,
        max_summary_words: int = 150,
        token_counter: TokenCounter | None = None,
    ) -> None:
        """Configure the buffer.

        Args:
            model: The chat model that writes the summary.
            max_turns: Turns kept verbatim.
            max_tokens: Also keep the verbatim window within this many tokens (whole turns).
            max_summary_words: Length asked of the summary.
            token_counter: Counts tokens for ``max_tokens``; tiktoken cl100k by default.
        """
        if not isinstance(model, Runnable):
            msg = f"model must be a chat model (a Runnable), got {type(model).__name__}."
            raise InvalidArgumentError(msg)
        check_int("max_turns", max_turns, 0)
        check_int("max_tokens", max_tokens, 0, optional=True)
        check_int("max_summary_words", max_summary_words, 1)
        self.model = model
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.max_summary_words = max_summary_words
        self.count = token_counter or tiktoken_counter()

    def _split(self, messages: Sequence[BaseMessage]) -> tuple[list[list[BaseMessage]], list[BaseMessage]]:
        recent = last_turns(messages, self.max_turns)
        if self.max_tokens is not None:
            recent = trim_turns(recent, self.max_tokens, token_counter=self.count)
        turns = split_turns(messages)
        old = turns[: len(turns) - len(split_turns(recent))] if recent else turns
        return old, recent

    def _prompt(self, old: list[list[BaseMessage]], summary: str | None) -> list[BaseMessage]:
        lines = "\n".join(f"{m.type}: {m.text}" for turn in old for m in turn)
        text = SUMMARY_PROMPT.format(max_words=self.max_summary_words, summary=summary or "(none)", lines=lines)
        return [HumanMessage(text)]

    def update(self, messages: Sequence[BaseMessage], summary: str | None = None) -> HistoryWindow:
        """Fold the turns that leave the window into ``summary``; return the window and the new summary."""
        check_text("summary", summary, optional=True)
        old, recent = self._split(messages)
        if not old:
            return HistoryWindow(recent=recent, summary=summary, summarised_turns=0, llm_calls=0)
        new_summary = self.model.invoke(self._prompt(old, summary)).text.strip()
        return HistoryWindow(recent=recent, summary=new_summary, summarised_turns=len(old), llm_calls=1)

    async def aupdate(self, messages: Sequence[BaseMessage], summary: str | None = None) -> HistoryWindow:
        """Async :meth:`update`."""
        check_text("summary", summary, optional=True)
        old, recent = self._split(messages)
        if not old:
            return HistoryWindow(recent=recent, summary=summary, summarised_turns=0, llm_calls=0)
        new_summary = (await self.model.ainvoke(self._prompt(old, summary))).text.strip()
        return HistoryWindow(recent=recent, summary=new_summary, summarised_turns=len(old), llm_calls=1)

    def fold(self, messages: Sequence[BaseMessage], summary: str | None = None) -> HistoryWindow:
        """Fold all of ``messages`` (turns that already left a window) into ``summary`` with one model call."""
        check_text("summary", summary, optional=True)
        old = split_turns(check_messages("messages", messages))
        if not old:
            return HistoryWindow(recent=[], summary=summary, summarised_turns=0, llm_calls=0)
        new_summary = self.model.invoke(self._prompt(old, summary)).text.strip()
        return HistoryWindow(recent=[], summary=new_summary, summarised_turns=len(old), llm_calls=1)

    async def afold(self, messages: Sequence[BaseMessage], summary: str | None = None) -> HistoryWindow:
        """Async :meth:`fold`."""
        check_text("summary", summary, optional=True)
        old = split_turns(check_messages("messages", messages))
        if not old:
            return HistoryWindow(recent=[], summary=summary, summarised_turns=0, llm_calls=0)
        new_summary = (await self.model.ainvoke(self._prompt(old, summary))).text.strip()
        return HistoryWindow(recent=[], summary=new_summary, summarised_turns=len(old), llm_calls=1)
