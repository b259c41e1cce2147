"""The memory browser: web pages to see, search, correct and erase what the memory holds (``/ui``).

Served by ``session-rag serve`` (same users and tokens as its API) and by ``session-rag ui`` for a local store.
Server-rendered HTML and one stylesheet shipped in the package: no script, nothing fetched from elsewhere.
"""

from __future__ import annotations

from fastapi import FastAPI

from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.server.auth import Authenticator
from langchain_session_rag.server.http import install_error_handlers
from langchain_session_rag.server.ui.access import LOOPBACK_HOSTS, UiAccess
from langchain_session_rag.server.ui.routes import add_ui_routes
from langchain_session_rag.server.ui.search import SearchSettings

__all__ = ["LOOPBACK_HOSTS", "SearchSettings", "UiAccess", "add_ui_routes", "create_ui_app"]


def create_ui_app(
    memory: SessionVectorMemory,
    *,
    auth: Authenticator,
    budget: TokenBudget | None = None,
    memory_k: int = 4,
    min_similarity: float = DEFAULT_SCORE_THRESHOLD,
    loopback_only: bool = True,
) -> FastAPI:
    """The memory browser alone (no chat API): what ``session-rag ui`` serves.

    Args:
        memory: The store (each page uses its user's view).
        auth: Who may look (``Authenticator.for_one_user`` for one local user, or a token file).
        budget: The token budget the Search page lays memories out in (default: an 8,192-token window).
        memory_k: How many memories the Search page recalls (the graph's ``memory_k``).
        min_similarity: The least similarity of a recalled memory (the graph's floor).
        loopback_only: Answer only requests addressed to a loopback host name (refuses DNS-rebinding pages).
    """
    app = FastAPI(title="session-rag memory", version="1", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    access = UiAccess(auth=auth, hosts=LOOPBACK_HOSTS if loopback_only else frozenset())
    budget = budget or TokenBudget(context_window=8192, reserve_for_answer=1024)
    search = SearchSettings(budget=budget, k=memory_k, min_similarity=min_similarity)
    add_ui_routes(app, memory, access, search, compaction=True)
    return app
