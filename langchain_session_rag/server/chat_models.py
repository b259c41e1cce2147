"""The chat model behind the server: Ollama when it answers, any LangChain chat model by configuration, else SmolLM2.

``--chat-model`` takes ``auto`` (default: Ollama's ``--ollama-model`` when an Ollama server answers and has it,
else SmolLM2-135M in process), ``local``, ``ollama:NAME`` or ``module:factory`` (a function of no arguments
returning any LangChain chat model, e.g. ``myapp.models:make_chat``).
"""

from __future__ import annotations

import os
import pkgutil
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig

from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.server.settings import ServeSettings

LOCAL_WINDOW = 2048
OLLAMA_WINDOW = 4096
OTHER_WINDOW = 8192
ANSWER_ID: ContextVar[str | None] = ContextVar("session_rag_answer_id", default=None)
"""The id the current turn's answer gets (set per request; see :class:`StampedChatModel`)."""
_NO_CALLBACKS: RunnableConfig = {"callbacks": []}
"""The wrapped model's own run reports to nobody: the outer model's callbacks stream its chunks once."""


@dataclass(frozen=True)
class ServedModel:
    """The chat model chosen, its context window, and a description for the log and ``/readyz``."""

    model: BaseChatModel
    context_window: int
    description: str
    ollama: str | None = None
    """The Ollama model name when Ollama answers (``/readyz`` checks that it still does)."""
    note: str | None = None
    """Why ``auto`` did not choose Ollama (the worker prints it once): not reachable, or the model not served."""


def _factory(spec: str) -> BaseChatModel:
    try:
        factory = pkgutil.resolve_name(spec)
    except (ImportError, AttributeError, ValueError) as exc:
        msg = f"--chat-model {spec!r}: cannot load it ({exc}); expected module:factory, e.g. myapp.models:make_chat."
        raise InvalidArgumentError(msg) from exc
    if not callable(factory):
        msg = f"--chat-model {spec!r} is a {type(factory).__name__}, not a function returning a chat model."
        raise InvalidArgumentError(msg)
    model = factory()
    if not isinstance(model, BaseChatModel):
        msg = f"--chat-model {spec!r} returned a {type(model).__name__}, not a LangChain chat model (BaseChatModel)."
        raise InvalidArgumentError(msg)
    return model


def choose_chat_model(settings: ServeSettings) -> ServedModel:
    """Build the chat model ``settings.chat_model`` names (in the worker: models never cross a fork).

    Raises:
        InvalidArgumentError: A malformed spec, a factory that fails to load or returns no chat model, or a
            ``max_tokens`` over half the window.
    """
    from langchain_session_rag.graph.model_window import model_window  # noqa: PLC0415
    from langchain_session_rag.models.local_llm import LocalChatModel, ollama_base_url, pick_chat_model  # noqa: PLC0415

    spec, limit = settings.chat_model, settings.max_tokens
    note: str | None = None
    if spec == "auto":
        spec = f"ollama:{settings.ollama_model}"
        choice = pick_chat_model(settings.ollama_model, host=settings.ollama_host)
        if choice.backend == "local":
            spec = "local"
            given = settings.ollama_host or os.environ.get("OLLAMA_HOST")
            where = f"--ollama-host/OLLAMA_HOST={given}" if given else "OLLAMA_HOST unset (the default address)"
            note = f"--chat-model auto: not using Ollama ({where}): {choice.fallback_reason}; serving SmolLM2 instead"
    if spec == "local":
        window = settings.context_window or LOCAL_WINDOW
        model = LocalChatModel(max_tokens=limit, n_ctx=window)
        served = ServedModel(model, window, "SmolLM2-135M in process", note=note)
    elif spec.startswith("ollama:") and len(spec) > len("ollama:"):
        from langchain_ollama import ChatOllama  # noqa: PLC0415

        name = spec.removeprefix("ollama:")
        window = settings.context_window or OLLAMA_WINDOW
        base = ollama_base_url(settings.ollama_host)
        chat = ChatOllama(model=name, base_url=base, num_ctx=window, num_predict=limit)
        served = ServedModel(chat, window, f"{name} on Ollama at {base}", ollama=name)
    elif ":" in spec and all(part.strip() for part in spec.split(":", 1)):
        configured = _factory(spec)
        known = model_window(configured)  # LocalChatModel.n_ctx, ChatOllama.num_ctx, a profile's input limit
        window = settings.context_window or (known.window if known is not None else OTHER_WINDOW)
        served = ServedModel(configured, window, f"{spec} (configured)")
    else:
        msg = f"--chat-model must be auto, local, ollama:NAME or module:factory, got {spec!r}."
        raise InvalidArgumentError(msg)
    check_max_tokens(limit, served.context_window, served.description)
    return served


def check_max_tokens(max_tokens: int, window: int, model: str) -> None:
    """Refuse an answer length that leaves the prompt less than half the model's window, naming ``--max-tokens``.

    Raises:
        InvalidArgumentError: ``max_tokens`` is over half of ``window``.
    """
    if max_tokens > window // 2:
        msg = (
            f"--max-tokens {max_tokens} is too large for {model}: its window is {window} tokens and the prompt "
            f"needs room too, so --max-tokens can be at most {window // 2}."
        )
        raise InvalidArgumentError(msg)


class StampedChatModel(BaseChatModel):
    """A chat model whose answer carries the id the server chose for it (:data:`ANSWER_ID`).

    Chat clients send the whole conversation back every turn without ids; the server gives every message an id
    derived from the session, its position and its text, and the answer the same id the client's copy will get
    next turn. The exchange the graph stores then carries the ids of the window's messages, so the graph never
    retrieves, as a memory, a turn that is still in the conversation the client sent. The server runs its graph
    asynchronously only, so answers stream through ``_astream`` (there is no sync streaming to stamp).
    """

    inner: BaseChatModel

    @property
    def _llm_type(self) -> str:
        return f"stamped-{type(self.inner).__name__}"

    @staticmethod
    def _stamp(message: BaseMessage) -> BaseMessage:
        answer_id = ANSWER_ID.get()
        if answer_id is not None:
            message.id = answer_id
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del run_manager
        answer = self.inner.invoke(messages, _NO_CALLBACKS, stop=stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=self._stamp(answer))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del run_manager
        answer = await self.inner.ainvoke(messages, _NO_CALLBACKS, stop=stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=self._stamp(answer))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        del run_manager
        async for piece in self.inner.astream(messages, _NO_CALLBACKS, stop=stop, **kwargs):
            yield ChatGenerationChunk(message=self._stamp(_as_chunk(piece)))


def _as_chunk(message: BaseMessage) -> AIMessageChunk:
    if isinstance(message, AIMessageChunk):
        return message
    reply = message if isinstance(message, AIMessage) else AIMessage(message.text)
    return AIMessageChunk(
        content=reply.content, usage_metadata=reply.usage_metadata, response_metadata=reply.response_metadata
    )
