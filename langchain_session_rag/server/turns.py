"""One chat turn through the session-RAG graph: the client's conversation in, the answer out, the exchange stored.

Chat clients send the whole conversation every turn. The last user message is the question (the retrieval
query); the messages before it are the conversation window, given to the graph as they are and never stored
again: the graph stores only the new exchange (the question and its answer). Every message gets an id derived
from the session, its position, its role and its text, and the answer the id its copy will have next turn.

The session (the thread) of a conversation is, first found: the ``X-Session-Id`` header, ``metadata["session_id"]``
of the request, else ``chat-`` and 16 hex digits of the SHA-256 of the conversation's first user message (a
conversation keeps its first message, so every turn of it lands in the same session; two conversations opening
with the same words share one: send a session id to keep them apart).

Read-your-writes: the memory's writes are flushed before the response ends (before the last stream chunk, or
before the JSON answer), so every worker of a deployment sharing one Chroma server sees the exchange by then.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage

from langchain_session_rag._checks import session_id_problem
from langchain_session_rag.errors import BudgetExceededError, InvalidRequestError, SessionRAGError
from langchain_session_rag.graph.names import BUILD_PROMPT, CALL_MODEL
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.server.chat_models import ANSWER_ID
from langchain_session_rag.server.schemas import ApiError, ChatMessage, ChatRequest, unavailable

SESSION_HEADER = "x-session-id"
_ROLES = {"system": SystemMessage, "developer": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def message_id(session_id: str, index: int, role: str, text: str) -> str:
    """The id of the ``index``-th message of a session's conversation (the same every turn the client resends it).

    An answer's id leaves its text out (``text=""`` for the assistant): it is chosen before the answer is made.
    """
    text = "" if role == "assistant" else text
    digest = hashlib.sha256(f"{session_id}\x1f{index}\x1f{role}\x1f{text}".encode()).hexdigest()
    return f"m-{digest[:16]}"


def session_of(request: ChatRequest, header: str | None) -> str:
    """The session of a conversation (see the module docstring).

    Raises:
        ApiError: 422 for a session id that is not fit to store.
    """
    given, where = (header, "X-Session-Id") if header else ((request.metadata or {}).get("session_id"), "metadata")
    if given:
        problem = session_id_problem(given)
        if problem is not None:
            msg = f"Unfit session id in {where}: {problem}."
            raise ApiError(422, msg, code="invalid_session_id", param=where)
        return given
    first = next((m.text() for m in request.messages if m.role == "user"), "")
    return f"chat-{hashlib.sha256(first.encode()).hexdigest()[:16]}"


def graph_messages(messages: list[ChatMessage], session_id: str) -> list[BaseMessage]:
    """The conversation as LangChain messages with stable ids (tool and function messages are left out)."""
    out: list[BaseMessage] = []
    for index, message in enumerate(messages):
        kind = _ROLES.get(message.role)
        if kind is None:
            continue
        text = message.text()
        role = "system" if message.role == "developer" else message.role
        out.append(kind(text, id=message_id(session_id, index, role, text)))
    return out


@dataclass(frozen=True)
class Turn:
    """A checked request: whose, which session, the graph's input, and the answer's id."""

    user_id: str
    session_id: str
    messages: list[BaseMessage]
    answer_id: str
    response_id: str


@dataclass
class TurnRunner:
    """Runs turns of a compiled session-RAG graph for the server (one per worker)."""

    graph: Any
    memory: SessionVectorMemory
    budget: TokenBudget

    def prepare(self, request: ChatRequest, user_id: str, session_header: str | None) -> Turn:
        """Check a request before any retrieval or model call: content, session, and the question's size.

        Raises:
            ApiError: 422 for what cannot be answered; 400 ``context_length_exceeded`` for a question that does
                not fit the model's window with the instructions and the client's system messages.
        """
        request.check()
        session_id = session_of(request, session_header)
        messages = graph_messages(request.messages, session_id)
        question = messages[-1].text
        client_system = "\n\n".join(m.text for m in messages[:-1] if isinstance(m, SystemMessage))
        system = f"{self.budget.system_prompt}\n\n{client_system}" if client_system else None
        try:  # the client's system messages are never dropped silently: counted with the instructions
            self.budget.check_question(question, system=system)
        except BudgetExceededError as exc:
            what = "The system message(s) sent, the server's instructions and the question" if system else None
            msg = f"{what} do not fit the model's window: {exc}" if what else str(exc)
            raise ApiError(400, msg, code="context_length_exceeded", param="messages") from None
        answer_id = message_id(session_id, len(request.messages), "assistant", "")
        return Turn(
            user_id=user_id,
            session_id=session_id,
            messages=messages,
            answer_id=answer_id,
            response_id=f"chatcmpl-{secrets.token_hex(12)}",
        )

    def _run_args(self, turn: Turn) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"messages": turn.messages}, {"user_id": turn.user_id, "session_id": turn.session_id}

    async def answer(self, turn: Turn) -> tuple[str, dict[str, int]]:
        """Run the turn to its end; the exchange is in the store when this returns."""
        state, context = self._run_args(turn)
        ANSWER_ID.set(turn.answer_id)  # this request's task only
        try:
            out = await self.graph.ainvoke(state, context=context)
        except SessionRAGError as exc:
            raise api_error(exc) from exc
        await self.memory.aflush()
        answer = out["messages"][-1].text
        return answer, self.usage(out.get("budget_report") or {}, answer)

    async def stream(self, turn: Turn, report: dict[str, Any] | None = None) -> AsyncIterator[str]:
        """The answer's text pieces as the model makes them; the exchange is in the store before this ends.

        ``report`` (a dict) receives the turn's budget report, for the usage chunk.
        """
        state, context = self._run_args(turn)
        ANSWER_ID.set(turn.answer_id)  # this request's task only (a generator cannot reset it across tasks)
        streamed: list[str] = []
        final = ""
        async for mode, item in self.graph.astream(state, context=context, stream_mode=["messages", "updates"]):
            if mode == "messages":
                message, meta = item
                if isinstance(message, AIMessageChunk) and meta.get("langgraph_node") == CALL_MODEL and message.text:
                    streamed.append(message.text)
                    yield message.text
            elif CALL_MODEL in item:
                reply = (item[CALL_MODEL] or {}).get("messages", [])
                final = next((m.text for m in reply if isinstance(m, AIMessage)), "")
            elif report is not None and BUILD_PROMPT in item:
                report.update((item[BUILD_PROMPT] or {}).get("budget_report") or {})
        if final and not streamed:  # a model that does not stream: the whole answer at once
            yield final
        await self.memory.aflush()

    def usage(self, report: dict[str, Any], answer: str) -> dict[str, int]:
        """OpenAI's ``usage``: the prompt as the budget counted it, the answer with the same counter."""
        prompt = int(report.get("total", 0))
        completion = self.budget.count(answer)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def api_error(exc: SessionRAGError) -> ApiError:
    """A library error of a turn as the HTTP error it means (503 store, 400 over budget, 422 unfit input, else 500)."""
    retry = unavailable(exc)
    if retry is not None:
        return retry
    if isinstance(exc, BudgetExceededError):
        return ApiError(400, str(exc), code="context_length_exceeded", param="messages")
    if isinstance(exc, InvalidRequestError):
        return ApiError(422, str(exc), code="invalid_messages", param="messages")
    return ApiError(500, f"The turn failed: {exc}", code=type(exc).__name__)
