"""Scripted chat models for tests whose assertions do not depend on a real model's words.

A scripted model answers from a list (or any iterable) and records the prompts it was sent: the graph's plumbing
(a summary is folded and quoted, a window stays bounded, a memory is ranked) is then checked exactly, and an
adversarial script (a model that always invents an answer) tests the memory harder than a real small model does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr


class RecordingModel(GenericFakeChatModel):
    """Answers with ``answers`` in turn (strings or messages) and keeps every prompt it was sent in ``prompts``."""

    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    def __init__(self, answers: Iterable[str | AIMessage]) -> None:
        super().__init__(messages=iter([a if isinstance(a, AIMessage) else AIMessage(a) for a in answers]))

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """The prompts sent so far, oldest first."""
        return self._prompts

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        self._prompts.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)
