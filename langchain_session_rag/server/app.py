"""The FastAPI app: OpenAI's ``/v1/chat/completions`` and ``/v1/models`` with memory, the memory endpoints, health.

Build it with :func:`create_app` (your memory and chat model, in your own process), or let ``session-rag serve``
build one per worker with :func:`app_from_env`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from langchain_core.language_models import BaseChatModel

from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.server.auth import Authenticator
from langchain_session_rag.server.chat_models import StampedChatModel
from langchain_session_rag.server.http import install_error_handlers, parse_body, read_body
from langchain_session_rag.server.memory_routes import add_memory_routes
from langchain_session_rag.server.schemas import ApiError, ChatRequest, chunk, completion, sse, unavailable
from langchain_session_rag.server.settings import DEFAULT_MAX_BODY_BYTES
from langchain_session_rag.server.turns import SESSION_HEADER, Turn, TurnRunner, api_error
from langchain_session_rag.stores.chroma_calls import server_problem


def create_app(
    memory: SessionVectorMemory,
    model: BaseChatModel,
    *,
    auth: Authenticator,
    context_window: int = 8192,
    max_tokens: int = 512,
    model_name: str = "session-rag",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    min_similarity: float | None = 0.3,
    ready: Callable[[], str | None] | None = None,
    pages: bool = True,
    pages_secret: bytes | None = None,
    sign_out_dir: str | Path | None = None,
    max_upload_bytes: int | None = None,
    allowed_hosts: Collection[str] = (),
) -> FastAPI:
    """An OpenAI-compatible chat server whose answers recall each user's past conversations.

    Args:
        memory: The store (any user's view: every request is scoped to the user its token names).
        model: The chat model that answers.
        auth: Who is asking (bearer tokens or a trusted proxy header).
        context_window: The model's window in tokens; a question that does not fit is refused (400).
        max_tokens: Tokens kept for the answer.
        model_name: The model id ``/v1/models`` lists.
        max_body_bytes: Largest request body (413 above it).
        min_similarity: Recall only memories at least this similar to the question.
        ready: Returns why the chat model is not reachable (``None``: it is), for ``/readyz``.
        pages: Serve the memory browser at ``/ui`` (the same users; see :mod:`langchain_session_rag.server.ui`).
        pages_secret: Keys the pages' sign-ins and anti-forgery values; give every worker of a server the same
            (default: random, fine for one process).
        sign_out_dir: A folder, private to the server's account, where the pages record sign-outs; give every
            worker of a server the same (default: this process's memory, fine for one process).
        max_upload_bytes: The largest file the browser's Import page takes (default: the importers' 256 MiB).
        allowed_hosts: Host names the server answers at (others: 403, before anything else runs); empty: any.
            ``session-rag serve`` behind a proxy on loopback answers only at loopback names (a DNS-rebinding page
            could otherwise claim any user with the proxy's header).

    Example:
        .. code-block:: python

            import tempfile
            from fastapi.testclient import TestClient
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.messages import AIMessage
            from langchain_session_rag import SessionVectorMemory
            from langchain_session_rag.server import Authenticator, create_app

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="server")
            model = GenericFakeChatModel(messages=iter([AIMessage("Hello!")]))
            auth = Authenticator(trusted_header="X-Forwarded-User")
            client = TestClient(create_app(memory, model, auth=auth))
            reply = client.post("/v1/chat/completions", headers={"X-Forwarded-User": "alice"},
                                json={"model": "session-rag", "messages": [{"role": "user", "content": "Hi"}]})
            assert reply.json()["choices"][0]["message"]["content"] == "Hello!"
    """
    from langchain_session_rag.graph import create_session_rag_graph  # noqa: PLC0415
    from langchain_session_rag.graph.model_window import counting_of  # noqa: PLC0415

    # counted as the model counts (LocalChatModel: its GGUF vocabulary), when it has its own counter
    budget = TokenBudget(context_window=context_window, reserve_for_answer=max_tokens, **counting_of(model))
    graph = create_session_rag_graph(
        StampedChatModel(inner=model), memory, budget=budget, score_threshold=min_similarity
    ).compile()
    runner = TurnRunner(graph=graph, memory=memory, budget=budget)
    app = FastAPI(title="session-rag", version="1", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app)
    only_at(app, frozenset(allowed_hosts))
    started = int(time.time())

    def user_of(request: Request) -> str:
        return auth.user_of_pairs(request.headers.items())  # every copy: a repeated credential is refused

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        store, model = await asyncio.gather(_store_problem(memory), _model_problem(ready))
        problems = {name: why for name, why in (("store", store), ("model", model)) if why is not None}
        status = 503 if problems else 200
        return JSONResponse({"status": "unavailable" if problems else "ready", "problems": problems}, status)

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        user_of(request)
        return {
            "object": "list",
            "data": [{"id": model_name, "object": "model", "created": started, "owned_by": "session-rag"}],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        user = user_of(request)  # before the body is read: no work for a stranger
        body = parse_body(ChatRequest, await read_body(request, max_body_bytes))
        turn = runner.prepare(body, user, request.headers.get(SESSION_HEADER))
        headers = {"X-Session-Id": turn.session_id}
        if not body.stream:
            answer, usage = await runner.answer(turn)
            return JSONResponse(completion(turn.response_id, body.model, answer, usage), headers=headers)
        return await _stream_response(runner, turn, body, headers)

    add_memory_routes(app, memory, user_of, max_body_bytes)
    if pages:  # the memory browser at /ui: the same users; never a compaction under the chat turns' writes
        from langchain_session_rag.server.ui import SearchSettings, UiAccess, add_ui_routes  # noqa: PLC0415
        from langchain_session_rag.server.ui.signin import SignOuts  # noqa: PLC0415

        sign_outs = SignOuts(Path(sign_out_dir) if sign_out_dir is not None else None)
        access = UiAccess(auth=auth, secret=pages_secret or secrets.token_bytes(32), sign_outs=sign_outs)
        floor = DEFAULT_SCORE_THRESHOLD if min_similarity is None else min_similarity
        search = SearchSettings(budget=budget, min_similarity=floor)
        add_ui_routes(app, memory, access, search, compaction=False, upload_limit=max_upload_bytes)
    return app


READY_WITHIN = 3.0
"""Seconds ``/readyz`` waits for the store's and the model's answers: one that takes longer is not ready."""


async def _store_problem(memory: SessionVectorMemory) -> str | None:
    """Why the store cannot serve now: it does not answer a read in time, or this worker's calls to it are stuck.

    The read goes through the server's breaker: refused at once while the server is known not to answer, and the
    probe that closes it when it answers again (so a worker becomes ready again by itself).
    """
    try:
        await asyncio.wait_for(memory.for_user("readyz-probe").alist_sessions(), READY_WITHIN)
    except TimeoutError:
        return f"the store did not answer within {READY_WITHIN:g} s"
    except Exception as exc:  # noqa: BLE001 - reported, whatever it is
        return f"{type(exc).__name__}: {exc}"
    return server_problem()


async def _model_problem(ready: Callable[[], str | None] | None) -> str | None:
    """Why the chat model cannot answer now (``ready``'s reason), or that its check took too long."""
    if ready is None:
        return None
    try:
        return await asyncio.wait_for(asyncio.to_thread(ready), READY_WITHIN)
    except TimeoutError:
        return f"the chat model's check did not finish within {READY_WITHIN:g} s"


def only_at(app: FastAPI, hosts: frozenset[str]) -> None:
    """Answer only requests addressed (``Host``) to one of ``hosts``: 403 for the others, before any route runs.

    No ``hosts``: any.
    """
    if not hosts:
        return
    from langchain_session_rag.server.ui.access import host_problem  # noqa: PLC0415

    @app.middleware("http")
    async def check_host(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        problem = host_problem(request.headers.get("host", ""), hosts)
        if problem:
            return JSONResponse(ApiError(403, problem, code="host_not_allowed").body(), status_code=403)
        return await call_next(request)


async def _stream_response(runner: TurnRunner, turn: Turn, body: ChatRequest, headers: dict[str, str]) -> Any:
    """Start the turn, and answer with an error (not a 200) if it fails before its first token."""
    report: dict[str, Any] = {}
    pieces = runner.stream(turn, report)
    try:
        first: str | None = await anext(pieces)
    except StopAsyncIteration:
        first = None
    except SessionRAGError as exc:
        raise api_error(exc) from exc
    rid, name = turn.response_id, body.model
    usage = bool(body.stream_options and body.stream_options.include_usage)

    async def events() -> AsyncIterator[str]:
        yield chunk(rid, name, {"role": "assistant", "content": ""})
        answer = [first or ""]
        if first:
            yield chunk(rid, name, {"content": first})
        try:
            async for piece in pieces:
                answer.append(piece)
                yield chunk(rid, name, {"content": piece})
        except Exception as exc:  # noqa: BLE001 - after the 200: the error goes in the stream, as OpenAI does
            error = api_error(exc) if isinstance(exc, SessionRAGError) else unavailable(exc) or ApiError(500, str(exc))
            yield sse(error.body())
            return
        yield chunk(rid, name, {}, "stop")
        if usage:
            yield chunk(rid, name, {}, usage=runner.usage(report, "".join(answer)))
        yield sse("[DONE]")

    stream_headers = {**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=stream_headers)
