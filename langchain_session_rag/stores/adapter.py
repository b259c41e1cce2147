"""The one module that knows how chromadb and langchain-chroma work inside.

Everything else talks to Chroma through :class:`~langchain_session_rag.stores.chroma.ChromaBackend` and the
helpers here: opening a client, telling an embedded client from a server, naming the store a client opens, and
taking the collection out of a ``langchain_chroma.Chroma`` (the only private attributes the package reads; a test
fails if one is read anywhere else).
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import TYPE_CHECKING, Any

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_path
from langchain_session_rag.errors import (
    InvalidArgumentError,
    InvalidStorePathError,
    StoreUnavailableError,
)
from langchain_session_rag.stores.locking import lock_embedded_store, read_chroma_db

if TYPE_CHECKING:
    from chromadb import Collection
    from chromadb.api import ClientAPI


CONNECT_TIMEOUT = 5.0
"""Seconds a new server client waits for the server's first answer before giving up (``StoreUnavailableError``)."""
READ_TIMEOUT = 5.0
"""Seconds each HTTP call of a server client may wait for a connection, to send, and for its answer.

chromadb's own client waits without a limit: a frozen server (stopped, swapping, partitioned) would hang every
caller. Past the deadline the call is a ``StoreUnavailableError``; a write whose outcome is then unknown is safe to
send again, since records are stored by ids derived from their content (an upsert of the same id replaces it).
"""


def open_chroma_client(
    path: str | os.PathLike[str] | None = None,
    host: str | None = None,
    port: int = 8000,
    *,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
) -> ClientAPI:
    """A chromadb client: a server when ``host`` is given, else an embedded store in ``path``.

    A server is first asked for its heartbeat, waiting at most ``connect_timeout`` seconds (chromadb itself waits
    without a limit); every later call waits at most ``connect_timeout`` to connect and ``read_timeout`` seconds
    for its answer. An embedded store is locked to this process (see :func:`lock_embedded_store`).

    Raises:
        StoreUnavailableError: No Chroma server answers at ``host:port`` (refused, unreachable, silent, or not a
            Chroma server); the message names the address and how to start one.
    """
    import chromadb  # noqa: PLC0415 - chromadb is slow to import; only when a store is opened
    from chromadb.config import Settings  # noqa: PLC0415

    settings = Settings(anonymized_telemetry=False)
    if host is not None:
        _check_address(host, port, connect_timeout, read_timeout)
        probe_server(host, port, connect_timeout)
        try:
            client = chromadb.HttpClient(host=host, port=port, settings=settings)
        except (ValueError, OSError) as exc:  # chromadb turns every failure of its first call into a ValueError
            raise StoreUnavailableError(_unavailable(host, port, exc)) from exc
        claim(client)  # in a forked child, chromadb hands back the parent's session for the address
        _set_deadlines(client, connect_timeout, read_timeout)
        return client
    if path is None:
        msg = "An embedded store needs a path (or give host= for a Chroma server)."
        raise InvalidStorePathError(msg)
    path = check_path("path", path)
    lock_embedded_store(path)
    return chromadb.PersistentClient(path=str(path), settings=settings)


def _set_deadlines(client: ClientAPI, connect_timeout: float, read_timeout: float) -> None:
    """Bound every HTTP call of a server client (chromadb builds its ``httpx.Client`` with ``timeout=None``)."""
    import httpx  # noqa: PLC0415 - chromadb's own HTTP client

    session = client._server._session  # type: ignore[attr-defined]  # noqa: SLF001 - see the module docstring
    session.timeout = httpx.Timeout(read_timeout, connect=connect_timeout)


def read_deadline(client: object) -> float:
    """Seconds each HTTP call of a server client waits for its answer (``READ_TIMEOUT`` when it cannot be read)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    seconds = getattr(getattr(session, "timeout", None), "read", None)
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else READ_TIMEOUT


def server_address(client: ClientAPI) -> tuple[str, int] | None:
    """The ``(host, port)`` of a server client (``None`` for an embedded one)."""
    if is_embedded(client):
        return None
    settings = client.get_settings()
    return str(settings.chroma_server_host), int(settings.chroma_server_http_port or 8000)


def _check_address(host: object, port: object, *timeouts: object) -> None:
    """A server address is an argument: a mistake in it is refused, not retried as an unavailable server."""
    if not isinstance(host, str) or not host.strip() or any(c.isspace() or c == "\x00" for c in host):
        msg = f"host must be a host name or an IP address, got {host!r}."
        raise InvalidArgumentError(msg)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65_535:  # noqa: PLR2004 - TCP ports
        msg = f"port must be an integer from 1 to 65535, got {port!r}."
        raise InvalidArgumentError(msg)
    for name, value in zip(("connect_timeout", "read_timeout"), timeouts, strict=False):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
            msg = f"{name} must be a positive number of seconds, got {value!r}."
            raise InvalidArgumentError(msg)


def _unavailable(host: str, port: int, exc: BaseException) -> str:
    why = str(exc).strip() or type(exc).__name__
    return (
        f"No Chroma server answers at {host}:{port} ({why}): start one with "
        f"`chroma run --path DIR --host {host} --port {port}`, or check the address."
    )


def probe_server(host: str, port: int, timeout: float) -> None:
    """Ask a Chroma server for its heartbeat within ``timeout`` seconds (connect, send and read each bounded).

    Raises:
        StoreUnavailableError: It did not answer in time, refused, or is not reachable.
    """
    import httpx  # noqa: PLC0415 - chromadb's own HTTP client

    address = f"[{host}]" if ":" in host and not host.startswith("[") else host  # a bare IPv6 address
    try:
        httpx.get(f"http://{address}:{port}/api/v2/heartbeat", timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:  # any answer's status: chromadb judges it
        raise StoreUnavailableError(_unavailable(host, port, exc)) from exc


def is_connection_error(exc: BaseException) -> bool:
    """Whether an exception means the server did not answer (httpx transport errors, refused connections)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    transport = {"TransportError", "ConnectError", "ReadError", "WriteError", "RemoteProtocolError", "TimeoutException"}
    return bool(names & transport) or isinstance(exc, ConnectionError) or "Could not connect" in str(exc)


