"""A graph run's input, checked before the run starts: one :class:`InvalidRequestError` for every input mistake.

The graphs' ``validate`` node checks each turn inside the run, but a run has already done work by then: LangGraph
writes the input to the thread's checkpoint and emits it (``stream_mode="values"``) before the first node. The
factories therefore return a :class:`CheckedStateGraph`, whose compiled graph checks the input messages and the
run's ``user_id`` / ``session_id`` in ``invoke``, ``ainvoke``, ``stream`` and ``astream`` before handing the run to
LangGraph: a refused run streams nothing, checkpoints nothing, and reads or writes no memory or cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, RemoveMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from langchain_session_rag.errors import InvalidArgumentError, InvalidRequestError
from langchain_session_rag.graph.model_window import check_question
from langchain_session_rag.graph.state import SessionContext, SessionRAGState, run_ids_of
from langchain_session_rag.graph.turn import check_turn
from langchain_session_rag.identity import run_identity
from langchain_session_rag.privacy.redaction import redact_message, refuse_secret
from langchain_session_rag.prompt.budget import TokenBudget


def _input_messages(value: object) -> list[BaseMessage]:
    """The input's messages as LangGraph's ``add_messages`` reads them (removals left out)."""
    try:
        found = convert_to_messages(value if isinstance(value, list | tuple) else [value])  # type: ignore[list-item]
    except (ValueError, TypeError, NotImplementedError, KeyError) as exc:
        msg = f"A message of the input is malformed ({exc}): send messages, (role, text) pairs or role/content dicts."
        raise InvalidRequestError(msg) from None
    return [m for m in found if not isinstance(m, RemoveMessage)]


def check_run_input(
    input: object,  # noqa: A002 - LangGraph's parameter name
    config: RunnableConfig | None,
    context: object,
    budget: TokenBudget | None = None,
    *,
    redact: bool = False,
) -> str | None:
    """Refuse a run's input before the run starts (see the module docstring).

    The run must name a fit ``user_id`` and ``session_id`` (in ``context`` or ``config["configurable"]``); when the
    input is a state, its messages must end with a non-empty user turn that fits ``budget`` with the
    instructions. A resumed run (``None`` or a ``Command`` input) is checked for its ids only. With ``redact`` (a
    memory that redacts secrets) a ``session_id`` holding a secret is refused: an id is stored as it is.

    Raises:
        QuestionTooLongError: The question does not fit ``budget`` (an ``InvalidRequestError``, HTTP 413).
        InvalidRequestError: Any of these mistakes (the one class of a graph's input), or a ``session_id`` holding
            a secret when ``redact``.
        IdentityConflictError: The context and the configurable values name different users or sessions.

    Returns:
        The question, when ``budget`` is ``None`` and the input is a new turn (for the caller to check against
        the budget itself, e.g. off the event loop); ``None`` otherwise.
    """
    try:
        if redact:  # before the fit check, whose message shows the id
            for source in (context, (config or {}).get("configurable")):
                raw = source.get("session_id") if isinstance(source, Mapping) else getattr(source, "session_id", None)
                if isinstance(raw, str):
                    refuse_secret("session_id", raw)
        run_ids_of(run_identity(config, context=context))
    except InvalidRequestError:
        raise
    except InvalidArgumentError as exc:  # an unfit id: the input of a graph run is refused with the one class
        raise InvalidRequestError(str(exc)) from None
    if isinstance(input, Mapping):  # a new turn (a resumed run's input is None or a Command)
        messages = _input_messages(input.get("messages") or [])
        check_turn(messages)
        if budget is None:
            return messages[-1].text
        check_question(budget, messages[-1].text)
    elif input is not None and not isinstance(input, Command):
        msg = (
            f"A graph run's input must be a state dict such as {{'messages': [('user', 'Hi')]}} (or None / a "
            f"Command to resume a thread), got {type(input).__name__}."
        )
        raise InvalidRequestError(msg)
    return None


def redact_input(run_input: Any) -> Any:
    """A run's input with every secret in its messages' text replaced by ``[secret:KIND]`` (the same message ids).

    The secret then reaches no checkpoint, prompt, cache, memory or log: the model sees the placeholder.
    """
    if not isinstance(run_input, Mapping) or not run_input.get("messages"):
        return run_input
    raw = run_input["messages"]
    messages = convert_to_messages(raw if isinstance(raw, list | tuple) else [raw])  # checked before
    out = [redact_message(message) for message in messages]
    changed = any(new is not old for new, old in zip(out, messages, strict=True))
    return {**run_input, "messages": out} if changed else run_input


class CheckedCompiledStateGraph(CompiledStateGraph[SessionRAGState, SessionContext, Any, Any]):
    """A compiled session-RAG graph whose runs check their input before they start (see :func:`check_run_input`).

    ``invoke`` and ``ainvoke`` run through ``stream`` and ``astream``, so the four are covered.
    """

    def stream(
        self,
        input: Any,  # noqa: A002 - LangGraph's parameter name
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """``CompiledStateGraph.stream``, after :func:`check_run_input` (raised at the call, not at the first step)."""
        merged = ensure_config(merge_configs(self.config, config))
        check_run_input(input, merged, kwargs.get("context"), self._budget, redact=self._redacts)
        return super().stream(self._redacted(input), config, **kwargs)

    def astream(
        self,
        input: Any,  # noqa: A002 - LangGraph's parameter name
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """``CompiledStateGraph.astream``, after :func:`check_run_input`.

        The ids and messages are checked at the call; the question's size is checked at the first iteration, in a
        worker thread (a model's own tokenizer may read its file first, which must not block the event loop),
        still before the run starts: nothing is streamed, checkpointed, retrieved or stored for a refused run.
        """
        merged = ensure_config(merge_configs(self.config, config))
        question = check_run_input(input, merged, kwargs.get("context"), redact=self._redacts)
        input = self._redacted(input)  # noqa: A001 - LangGraph's parameter name
        budget = self._budget
        if question is None or budget is None:
            return super().astream(input, config, **kwargs)
        return self._astream_checked(budget, question, input, config, **kwargs)

    async def _astream_checked(
        self,
        budget: TokenBudget,
        question: str,
        run_input: Any,
        config: RunnableConfig | None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        await asyncio.to_thread(check_question, budget, question)
        async for part in super().astream(run_input, config, **kwargs):
            yield part

    def _redacted(self, run_input: Any) -> Any:
        """The input with secrets replaced in its messages, when the graph redacts them (see ``redact_input``)."""
        return redact_input(run_input) if self._redacts else run_input

    @property
    def _redacts(self) -> bool:
        """Whether the graph's memory redacts secrets (its input is redacted, a session id holding one refused)."""
        return bool(getattr(self.builder, "redact", False))

    @property
    def _budget(self) -> TokenBudget | None:
        """The prompt budget the graph's nodes use (its questions are checked against it before a run)."""
        return getattr(self.builder, "budget", None)


class CheckedStateGraph(StateGraph[SessionRAGState, SessionContext, Any, Any]):
    """The uncompiled graph the factories return: a ``StateGraph`` whose ``compile()`` checks each run's input."""

    budget: TokenBudget | None = None
    """The prompt budget of the graph's nodes (set by the factories)."""
    redact: bool = False
    """Replace secrets in the input messages before the run starts (the memory's ``redact_secrets``)."""

    def compile(self, *args: Any, **kwargs: Any) -> CompiledStateGraph[SessionRAGState, SessionContext, Any, Any]:
        """``StateGraph.compile``; the compiled graph refuses a bad input before its run starts."""
        compiled = super().compile(*args, **kwargs)
        compiled.__class__ = CheckedCompiledStateGraph  # same layout; LangGraph's copies keep the class
        return compiled
