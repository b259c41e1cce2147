"""The options every store command takes, from flags or environment variables, and opening the memory they name."""

from __future__ import annotations

import getpass
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from langchain_core.embeddings import Embeddings
from rich.console import Console
from rich.table import Table

from langchain_session_rag._checks import user_id_problem
from langchain_session_rag.errors import EmbeddingModelMismatchError, StoreUnavailableError

if TYPE_CHECKING:
    from langchain_session_rag.importers.types import Skipped
    from langchain_session_rag.memory.retriever import SessionVectorMemory

F = TypeVar("F", bound=Callable[..., Any])
COLLECTION = "session_memory"
MAX_STORE_TIMEOUT = 3600.0
"""The longest ``--store-timeout`` (an hour: a call waiting longer is a server that is down)."""
SKIPPED_SHOWN = 20
"""Most skipped items a command lists (then "... and N more"): a hostile file can hold millions."""
out = Console(soft_wrap=True, highlight=False, markup=False, emoji=False)
"""Results: stdout. No markup: stored text, titles and user names are printed as they are."""
err = Console(stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False)
"""Progress, notices and errors: stderr."""


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Stored text as it may reach a terminal: control characters (escape sequences) shown as U+FFFD."""
    return _CONTROL.sub("\ufffd", text)


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/session-rag`` (else ``~/.local/share/session-rag``; ``%LOCALAPPDATA%`` on Windows)."""
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "session-rag"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "session-rag"


