"""The OpenAI wire format the server speaks: requests, responses, stream chunks, and errors.

Requests are validated strictly where a wrong value would change the answer (roles, content, sizes) and leniently
elsewhere: OpenAI clients send fields this server does not use (``temperature``, ``top_p``, ``n``...), which are
ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from langchain_session_rag.errors import StoreLockedError, StoreUnavailableError, StoreWriteError
from langchain_session_rag.privacy._folding import blank
from langchain_session_rag.stores.adapter import is_connection_error

ERROR_TYPES = {500: "server_error", 503: "service_unavailable"}
"""OpenAI's error ``type`` of a status; any other status is an ``invalid_request_error``."""
RETRY_AFTER_SECONDS = 1
"""``Retry-After`` of a 503: the store did not answer in time, was locked, or a write failed."""


class ApiError(Exception):
    """An error answered in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None) -> None:
        """An error with its HTTP status, a sentence for the user, and OpenAI's ``code`` and ``param``."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        kind = ERROR_TYPES.get(self.status, "invalid_request_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}

    def headers(self) -> dict[str, str] | None:
        """The response headers the status calls for (``WWW-Authenticate`` on 401, ``Retry-After`` on 503)."""
        if self.status == 401:  # noqa: PLR2004
            return {"WWW-Authenticate": "Bearer"}
        if self.status == 503:  # noqa: PLR2004
            return {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return None


RETRYABLE = (StoreUnavailableError, StoreLockedError, StoreWriteError)
"""Store errors that change nothing and may pass: answered 503 ``store_unavailable`` with ``Retry-After``."""


def unavailable(exc: Exception) -> ApiError | None:
    """The 503 a retryable store error, or a connection error, means (``None`` for any other error)."""
    if not isinstance(exc, RETRYABLE) and not is_connection_error(exc):  # a raw transport error of a store call too
        return None
    msg = (
        f"The memory store is unavailable ({type(exc).__name__}: {exc}); retry shortly: sending the request again is "
        "safe (memory chunks are stored by ids derived from their content, so once)."
    )
    return ApiError(503, msg, code="store_unavailable")


class TextPart(BaseModel):
    """A part of a message's content; only text parts are answered."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One message of the conversation a client sends (the whole conversation, every turn)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None
    name: str | None = None

    def text(self) -> str:
        """The message's text: its text parts joined (other parts are refused by :meth:`ChatRequest.check`)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text or "" for part in self.content if part.type == "text")


class StreamOptions(BaseModel):
    """``stream_options``: ``include_usage`` adds a last chunk with the token counts."""

    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``: the fields this server reads."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    metadata: dict[str, str] | None = None
    """``metadata["session_id"]`` names the conversation's session (else see ``turns.session_of``)."""
    user: str | None = Field(default=None, max_length=256)
    """OpenAI's end-user field; never the memory's user (that is the token's), kept for logs only."""

    def check(self) -> None:
        """Refuse what cannot be answered: a last message that is not the user's, non-text parts, an empty question.

        Raises:
            ApiError: 422 naming the offending message.
        """
        for index, message in enumerate(self.messages):
            if isinstance(message.content, list):
                for part in message.content:
                    if part.type != "text":
                        msg = f"messages[{index}] has a {part.type!r} part: this server answers text only."
                        raise ApiError(422, msg, code="unsupported_content", param=f"messages[{index}].content")
        last = self.messages[-1]
        if last.role != "user":
            msg = f"The last message must be the user's question, got a {last.role!r} message."
            raise ApiError(422, msg, code="invalid_messages", param=f"messages[{len(self.messages) - 1}].role")
        if blank(last.text()):  # whitespace, or only characters that draw nothing
            msg = "The last user message is empty: send a question."
            raise ApiError(422, msg, code="invalid_messages", param=f"messages[{len(self.messages) - 1}].content")


def completion(response_id: str, model: str, answer: str, usage: dict[str, int]) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
        "system_fingerprint": None,
    }


def chunk(
    response_id: str,
    model: str,
    delta: dict[str, Any],
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> str:
    """One server-sent event of a ``chat.completion.chunk`` (``usage`` given: the usage chunk, without choices)."""
    body: dict[str, Any] = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [] if usage is not None else [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return sse(body)


def sse(body: dict[str, Any] | str) -> str:
    """A server-sent event: ``data: JSON`` and a blank line (``[DONE]`` as it is)."""
    data = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return f"data: {data}\n\n"
