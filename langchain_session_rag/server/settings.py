"""``ServeSettings``: everything a ``session-rag serve`` worker needs to build its app, passed through the environment.

The command checks the settings once, in the parent, then hands them to every uvicorn worker as one JSON
environment variable (:data:`SETTINGS_ENV`); each worker opens its own memory and loads its own models after it
starts, so no model, thread or store connection crosses a ``fork``.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from langchain_session_rag.errors import InvalidArgumentError

SETTINGS_ENV = "SESSION_RAG_SERVE_SETTINGS"
"""The environment variable holding a worker's :class:`ServeSettings` as JSON."""
DEFAULT_MAX_BODY_BYTES = 1_048_576
"""Largest request body (1 MiB): a bigger one is refused with 413 before it is parsed."""


class ServeSettings(BaseModel):
    """The store, the chat model, the users and the limits of one ``session-rag serve`` deployment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = None
    """Embedded store folder (ignored with ``server``); ``None``: the default folder."""
    server: tuple[str, int] | None = None
    """A Chroma server (host, port) shared by every worker."""
    store_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds each call to the Chroma server waits for its answer (``None``: the client's default, 5)."""
    embeddings: str | None = None
    """``--embeddings`` value for a new store (``None``: the store's model, else the bundled one)."""
    ollama_host: str | None = None
    """Ollama's address (``None``: ``OLLAMA_HOST`` or ``http://localhost:11434``)."""
    chat_model: str = "auto"
    """``auto`` (Ollama's ``ollama_model`` when it answers, else SmolLM2 in process), ``local``, ``ollama:NAME``
    or ``module:factory`` (a callable returning any LangChain chat model)."""
    ollama_model: str = "llama3.2"
    """The Ollama model ``auto`` looks for."""
    context_window: int | None = Field(default=None, gt=0)
    """The chat model's window in tokens (``None``: 2,048 for SmolLM2, 4,096 for Ollama, 8,192 otherwise)."""
    max_tokens: int = Field(default=512, ge=16)
    """Longest answer in tokens (at most half the window)."""
    model_name: str = Field(default="session-rag", min_length=1, max_length=200)
    """The model id ``GET /v1/models`` lists (clients must name some model; any name is accepted)."""
    token_file: str | None = None
    """The bearer-token file (see :mod:`~langchain_session_rag.server.auth`)."""
    trusted_user_header: str | None = None
    """A header set by a trusted proxy naming the user (``X-Forwarded-User``); off by default."""
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    """Largest request body in bytes; larger ones get 413."""
    min_similarity: float = Field(default=0.3, ge=-1.0, le=1.0)
    """Recall only memories at least this similar to the question (cosine)."""
    key_file: str | None = None
    """The master key's file (encryption at rest); else ``SESSION_RAG_MASTER_KEY`` in the environment, else none."""
    keyring: str | None = None
    """The folder of the users' wrapped data keys (default: beside the store)."""
    keep_secrets: bool = False
    """Store secrets as typed; by default they are replaced by ``[secret:KIND]`` before anything is stored."""
    max_upload_bytes: int | None = Field(default=None, ge=1024)
    """The largest file the memory browser's Import page takes (``None``: the importers' 256 MiB)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the server answers at (empty: any); see ``create_app``'s ``allowed_hosts``."""
    pages_secret: str = ""
    """Hex key of the memory browser's sign-ins and anti-forgery values, the same in every worker (the command
    makes one at each start)."""
    sign_out_dir: str | None = None
    """The private folder where the memory browser's sign-outs are recorded, the same for every worker (the command
    makes one at each start and removes it at exit); ``None``: each worker's own memory (one worker)."""
    header_timeout: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    """Seconds a connection has to send a request's whole headers (from its opening, or from its last answer); a
    slower one is closed (see :mod:`~langchain_session_rag.server.connections`)."""
    max_connections: int = Field(default=1000, ge=1)
    """Open connections a worker keeps; one beyond them is closed at once (keep it well under ``ulimit -n``)."""
    write_linger: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The memory's ``RuntimeSettings.write_linger`` (``None``: its default); a test sets it high to show that a
    turn's write is flushed before its response ends, whatever the linger."""

    def check(self) -> ServeSettings:
        """Refuse settings that cannot serve anyone: no way to know users, or both ways at once.

        Raises:
            InvalidArgumentError: Neither or both of ``token_file`` and ``trusted_user_header``.
        """
        if (self.token_file is None) == (self.trusted_user_header is None):
            which = "both" if self.token_file else "neither"
            msg = (
                f"serve needs exactly one way to know who is asking, got {which}: --token-file FILE (bearer tokens) "
                "or --trusted-user-header NAME (a proxy in front names the user)."
            )
            raise InvalidArgumentError(msg)
        return self

    def to_env(self) -> dict[str, str]:
        """The environment variables that carry these settings to a worker."""
        return {SETTINGS_ENV: self.model_dump_json()}

    @classmethod
    def from_env(cls) -> ServeSettings:
        """The settings the command put in the environment.

        Raises:
            InvalidArgumentError: The variable is missing (the app was started without ``session-rag serve``).
        """
        text = os.environ.get(SETTINGS_ENV)
        if not text:
            msg = (
                f"No {SETTINGS_ENV} in the environment: start the server with `session-rag serve`, or build the "
                "app with create_app(...)."
            )
            raise InvalidArgumentError(msg)
        return cls.model_validate_json(text).check()