def _server(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    del ctx
    if not value:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:  # noqa: PLR2004
        msg = f"expected HOST:PORT (e.g. localhost:8000), got {value!r}"
        raise click.BadParameter(msg, param=param)
    return host, int(port)  # an IPv6 host keeps its brackets, as chromadb needs them


def _seconds(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    del ctx
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_STORE_TIMEOUT:
        msg = f"expected a number of seconds above 0 and at most {MAX_STORE_TIMEOUT:g}, got {value!r}"
        raise click.BadParameter(msg, param=param)
    return seconds


def _embeddings_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    del ctx
    if value in (None, "local", "local-torch") or (value.startswith("ollama:") and len(value) > len("ollama:")):
        return value
    msg = f"expected 'local', 'local-torch' or 'ollama:MODEL' (e.g. ollama:nomic-embed-text), got {value!r}"
    raise click.BadParameter(msg, param=param)


def store_options(func: F) -> F:
    """Add ``--path``, ``--user``, ``--server``, ``--store-timeout``, ``--embeddings``, ... (each with its variable)."""
    options = [
        click.option(
            "--path",
            type=click.Path(path_type=Path, file_okay=False),
            envvar="SESSION_RAG_PATH",
            help="Embedded store folder [env SESSION_RAG_PATH; default ~/.local/share/session-rag].",
        ),
        click.option("--user", envvar="SESSION_RAG_USER", help="Whose memory [env SESSION_RAG_USER; default: you]."),
        click.option(
            "--server",
            metavar="HOST:PORT",
            envvar="SESSION_RAG_SERVER",
            callback=_server,
            help="Use a Chroma server instead of the folder [env SESSION_RAG_SERVER].",
        ),
        click.option(
            "--store-timeout",
            metavar="SECONDS",
            envvar="SESSION_RAG_STORE_TIMEOUT",
            callback=_seconds,
            help="With --server: seconds each call to the Chroma server may wait for its answer; a later one fails "
            "(503 store_unavailable from serve), a server that does not answer its heartbeat then refuses calls at "
            "once [env SESSION_RAG_STORE_TIMEOUT; default 5].",
        ),
        click.option(
            "--embeddings",
            metavar="local|ollama:MODEL",
            envvar="SESSION_RAG_EMBEDDINGS",
            callback=_embeddings_spec,
            help="Embedding model for a new store [env SESSION_RAG_EMBEDDINGS; default: the store's, else local "
            "all-MiniLM-L6-v2].",
        ),
        click.option(
            "--ollama-host",
            metavar="URL",
            envvar="OLLAMA_HOST",
            help="Ollama server [env OLLAMA_HOST; default http://localhost:11434].",
        ),
        click.option(
            "--key-file",
            type=click.Path(path_type=Path, dir_okay=False),
            envvar="SESSION_RAG_KEY_FILE",
            help="Encrypt the store with the master key in this file [env SESSION_RAG_KEY_FILE, or the key itself "
            "in SESSION_RAG_MASTER_KEY; `session-rag keys new` makes one].",
        ),
        click.option(
            "--keyring",
            type=click.Path(path_type=Path, file_okay=False),
            envvar="SESSION_RAG_KEYRING",
            help="Folder of the users' wrapped data keys [env SESSION_RAG_KEYRING; default: PATH.keys beside the "
            "store; required with --server].",
        ),
        click.option(
            "--keep-secrets",
            is_flag=True,
            envvar="SESSION_RAG_KEEP_SECRETS",
            help="Store API keys, tokens, passwords and card numbers as typed (by default they are replaced by "
            "[secret:KIND] before storing).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class _OllamaDown(Embeddings):
    """Stands in for an Ollama embedding model that does not answer: commands that embed nothing still work."""

    def __init__(self, model_id: str, reason: str) -> None:
        self.model_id = model_id
        self.reason = reason

    def _fail(self) -> list[float]:
        raise StoreUnavailableError(self.reason)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        del texts
        return [self._fail()]

    def embed_query(self, text: str) -> list[float]:
        del text
        return self._fail()


@dataclass
class StoreOptions:
    """The store a command works on, and whose memory in it."""

    path: Path | None = None
    user: str | None = None
    server: tuple[str, int] | None = None
    store_timeout: float | None = None
    embeddings: str | None = None
    ollama_host: str | None = None
    key_file: Path | None = None
    keyring: Path | None = None
    keep_secrets: bool = False

    @classmethod
    def of(cls, kwargs: dict[str, Any]) -> StoreOptions:
        """Take the store options out of a command's keyword arguments."""
        return cls(**{f.name: kwargs.pop(f.name) for f in fields(cls)})

    @property
    def user_id(self) -> str:
        """The user named, else the login name."""
        if self.user is None:
            try:
                return getpass.getuser()
            except (OSError, KeyError):  # no login name (a container without a passwd entry)
                return "me"
        problem = user_id_problem(self.user)  # the library's one rule: a user the CLI refuses, the library refuses
        if problem is not None:
            shown = self.user if len(self.user) <= 40 else self.user[:40] + "…"  # noqa: PLR2004
            msg = f"1 to 256 characters without control characters, got {shown!r} ({problem})."
            raise click.BadParameter(msg, param_hint="--user")
        return self.user

    @property
    def location(self) -> str:
        """Where the store is, in words."""
        if self.server is not None:
            return f"the Chroma server at {self.server[0]}:{self.server[1]}"
        return str(self.path or default_store_path())

    def memory(self, *, embeds: bool = True, create: bool = True, **settings: Any) -> SessionVectorMemory:
        """Open the memory, saying what is being loaded while it loads.

        With ``embeds=False`` (listing, statistics, forgetting, export) a store written by an Ollama model opens
        even when Ollama does not answer. With ``create=False`` a folder that holds no store is refused (a mistyped
        ``--path`` must not become a new, empty store that a command then reports on).
        """
        self.user_id  # noqa: B018 - a bad --user is refused first
        if not create:
            self._must_exist()
        with status(f"Opening the memory at {self.location} …"):
            return self._open(settings, embeds=embeds)

    def _must_exist(self) -> None:
        folder = self.path or default_store_path()
        if self.server is None and not (folder / "chroma.sqlite3").exists():
            msg = f"No store at {folder} (a mistyped --path or SESSION_RAG_PATH?); `session-rag ingest` creates one."
            raise click.UsageError(msg)

    def existing_client(self) -> Any:
        """The chromadb client of an existing store (a folder without one, or without its key, is refused unchanged)."""
        self._must_exist()
        return self._client()

    def _client(self) -> Any:
        """The store's client (an encrypted folder opened without its key is refused unchanged)."""
        from langchain_session_rag.errors import SessionRAGError, StoreLockedError  # noqa: PLC0415
        from langchain_session_rag.stores.adapter import READ_TIMEOUT, open_chroma_client  # noqa: PLC0415
        from langchain_session_rag.stores.encryption import check_key_before_opening  # noqa: PLC0415

        if self.server is not None:
            host, port = self.server
            return open_chroma_client(host=host, port=port, read_timeout=self.store_timeout or READ_TIMEOUT)
        path = self.path or default_store_path()
        try:
            check_key_before_opening(path, self.key_file, self.keyring, COLLECTION)  # before Chroma writes to it
            return open_chroma_client(path=path)
        except StoreLockedError as exc:
            msg = (
                f"The store at {path} is open in another process (a chat, or another command): an embedded store "
                "has one process at a time. Close it, or run a Chroma server and use --server HOST:PORT."
            )
            raise StoreLockedError(msg) from exc
        except SessionRAGError:
            raise
        except Exception as exc:  # chromadb's own errors: a damaged or foreign file in the folder
            msg = f"Cannot open the store at {path}: {' '.join(str(exc).split())}."
            raise StoreUnavailableError(msg) from exc

    def _open(self, settings: dict[str, Any], *, embeds: bool) -> SessionVectorMemory:
        from langchain_session_rag.memory.retriever import SessionVectorMemory  # noqa: PLC0415
        from langchain_session_rag.stores.chroma import ChromaBackend  # noqa: PLC0415

        if self.embeddings is not None and self.server is None and not (self.path or default_store_path()).exists():
            self.embeddings_for(self.embeddings)  # a new folder: check the model before creating it
        client = self._client()
        recorded = ChromaBackend(client, name=COLLECTION).manifest.get("embedding_model")
        spec = _spec_of(recorded, self.embeddings)
        return SessionVectorMemory(
            chroma_client=client,
            user_id=self.user_id,
            embeddings=self.embeddings_for(spec, embeds=embeds),
            collection_name=COLLECTION,
            **{**self.privacy, **settings},
        )

    @property
    def privacy(self) -> dict[str, Any]:
        """The memory's encryption and redaction settings (the key from ``--key-file`` or the environment)."""
        return {
            "encryption_key": self.key_file,
            "keyring_dir": str(self.keyring) if self.keyring is not None else None,
            "redact_secrets": not self.keep_secrets,
        }

    def embeddings_for(self, spec: str | None, *, embeds: bool = True) -> Embeddings | None:
        """The model an ``--embeddings`` value names (``None``: the bundled default); a silent Ollama is refused.

        With ``embeds=False`` it is not: a stand-in fails when asked to embed.
        """
        if spec is None or spec == "local":
            return None  # the bundled default
        if spec == "local-torch":
            return _torch_embeddings()
        from langchain_session_rag.models.local_llm import has_model, ollama_base_url, ollama_models  # noqa: PLC0415

        model = spec.removeprefix("ollama:")
        where = ollama_base_url(
            self.ollama_host
        )  # a bad OLLAMA_HOST is named here (the ollama package fails on import)
        models = ollama_models(self.ollama_host, timeout=2.0)
        if models is None:
            reason = f"The embedding model is Ollama's {model!r}, but no Ollama server answers at {where}."
        elif not has_model(models, model):
            reason = f"The Ollama server at {where} has no model {model!r}: run `ollama pull {model}`."
        else:
            from langchain_ollama import OllamaEmbeddings  # noqa: PLC0415

            return OllamaEmbeddings(model=model, base_url=where)
        if embeds:
            raise StoreUnavailableError(reason)
        return _OllamaDown(spec, reason)


def _torch_embeddings() -> Embeddings:
    """The bundled model's torch route, or a sentence on what to install (or how to leave it behind)."""
    import importlib.util  # noqa: PLC0415

    from langchain_session_rag.errors import MissingDependencyError  # noqa: PLC0415
    from langchain_session_rag.models.embeddings import LocalEmbeddings  # noqa: PLC0415

    if importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec("torch") is None:
        msg = (
            "The torch route of all-MiniLM-L6-v2 (--embeddings local-torch; the default before 0.6) needs torch and "
            "sentence-transformers: pip install 'torch==2.13.0' 'langchain-session-rag[torch]'. A store it wrote can "
            "instead be re-embedded once with the current default: session-rag reembed."
        )
        raise MissingDependencyError(msg)
    return LocalEmbeddings(backend="torch")


def _spec_of(recorded: Any, asked: str | None) -> str | None:
    """The ``--embeddings`` value to open a store written by ``recorded`` with (``asked``: the option given)."""
    from langchain_session_rag.models.embeddings import DEFAULT_EMBEDDING_MODEL, TORCH_EMBEDDING_MODEL  # noqa: PLC0415

    if not recorded:
        return asked
    wanted = None if asked in (None, "local") else asked
    known: dict[str, str | None] = {DEFAULT_EMBEDDING_MODEL: None, TORCH_EMBEDDING_MODEL: "local-torch"}
    current = known.get(recorded, str(recorded))
    if asked is not None and wanted != current:
        msg = (
            f"This store holds vectors of {recorded!r}; --embeddings {asked} would mix in another model's. "
            "Leave --embeddings out to use the store's model."
        )
        raise EmbeddingModelMismatchError(msg)
    if current is None or current == "local-torch" or current.startswith("ollama:"):
        return current
    msg = (
        f"This store was written by the embedding model {recorded!r}, which the command line cannot load; "
        "open it from Python with that model (SessionVectorMemory(..., embeddings=...))."
    )
    raise EmbeddingModelMismatchError(msg)


@contextmanager
def status(text: str) -> Iterator[None]:
    """A spinner on stderr while something slow runs (a terminal only: scripts get no noise)."""
    if err.is_terminal:
        with err.status(text):
            yield
    else:
        yield


def print_skipped(skipped: Sequence[Skipped], count: int) -> None:
    """A table of the first :data:`SKIPPED_SHOWN` skipped items, then how many more (``count``: all of them)."""
    if not skipped:
        return
    table = Table("file", "item", "why it was skipped", title=f"Skipped ({count:,})")
    for item in skipped[:SKIPPED_SHOWN]:
        table.add_row(printable(item.source), printable(item.item), printable(item.reason))
    out.print(table)
    if count > SKIPPED_SHOWN:
        out.print(f"... and {count - SKIPPED_SHOWN:,} more skipped.")
