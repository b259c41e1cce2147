"""``session-rag ui``: the memory browser for a local store, on this machine only (the ``serve`` extra).

It serves the pages ``session-rag serve`` serves at ``/ui``, for one user, on 127.0.0.1. No token file is needed:
the command makes a random token and prints the address that signs in with it (as Jupyter does), so another
account on the machine cannot sign in (``--open`` hands the browser a private file that redirects to it, not the
address itself, which would show in the browser's command line). The browser then holds a sign-in, not the token
(:mod:`~langchain_session_rag.server.ui.signin`; docs/ui.md says what a captured one allows until it ends).
"""

from __future__ import annotations

import html
import secrets
import shutil
import socket
import tempfile
import webbrowser
from pathlib import Path
from typing import Any

import click

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, err, store_options
from langchain_session_rag.cli.serve import check_serve_installed
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD


def _bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: any free one); a port in use is refused in a sentence.

    Raises:
        click.UsageError: The port is taken.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        msg = f"Port {port} on 127.0.0.1 is taken ({exc.strerror}): choose another with --port, or --port 0."
        raise click.UsageError(msg) from exc
    sock.listen(128)
    return sock


@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")  # fmt: skip
@click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Sign in with this file's tokens (several users) instead of a token made at start.")  # fmt: skip
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option("--context-window", type=click.IntRange(256, 1_000_000), default=8192, show_default=True,
              help="The window the Search page lays memories out in (the chat model's).")  # fmt: skip
@click.option("--min-similarity", type=click.FloatRange(-1.0, 1.0), default=DEFAULT_SCORE_THRESHOLD, show_default=True,
              help="The Search page recalls only memories at least this similar (the chat's floor).")  # fmt: skip
@store_options
def ui(
    port: int, token_file: Path | None, open_browser: bool, context_window: int, min_similarity: float, **store: Any
) -> None:
    """Browse, search, correct and erase the memory in a web page on this machine (127.0.0.1).

    \b
    Sessions with readable titles, search with each memory's scores, forget with a receipt, core memory editing
    with history and undo, import of a ChatGPT export. Stop it with Ctrl-C.
    """
    check_serve_installed("session-rag ui")
    import uvicorn  # noqa: PLC0415

    from langchain_session_rag.prompt.budget import TokenBudget  # noqa: PLC0415
    from langchain_session_rag.server.auth import Authenticator  # noqa: PLC0415
    from langchain_session_rag.server.ui import create_ui_app  # noqa: PLC0415

    options = StoreOptions.of(store)
    token = secrets.token_urlsafe(24)
    auth = (
        Authenticator.from_token_file(token_file) if token_file else Authenticator.for_one_user(token, options.user_id)
    )
    sock = _bind(port)  # a taken port is said before the model loads or a store is made
    launcher: Path | None = None
    try:
        memory = options.memory()
        memory.warm_up()
        app = create_ui_app(memory, auth=auth, budget=TokenBudget(context_window=context_window),
                            min_similarity=min_similarity)  # fmt: skip
        address = f"http://127.0.0.1:{sock.getsockname()[1]}/ui/"
        address += f"login?token={token}" if token_file is None else ""
        who = f"the memory of {options.user_id!r}" if token_file is None else f"the users of {token_file}"
        err.print(f"session-rag ui: {who} at {options.location}; Ctrl-C stops.")
        print(f"Open {address}", flush=True)
        if open_browser:  # through a private file: the browser's command line does not show the token
            launcher = launcher_file(address)
            webbrowser.open(launcher.as_uri())
        uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)).run(sockets=[sock])
    finally:
        sock.close()
        if launcher is not None:
            shutil.rmtree(launcher.parent, ignore_errors=True)


def launcher_file(address: str) -> Path:
    """A private file (mode 600, in a new folder of mode 700) that sends a browser on to ``address``.

    The browser's command line, which other accounts of the machine can read, then names only the file, not the
    address with its token (Jupyter does the same).
    """
    folder = Path(tempfile.mkdtemp(prefix="session-rag-ui-"))
    launcher = folder / "open.html"
    launcher.write_text(f'<!doctype html><meta http-equiv="refresh" content="0;url={html.escape(address)}">\n')
    launcher.chmod(0o600)
    return launcher