def is_timeout(exc: BaseException) -> bool:
    """Whether an exception is a call past its deadline (httpx's timeouts), not a refused or broken connection."""
    return any(cls.__name__ == "TimeoutException" for cls in type(exc).__mro__)


def is_embedded(client: ClientAPI) -> bool:
    """Whether the client runs Chroma in this process (``PersistentClient`` / ``EphemeralClient``)."""
    return "fastapi" not in str(client.get_settings().chroma_api_impl).lower()


def client_location(client: ClientAPI) -> str:
    """Where a client's data lives: the folder of an embedded store, ``host:port`` of a server, or ``ephemeral``.

    Clients of one folder (or one server) give the same location, so in-process state can be shared by store.
    """
    settings = client.get_settings()
    if not is_embedded(client):
        return f"http://{settings.chroma_server_host}:{settings.chroma_server_http_port}"
    if settings.is_persistent and settings.persist_directory:
        return os.path.realpath(str(settings.persist_directory))
    return "ephemeral"


def persist_directory(client: ClientAPI) -> str | None:
    """The folder of an embedded persistent store (``None`` on a server or in memory)."""
    settings = client.get_settings()
    return str(settings.persist_directory) if is_embedded(client) and settings.is_persistent else None


def claim(client: ClientAPI) -> None:
    """Make ``client`` this process's: refused if embedded in a forked child, a server's with connections of its own.

    Called when a store is opened, and on its first call in another process (see :mod:`langchain_session_rag._fork`).

    Raises:
        StoreLockedError: ``client`` is embedded and this process was forked from one that had an embedded store open.
    """
    shared = sys.modules.get("chromadb.api.shared_system_client")
    if shared is not None:  # chromadb's count of clients: a thread may hold its lock at a fork
        _fork.free_in_child(shared.SharedSystemClient._refcount_lock)  # noqa: SLF001
    if is_embedded(client):
        _fork.refuse_embedded(client_location(client) if persist_directory(client) else "")
        _fork.note_embedded_open()
        return
    server = client._server  # type: ignore[attr-defined]  # noqa: SLF001 - see the module docstring
    session = server._session  # noqa: SLF001
    made_in = _SESSIONS.get(session)
    if made_in is None:  # made by chromadb in this process (or handed in): this process's from now on
        _SESSIONS[session] = os.getpid()
    elif made_in != os.getpid():  # copied by fork(): parent and child would read one another's replies
        import httpx  # noqa: PLC0415 - chromadb's HTTP client imported it already

        verify = server._settings.chroma_server_ssl_verify  # noqa: SLF001
        options: dict[str, Any] = {} if verify is None else {"verify": verify}
        fresh = httpx.Client(timeout=session.timeout, limits=server.http_limits, headers=session.headers, **options)
        server._session = fresh  # noqa: SLF001 - the parent's connections are left as they are, never closed here
        _SESSIONS[fresh] = os.getpid()


_SESSIONS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""The process that made each server client's HTTP session (chromadb shares one per server address)."""


def chroma_collection_of(vectorstore: Any) -> tuple[ClientAPI, Collection] | None:
    """The chromadb client and collection behind a ``langchain_chroma.Chroma``; ``None`` for any other store.

    langchain-chroma has no public accessor for them, so this reads its ``_client`` / ``_collection``; it is the
    only place in the package that does. A ``Chroma`` instance means ``langchain_chroma`` is already imported,
    so the check never imports it.
    """
    module = sys.modules.get("langchain_chroma")
    if module is None or not isinstance(vectorstore, module.Chroma):
        return None
    return vectorstore._client, vectorstore._collection  # noqa: SLF001 - see the docstring


def vector_segments(client: ClientAPI) -> dict[str, str] | None:
    """Index folder (vector segment id) → collection id, for every collection of an embedded store.

    Chroma names each collection's index folder after its vector segment, which its public API does not show; this
    reads the ``segments`` table of the folder's ``chroma.sqlite3`` (read-only). ``None`` when that fails (not an
    embedded store, or a Chroma whose file differs): callers then treat every folder as unknown.
    """
    folder = persist_directory(client)
    rows = (
        None if folder is None else read_chroma_db(folder, "SELECT id, collection FROM segments WHERE scope = 'VECTOR'")
    )
    return None if rows is None else {str(segment): str(collection) for segment, collection in rows}


def _chromadb_systems() -> list[object]:
    """Chromadb's systems of this process: never freed in a forked child (see :mod:`langchain_session_rag._fork`).

    Freeing an embedded store's Rust bindings waits for threads left in the parent: a child that drops them, or
    simply exits normally, would hang. The only other change to chromadb's state is in :func:`claim`: its
    client-count lock is freed in a child.
    """
    module = sys.modules.get("chromadb.api.shared_system_client")
    return [] if module is None else list(module.SharedSystemClient._identifier_to_system.values())  # noqa: SLF001


_fork.keep_in_child(_chromadb_systems)
