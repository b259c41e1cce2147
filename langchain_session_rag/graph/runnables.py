"""Graph nodes from sync and async bodies, with public APIs only, and the node that runs an existing agent."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs, set_config_context
from langchain_core.runnables.utils import coro_with_context
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime, get_runtime

from langchain_session_rag.cache.scope import cache_scope
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.graph.names import AGENT, CACHE_LOOKUP, CALL_MODEL
from langchain_session_rag.graph.state import SessionContext, SessionRAGState, run_ids
from langchain_session_rag.graph.turn import prompt_messages
from langchain_session_rag.privacy.redaction import redact_message

INTERNAL_TAGS = (TAG_NOSTREAM,)
"""Tags of the nodes that are not the answer: ``stream_mode="messages"`` shows no chat model token of them (the
summary model's). Their outputs hold no chat message either: the prompt is kept as message dicts."""
ANSWER_NODES = frozenset({CACHE_LOOKUP, CALL_MODEL, AGENT})


class GraphNode(Runnable[Any, Any]):
    """A graph node from a sync and an async body, on LangChain's public ``Runnable`` interface.

    LangGraph already traces each node as a run, so the node adds none of its own (as LangGraph does for plain
    functions): it only sets the run's config, with the node's tags, as the context of its body, so the models the
    body calls inherit the callbacks (token streaming) and the tags. A body takes the state, plus ``runtime``
    (``langgraph.runtime.get_runtime``) and ``config`` when its signature names them.
    """

    def __init__(self, name: str, sync: Callable[..., Any], asyn: Callable[..., Any], tags: list[str]) -> None:
        """Wrap the bodies; ``tags`` go on every run the body starts."""
        self.name = name
        self.sync, self.asyn, self.tags = sync, asyn, tags
        wants = set(inspect.signature(sync).parameters)
        self.wants_runtime, self.wants_config = "runtime" in wants, "config" in wants

    def _config(self, config: RunnableConfig | None) -> RunnableConfig:
        config = ensure_config(config)
        return merge_configs(config, {"tags": self.tags}) if self.tags else config

    def _extras(self, config: RunnableConfig) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.wants_runtime:
            out["runtime"] = get_runtime(SessionContext)
        if self.wants_config:
            out["config"] = config
        return out

    def _call(self, state: Any, config: RunnableConfig) -> Any:
        return self.sync(state, **self._extras(config))

    async def _acall(self, state: Any, config: RunnableConfig) -> Any:
        return await self.asyn(state, **self._extras(config))

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002, ARG002
        """Run the sync body with the node's config as its context."""
        config = self._config(config)
        with set_config_context(config) as context:
            return context.run(self._call, input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002, ARG002
        """Run the async body with the node's config as its context."""
        config = self._config(config)
        with set_config_context(config) as context:
            return await coro_with_context(self._acall(input, config), context)


def graph_node(name: str, sync: Callable[..., Any], asyn: Callable[..., Any]) -> Runnable[Any, Any]:
    """A graph node from a sync and an async body, with public APIs only (:class:`GraphNode`).

    A body takes the state, plus ``runtime`` and ``config`` when its signature names them. Nodes other than the
    answer nodes (``cache_lookup``, ``call_model``, ``agent``) are tagged no-stream, so ``stream_mode="messages"``
    never shows a summary model's tokens. Use it to add :class:`SessionRAGNodes` methods to your own graph::

        graph.add_node("summarise_and_store", graph_node("summarise_and_store", nodes.summarise_and_store,
                                                         nodes.asummarise_and_store))
    """
    return GraphNode(name, sync, asyn, [] if name in ANSWER_NODES else list(INTERNAL_TAGS))


def agent_node(agent: Runnable[Any, Any], *, redact: bool = False) -> tuple[Any, Any]:
    """Sync and async bodies of a node that runs ``agent`` on the budgeted prompt.

    The agent (a compiled LangGraph agent, or any runnable taking and returning ``{"messages": [...]}``) sees
    the instructions, the history and the retrieved memories; the messages it adds (tool calls, tool results,
    the answer) join the conversation, with their secrets replaced when ``redact`` (the memory's
    ``redact_secrets``).
    """
    if not isinstance(agent, Runnable):
        msg = f"agent must be a Runnable (a compiled graph or any runnable), got {type(agent).__name__}."
        raise InvalidArgumentError(msg)

    def run(state: SessionRAGState, runtime: Runtime[SessionContext], config: RunnableConfig) -> dict[str, Any]:
        prompt, user = prompt_messages(state), run_ids(runtime)[0]
        with cache_scope(user, private=True, redact=redact):
            result = agent.with_config(metadata={"user_id": user}).invoke({"messages": prompt}, config)
        return {"messages": added(result, prompt), "llm_calls": state.get("llm_calls", 0) + 1}

    async def arun(state: SessionRAGState, runtime: Runtime[SessionContext], config: RunnableConfig) -> dict[str, Any]:
        prompt, user = prompt_messages(state), run_ids(runtime)[0]
        with cache_scope(user, private=True, redact=redact):
            result = await agent.with_config(metadata={"user_id": user}).ainvoke({"messages": prompt}, config)
        return {"messages": added(result, prompt), "llm_calls": state.get("llm_calls", 0) + 1}

    def added(result: dict[str, Any], prompt: list[Any]) -> list[Any]:
        new = result["messages"][len(prompt) :]
        return [redact_message(m) for m in new] if redact else new

    return run, arun
