"""A ``session-rag serve`` worker: its app, built from the settings in the environment (see ``server.settings``)."""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE

from langchain_session_rag.cli.options import StoreOptions
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.server.app import create_app
from langchain_session_rag.server.auth import Authenticator
from langchain_session_rag.server.chat_models import choose_chat_model
from langchain_session_rag.server.settings import ServeSettings

SERVER_USER = "session-rag-serve"
"""The user the worker's memory object is opened for; every request acts for its own user (``for_user``)."""


def build_app(settings: ServeSettings) -> FastAPI:
    """Open the store, choose the chat model, read the users, and build the app."""
    from langchain_session_rag.models.local_llm import ollama_models  # noqa: PLC0415

    auth = Authenticator.from_settings(settings.token_file, settings.trusted_user_header)
    served = choose_chat_model(settings)
    given = settings.model_dump(include={"server", "store_timeout", "embeddings", "ollama_host", "keep_secrets"})
    for name, value in settings.model_dump(include={"path", "key_file", "keyring"}).items():
        given[name] = Path(value) if value else None
    options = StoreOptions(user=SERVER_USER, **given)
    memory = options.memory(runtime=RuntimeSettings(**settings.model_dump(include={"write_linger"}, exclude_none=True)))
    memory.warm_up()

    def ready() -> str | None:
        down = served.ollama is not None and ollama_models(settings.ollama_host, timeout=1.0) is None
        return f"{served.description} does not answer" if down else None

    if served.note is not None:
        print(f"session-rag serve: {served.note}", file=sys.stderr)  # noqa: T201
    print(f"session-rag serve: chat model {served.description}; memory at {options.location}", file=sys.stderr)  # noqa: T201
    return create_app(
        memory,
        served.model,
        auth=auth,
        context_window=served.context_window,
        max_tokens=settings.max_tokens,
        model_name=settings.model_name,
        max_body_bytes=settings.max_body_bytes,
        min_similarity=settings.min_similarity,
        ready=ready,
        pages_secret=bytes.fromhex(settings.pages_secret) if settings.pages_secret else None,
        sign_out_dir=settings.sign_out_dir,
        max_upload_bytes=settings.max_upload_bytes,
        allowed_hosts=settings.allowed_hosts,
    )


def app_from_env() -> FastAPI:
    """The uvicorn factory of ``session-rag serve`` (``langchain_session_rag.server.worker:app_from_env``).

    A worker that cannot build its app says why in one line and exits 3 (uvicorn's "failed to start"), whatever
    the error: uvicorn then stops every worker and ``session-rag serve`` exits 3, instead of restarting a worker
    that would fail the same way forever (uvicorn restarts a worker that exits with any other code).
    """
    try:
        return build_app(ServeSettings.from_env())
    except Exception as exc:  # noqa: BLE001 - any failure to build the app is a failure to start
        print(f"session-rag serve: a worker cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)  # noqa: T201
        sys.exit(STARTUP_FAILURE)
