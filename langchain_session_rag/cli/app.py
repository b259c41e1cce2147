"""The ``session-rag`` command: its group, and how errors, interrupts and closed pipes end it.

Exit codes: 0 done; 1 an error (one line on stderr; ``--debug`` or ``SESSION_RAG_DEBUG=1`` adds the traceback);
2 a bad command line (a missing argument, a value out of range); 130 interrupted. When the reader of the output goes
away (``session-rag sessions | head -1``) the command ends quietly with 1, as Click and Python do on a closed pipe.
"""

from __future__ import annotations

import os
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import click

from langchain_session_rag.cli.options import err

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 1


def _version() -> str:
    try:
        return version("langchain-session-rag")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without an install
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(_version(), "--version", "-V", prog_name="session-rag", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show the traceback of an error [env SESSION_RAG_DEBUG=1].")
def cli(debug: bool) -> None:
    """Long-term memory for your chats: import your history, chat with a model that remembers, search and forget.

    \b
    Everything runs on this machine: an embedded Chroma store (or a Chroma server with --server), the
    bundled all-MiniLM-L6-v2 embedding model, and Ollama for chat when it runs (else a small model in
    process). Store options (--path, --user, --server, --embeddings) go after the command name.

    \b
    Examples:
      session-rag ingest conversations.json      import a ChatGPT export
      session-rag chat                           chat; past sessions are recalled
      session-rag search "sourdough starter"     what the memory holds about it
      session-rag forget --session chat-20261130-091502-1a2b
    """
    del debug  # read by main() before any command runs


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    from langchain_session_rag.errors import SessionRAGError  # noqa: PLC0415

    if isinstance(exc, SessionRAGError | OSError | ValueError):
        return text
    return f"{type(exc).__name__}: {text} (unexpected; --debug shows where)"


def _validation_text(exc: BaseException) -> str | None:
    """A pydantic validation error as one line (``field: problem``), if it is one."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ != "ValidationError" or not callable(errors):
        return None
    parts = []
    for e in errors():
        where, problem = ".".join(str(x) for x in e.get("loc", ())), str(e.get("msg")).removeprefix("Value error, ")
        parts.append(f"{where}: {problem}" if where else problem)
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Run ``session-rag`` with ``argv`` (default: the process arguments); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("SESSION_RAG_DEBUG", "").lower() in {"1", "true", "yes"}
    end = args.index("--") if "--" in args else len(args)
    args = [a for a in args[:end] if a != "--debug"] + args[end:]  # --debug goes anywhere before "--"
    try:
        result = cli.main(args=args, prog_name="session-rag", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        err.print("Interrupted.")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away: send the rest of the output nowhere, and end quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001 - every error ends as one line, with the traceback on request
        if debug:
            traceback.print_exc()
        text = _validation_text(exc) or _one_line(exc)
        err.print(f"session-rag: error: {text}", markup=False, highlight=False)
        return EXIT_ERROR
    return result if isinstance(result, int) else 0


def run() -> None:
    """The console entry point."""
    # Started with a stream closed (`session-rag ... >&-`): its output goes nowhere. The files live with the process.
    if sys.stdout is None:
        sys.stdout = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = EXIT_BROKEN_PIPE
    sys.exit(code)
