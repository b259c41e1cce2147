"""Chat models for the ``session-rag serve`` tests, loaded by ``--chat-model tests.integration_tests.serve_fakes:echo``.

The echo model answers with the memories the graph put in its prompt (the ``<context>`` block of the last user
message), so a test reads from the answer what the server recalled for that user.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

_CONTEXT = re.compile(r"<retrieved_context>(.*?)</retrieved_context>", re.DOTALL)


class EchoMemoryModel(BaseChatModel):
    """Answers ``Recalled: <the prompt's context block>`` (``Recalled: nothing`` without one), word by word."""

    @property
    def _llm_type(self) -> str:
        return "echo-memory"

    @staticmethod
    def _answer(messages: list[BaseMessage]) -> str:
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
