"""``session-rag serve``: an OpenAI-compatible chat server with per-user memory (needs the ``serve`` extra).

``create_app`` loads FastAPI on first use; the token-file reader and the settings need no extra, so other
servers (the LangGraph recipe's auth) share the same token-file rules without installing FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langchain_session_rag.server.auth import Authenticator, read_token_file
from langchain_session_rag.server.settings import ServeSettings

if TYPE_CHECKING:
    from langchain_session_rag.server.app import create_app

__all__ = ["Authenticator", "ServeSettings", "create_app", "read_token_file"]


def __getattr__(name: str) -> Any:
    """Load ``create_app`` (and FastAPI) on first use."""
    if name == "create_app":
        return vars(importlib.import_module("langchain_session_rag.server.app"))["create_app"]
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
