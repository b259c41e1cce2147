"""``session-rag serve``: the OpenAI-compatible memory server (FastAPI on uvicorn; the ``serve`` extra).

The command checks everything it can before serving (the users, the store, the worker count) and loads no model:
each worker builds its own app (:mod:`~langchain_session_rag.server.worker`).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, default_store_path, err, store_options
from langchain_session_rag.errors import MissingDependencyError
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD

if TYPE_CHECKING:
    import socket

    import uvicorn
    from uvicorn.supervisors import Multiprocess

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WORKER_FACTORY = "langchain_session_rag.server.worker:app_from_env"
PROTOCOL = "langchain_session_rag.server.connections:GuardedHTTPProtocol"
LINGER_ENV = "SESSION_RAG_SERVE_WRITE_LINGER"
"""Tests and tuning: the memory's write linger in seconds (see ``RuntimeSettings.write_linger``)."""


def check_serve_installed(command: str = "session-rag serve") -> None:
    """Refuse, with the install line, when FastAPI, uvicorn or python-multipart is missing (``command`` needs them).

    Raises:
        MissingDependencyError: The ``serve`` extra is not installed.
    """
    missing = [name for name in ("fastapi", "uvicorn") if importlib.util.find_spec(name) is None]
    # the memory browser's forms
    if not (importlib.util.find_spec("python_multipart") or importlib.util.find_spec("multipart")):
        missing.append("python-multipart")
    if missing:
        msg = f"{command} needs {' and '.join(missing)}: pip install 'langchain-session-rag[serve]'"
        raise MissingDependencyError(msg)


def check_chat_model_spec(spec: str) -> None:
    """Refuse a malformed ``--chat-model``, or a factory whose module cannot be found, without importing anything.

    Raises:
        click.BadParameter: The spec is not ``auto``, ``local``, ``ollama:NAME`` or ``module:factory`` with a module
            on the path (exit 2: no worker starts, so none fails in a loop).
    """
    if spec in {"auto", "local"} or (spec.startswith("ollama:") and len(spec) > len("ollama:")):
        return
    module, sep, factory = spec.partition(":")
    problem = (
        None if sep and module and factory.isidentifier() else "expected auto, local, ollama:NAME or module:factory"
    )
    if problem is None:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        problem = None if found is not None else f"no module {module!r} on the Python path"
    if problem is not None:
        msg = f"{problem}, got {spec!r}."
        raise click.BadParameter(msg, param_hint="--chat-model")


def check_workers(workers: int, options: StoreOptions) -> None:
    """Refuse more than one worker on an embedded store, once, before anything starts (exit 2).

    Raises:
        click.UsageError: ``workers > 1`` without ``--server``.
    """
    if workers > 1 and options.server is None:
        folder = options.path or default_store_path()
        msg = (
            f"--workers {workers} needs a Chroma server: the embedded store at {folder} is opened by one process at "
            f"a time, so every worker but one would fail. Run `chroma run --path {folder} --host 127.0.0.1 --port "
            f"8000` and then `session-rag serve --server 127.0.0.1:8000 --workers {workers} ...`, or serve with "
            "--workers 1."
        )
        raise click.UsageError(msg)


def check_answer_room(chat_model: str, context_window: int | None, max_tokens: int) -> None:
    """Refuse a ``--max-tokens`` over half the window, in the parent, when the window is known without a model.

    The window is known when given, or when it is the route's default (``local``: 2,048, ``ollama:NAME``: 4,096;
    ``auto``: refused only when too large for both); a factory's own window is checked by the workers.

    Raises:
        click.UsageError: ``max_tokens`` over half the window (exit 2: no worker starts).
    """
    from langchain_session_rag.server.chat_models import LOCAL_WINDOW, OLLAMA_WINDOW  # noqa: PLC0415

    if context_window is not None:
        window, which = context_window, f"--context-window {context_window}"
    elif chat_model == "local":
        window, which = LOCAL_WINDOW, f"SmolLM2's window of {LOCAL_WINDOW} tokens"
    elif chat_model.startswith("ollama:"):
        window, which = OLLAMA_WINDOW, f"the Ollama default window of {OLLAMA_WINDOW} tokens"
    elif chat_model == "auto":
        window = max(LOCAL_WINDOW, OLLAMA_WINDOW)
        which = f"the window of either model auto may choose ({LOCAL_WINDOW} or {OLLAMA_WINDOW} tokens)"
    else:
        return
    if max_tokens > window // 2:
        msg = (
            f"--max-tokens {max_tokens} is too large for {which}: the prompt needs room too, so --max-tokens can be "
            f"at most {window // 2} (half the window); lower --max-tokens or raise --context-window."
        )
        raise click.UsageError(msg)


