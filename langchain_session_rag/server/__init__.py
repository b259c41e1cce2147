"""``session-rag serve``: an OpenAI-compatible chat server with per-user memory (needs the ``serve`` extra)."""

from langchain_session_rag.server.app import create_app
from langchain_session_rag.server.auth import Authenticator, read_token_file
from langchain_session_rag.server.settings import ServeSettings

__all__ = ["Authenticator", "ServeSettings", "create_app", "read_token_file"]