def served_hosts(host: str, trusted_user_header: str | None, named: tuple[str, ...]) -> tuple[str, ...]:
    """The host names the server answers at (empty: any).

    Those named (and loopback); else, behind a proxy that names the user and bound to loopback, loopback only (a
    DNS-rebinding page must not reach it with its own user header), at any loopback address (``127.0.0.2``
    too); else any.
    """
    loopback = {*LOOPBACK, "[::1]", *([host.strip("[]")] if is_loopback(host) else [])}
    if named:
        return tuple(sorted({*named, *loopback}))
    if trusted_user_header and is_loopback(host):
        return tuple(sorted(loopback))
    return ()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost``, or any address of 127.0.0.0/8 or ``::1``."""
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def supervise(config: uvicorn.Config, sockets: list[socket.socket]) -> Multiprocess:
    """Build uvicorn's worker supervisor, which notices at once a worker that exits while checking its health.

    Every half second uvicorn pings each worker and waits up to ``timeout_worker_healthcheck`` (5 s) for the
    answer. A worker that failed to start exits without answering, and its exit did not end that wait: the
    supervisor held the worker's end of the pipe as well as its own. Closing the supervisor's copy of the worker's
    end (the worker holds its own from its start) makes the worker's exit end the ping at once; a worker that is
    alive answers as before, and one that hangs is still killed after the timeout.

    Returns:
        The supervisor, not yet running.
    """
    from uvicorn.supervisors import Multiprocess  # noqa: PLC0415

    class Supervisor(Multiprocess):
        def keep_subprocess_alive(self) -> None:
            for process in self.processes:  # each started; closing again is a no-op
                process.child_conn.close()
            super().keep_subprocess_alive()

    return Supervisor(config, sockets=sockets)


def run_workers(host: str, port: int, workers: int) -> None:
    """Serve with uvicorn; exit 3 when the worker, or any of several workers, fails to start.

    ``uvicorn.run`` exits 3 for one worker that fails to start but returns normally when one of several does
    (its supervisor then stops them all): this runs the same supervisor (:func:`supervise`) and looks at the
    workers' exit codes.

    Raises:
        click.exceptions.Exit: 3 when a worker failed to start (its error is printed above).
    """
    import uvicorn  # noqa: PLC0415
    from uvicorn.config import STARTUP_FAILURE  # noqa: PLC0415

    if workers == 1:
        uvicorn.run(WORKER_FACTORY, factory=True, host=host, port=port, log_level="warning", http=PROTOCOL)
        return
    config = uvicorn.Config(
        WORKER_FACTORY, factory=True, host=host, port=port, workers=workers, log_level="warning", http=PROTOCOL
    )
    sock = config.bind_socket()
    supervisor = supervise(config, [sock])
    try:
        supervisor.run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        err.print(f"session-rag serve: a worker failed to start (its error is above); all {workers} stopped.")
        raise click.exceptions.Exit(STARTUP_FAILURE)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback: this machine only; a TLS proxy in front for others).")  # fmt: skip
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="Port to listen on.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Worker processes; more than 1 needs --server (a Chroma server).")  # fmt: skip
@click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False), envvar="SESSION_RAG_TOKEN_FILE",
              help="Bearer tokens, one `TOKEN USER` a line, chmod 600 [env SESSION_RAG_TOKEN_FILE].")  # fmt: skip
@click.option("--trusted-user-header", metavar="NAME",
              help="Take the user from this header set by an authenticating proxy (e.g. X-Forwarded-User). "
              "Anyone reaching the server directly can then be anyone: keep it behind the proxy.")  # fmt: skip
@click.option("--chat-model", default="auto", show_default=True, envvar="SESSION_RAG_SERVE_CHAT_MODEL",
              help="auto (Ollama if it answers, else SmolLM2 in process), local, ollama:NAME, or module:factory "
              "(any LangChain chat model) [env SESSION_RAG_SERVE_CHAT_MODEL].")  # fmt: skip
@click.option("--ollama-model", default="llama3.2", show_default=True, help="The Ollama model `auto` looks for.")
@click.option("--context-window", type=click.IntRange(256, 1_000_000),
              help="The chat model's window in tokens [default: 2048 SmolLM2, 4096 Ollama, 8192 other].")  # fmt: skip
@click.option("--max-tokens", type=click.IntRange(16, 100_000), default=512, show_default=True,
              help="Longest answer in tokens (at most half the window).")  # fmt: skip
@click.option("--model-name", default="session-rag", show_default=True, help="The model id /v1/models lists.")
@click.option("--max-body-bytes", type=click.IntRange(1024, 100_000_000), default=1_048_576, show_default=True,
              help="Largest request body; larger ones get 413.")  # fmt: skip
@click.option("--min-similarity", type=click.FloatRange(-1.0, 1.0), default=DEFAULT_SCORE_THRESHOLD, show_default=True,
              help="Recall only memories at least this similar to the question (cosine).")  # fmt: skip
@click.option("--max-upload-bytes", type=click.IntRange(1024, None),
              help="Largest file the memory browser's Import page takes [default: 256 MiB].")  # fmt: skip
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="A host name the server answers at (repeatable); behind a proxy on loopback only loopback names "
              "are answered unless named here.")  # fmt: skip
@click.option("--header-timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds a connection has to send a request's headers; a slower one is closed.")  # fmt: skip
@click.option("--max-connections", type=click.IntRange(1, 1_000_000), default=1000, show_default=True,
              help="Open connections per worker; more are closed at once (keep it under `ulimit -n`).")  # fmt: skip
@store_options
def serve(
    host: str,
    port: int,
    workers: int,
    token_file: Path | None,
    trusted_user_header: str | None,
    chat_model: str,
    context_window: int | None,
    max_tokens: int,
    allowed_hosts: tuple[str, ...],
    **given: Any,
) -> None:
    """Serve an OpenAI-compatible chat API whose answers recall each user's past conversations.

    \b
    Point any OpenAI client or chat UI at http://HOST:PORT/v1 with a token from --token-file as its API key.
    Endpoints: /v1/chat/completions, /v1/models, /v1/memory/{search,sessions,forget,export,core}, /healthz, /readyz;
    the memory browser at /ui/.
    """
    check_serve_installed()
    from langchain_session_rag.server.auth import Authenticator  # noqa: PLC0415
    from langchain_session_rag.server.settings import ServeSettings  # noqa: PLC0415

    options = StoreOptions.of(given)  # what is left: settings passed on as they are (--model-name, ...)
    check_workers(workers, options)
    check_chat_model_spec(chat_model)
    check_answer_room(chat_model, context_window, max_tokens)
    linger = os.environ.get(LINGER_ENV)
    settings = ServeSettings(
        **given,
        path=str(options.path) if options.path else None,
        server=options.server,
        store_timeout=options.store_timeout,
        embeddings=options.embeddings,
        ollama_host=options.ollama_host,
        chat_model=chat_model,
        context_window=context_window,
        max_tokens=max_tokens,
        token_file=str(token_file.resolve()) if token_file else None,
        trusted_user_header=trusted_user_header,
        write_linger=float(linger) if linger else None,
        key_file=str(options.key_file.resolve()) if options.key_file else None,
        keyring=str(options.keyring.resolve()) if options.keyring else None,
        keep_secrets=options.keep_secrets,
        allowed_hosts=served_hosts(host, trusted_user_header, allowed_hosts),
        pages_secret=secrets.token_hex(32),
    ).check()
    Authenticator.from_settings(settings.token_file, settings.trusted_user_header)  # a bad file: refused here, once
    if options.server is not None:
        options.existing_client()  # a Chroma server that does not answer: refused here, not by every worker
    if not is_loopback(host):
        err.print(f"session-rag serve: listening on {host}, not loopback: use TLS in front (tokens travel in clear).")
    if trusted_user_header and not is_loopback(host):
        err.print(f"session-rag serve: WARNING: anyone reaching {host}:{port} can claim any user with "
                  f"{trusted_user_header}; bind to loopback behind the proxy.")  # fmt: skip
    sign_outs = tempfile.mkdtemp(prefix="session-rag-serve-")  # mode 700: this account only; for every worker
    os.environ.update(settings.model_copy(update={"sign_out_dir": sign_outs}).to_env())
    err.print(f"session-rag serve: http://{host}:{port}/v1 ({workers} worker(s), memory at {options.location})")
    previous = signal.signal(signal.SIGTERM, _exit_on_term)  # uvicorn re-raises a SIGTERM once it has stopped
    try:
        run_workers(host, port, workers)
    finally:  # the sign-outs end with the secret that signed their sign-ins
        shutil.rmtree(sign_outs, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _exit_on_term(signum: int, frame: object) -> NoReturn:
    """SIGTERM after the server stopped: exit through the ``finally`` blocks (128 + the signal, as the shell says)."""
    del frame
    sys.exit(128 + signum)
