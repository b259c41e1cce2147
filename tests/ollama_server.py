"""A loopback server speaking Ollama's REST API, answered by the package's real in-process models.

``langchain_ollama`` and the ``ollama`` client talk to it as to Ollama. By hand: ``python -m tests.ollama_server
--port 11434``. Not Ollama: nothing to pull, no ``/api/generate``, no ``format`` (structured output), no images,
no thinking; options other than ``num_predict``, ``temperature`` and ``stop`` are ignored, and the backing
model's own settings apply where a request gives none (the default chat model: greedy, 256 tokens at most).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import itertools
import json
import logging
import math
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from typing_extensions import Self

from langchain_session_rag import LocalChatModel, LocalEmbeddings
from langchain_session_rag.models.local_llm import bundled_model_path

Backend = Embeddings | BaseChatModel
Reply = dict[str, Any] | str | Iterator[dict[str, Any]]
_LOG = logging.getLogger(__name__)
# The bundled files, described as Ollama describes its builds of the same models (a custom path is not described).
_BUNDLED: dict[type, dict[str, str]] = {
    LocalChatModel: {"format": "gguf", "family": "llama", "parameter_size": "135M", "quantization_level": "Q4_1"},
    LocalEmbeddings: {"format": "onnx", "family": "bert", "parameter_size": "23M", "quantization_level": "Q8_0"},
}


def default_models() -> dict[str, Backend]:
    """``all-minilm`` (all-MiniLM-L6-v2) and ``smollm2:135m`` (SmolLM2-135M-Instruct): Ollama's names for them."""
    return {"all-minilm": LocalEmbeddings(), "smollm2:135m": LocalChatModel()}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


_STARTED = _now()


class HTTPError(Exception):
    """An error answered as ``{"error": message}`` with this status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _details(backend: Backend) -> tuple[dict[str, Any], int]:
    """Ollama's ``details`` and the size in bytes of the files on disk, read without loading the model."""
    files: list[Path] = []
    info = {"format": "", "family": type(backend).__name__, "parameter_size": "", "quantization_level": ""}
    if isinstance(backend, LocalChatModel) and backend.model_path is None:
        files, info = [Path(bundled_model_path())], _BUNDLED[LocalChatModel]
    elif isinstance(backend, LocalEmbeddings) and backend._model_path is None and backend.backend == "onnx":
        from langchain_session_rag.models.onnx_encoder import bundled_onnx_model

        files = [bundled_onnx_model()]
        info = _BUNDLED[LocalEmbeddings]
    return {"parent_model": "", "families": [info["family"]], **info}, sum(p.stat().st_size for p in files)


def _tools_capable(chat: BaseChatModel) -> bool:
    return type(chat).bind_tools is not BaseChatModel.bind_tools


def _to_message(raw: Any) -> BaseMessage:
    """An Ollama chat message as a LangChain message."""
    try:
        role, content = raw["role"], raw.get("content") or ""
        if raw.get("images"):
            raise HTTPError(400, "this model is missing data required for image input")
        if role in {"system", "user"}:
            return SystemMessage(content) if role == "system" else HumanMessage(content)
        if role == "assistant":
            calls = [(c["function"]["name"], c["function"].get("arguments") or {}) for c in raw.get("tool_calls") or []]
            return AIMessage(content, tool_calls=[
                {"name": name, "args": json.loads(args) if isinstance(args, str) else args, "id": f"call_{n}"}
                for n, (name, args) in enumerate(calls)])  # fmt: skip
        if role == "tool":
            return ToolMessage(content, tool_call_id=str(raw.get("tool_call_id") or raw.get("tool_name") or "call"))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise HTTPError(400, f"invalid message: {raw!r}") from exc
    raise HTTPError(400, f"invalid role {role!r}")


def _prompt_tokens(messages: list[BaseMessage]) -> int:
    """A word count, for a chat model that reports no usage (``LocalChatModel`` reports llama.cpp's own counts)."""
    return sum(len(m.text.split()) for m in messages)


_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


@functools.lru_cache(maxsize=4)
def gguf_metadata(path: str) -> dict[str, Any]:
    """A GGUF file's key-value metadata (arrays, such as the vocabulary, left out), read from its header once."""
    with Path(path).open("rb") as file:

        def read(fmt: str) -> Any:
            return struct.unpack("<" + fmt, file.read(struct.calcsize("<" + fmt)))[0]

        def value(kind: int) -> Any:
            if kind == 8:  # a string: length, then UTF-8
                return file.read(read("Q")).decode("utf-8", "replace")
            if kind == 9:  # an array: item type, count, items (read past, not kept)
                item, count = read("I"), read("Q")
                for _ in range(count if item in (8, 9) else 0):
                    value(item)
                file.seek(0 if item in (8, 9) else count * struct.calcsize(_GGUF_SCALARS[item]), 1)
                return None
            return read(_GGUF_SCALARS[kind])

        if file.read(4) != b"GGUF":
            return {}
        read("I"), read("Q")  # version, tensor count
        found = {value(8): value(read("I")) for _ in range(read("Q"))}  # key, value type, value
    return {k: v for k, v in found.items() if v is not None}


class OllamaLoopback:
    """Ollama's REST API on a loopback port, answered in process; ``requests`` counts the calls per path.

    ``models`` maps Ollama model names (``NAME`` means ``NAME:latest``) to an ``Embeddings`` or a chat model,
    :func:`default_models` by default. The server's chat generations run one at a time, as Ollama queues them;
    a ``LocalChatModel`` used directly in the same process shares the loaded model, whose llama.cpp server queues
    the requests of both.
    """

    def __init__(self, models: Mapping[str, Backend] | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.models = {
            n if ":" in n else f"{n}:latest": m for n, m in (default_models() if models is None else models).items()
        }
        self.requests: Counter[str] = Counter()
        self._count_lock, self._chat_lock = threading.Lock(), threading.Lock()
        self.httpd = _Server((host, port), self)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self.routes: dict[tuple[str, str], Callable[[dict[str, Any]], Reply]] = {
            ("GET", "/"): lambda _: "Ollama is running",
            ("GET", "/api/version"): lambda _: {"version": "0.12.0-loopback"},
            ("GET", "/api/tags"): self.tags,
            ("POST", "/api/show"): self.show,
            ("POST", "/api/embed"): self.embed,
            ("POST", "/api/embeddings"): self.embeddings,
            ("POST", "/api/chat"): self.chat,
        }

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, name="ollama-loopback", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def count(self, path: str) -> None:
        with self._count_lock:
            self.requests[path] += 1

    def backend(self, req: dict[str, Any], kind: type) -> tuple[str, Any]:
        """The requested model's name as given and its backing model, which must be a ``kind``."""
        name = req.get("model") or req.get("name")
        if not isinstance(name, str):
            raise HTTPError(400, "model is required")
        backend = self.models.get(name if ":" in name else f"{name}:latest")
        if backend is None:
            raise HTTPError(404, f'model "{name}" not found, try pulling it first')
        if not isinstance(backend, kind):
            raise HTTPError(400, f'"{name}" does not support {"chat" if kind is BaseChatModel else "embeddings"}')
        return name, backend

    def tags(self, _: dict[str, Any]) -> dict[str, Any]:
        listed = [(name, *_details(backend)) for name, backend in self.models.items()]
        return {"models": [{"name": name, "model": name, "modified_at": _STARTED, "size": size, "details": details,
                            "digest": hashlib.sha256(f"{name}:{size}".encode()).hexdigest()}
                           for name, details, size in listed]}  # fmt: skip

    def show(self, req: dict[str, Any]) -> dict[str, Any]:
        name, backend = cast("tuple[str, Backend]", self.backend(req, object))
        details = _details(backend)[0]
        family = details["family"]
        if isinstance(backend, BaseChatModel):  # the GGUF file's metadata, when the model is a LocalChatModel
            path = backend.model_path or bundled_model_path() if isinstance(backend, LocalChatModel) else None
            meta = gguf_metadata(path) if path else {}
            info = {k: v for k, v in meta.items() if not k.startswith("tokenizer.")} or {"general.architecture": family}
            capabilities = ["completion", "tools"] if _tools_capable(backend) else ["completion"]
            template = meta.get("tokenizer.chat_template", "")
            parameters = "\n".join(f"{f} {getattr(backend, f)}" for f in ("max_tokens", "temperature", "n_ctx")
                                   if hasattr(backend, f))  # fmt: skip
        else:
            info = {"general.architecture": family, f"{family}.embedding_length": len(backend.embed_query("probe")),
                    f"{family}.context_length": getattr(backend, "max_tokens", None)}  # fmt: skip
            capabilities, template, parameters = ["embedding"], "", ""
        return {"modelfile": f"# {name}: {type(backend).__name__}, served by tests/ollama_server.py\n", "license": "",
                "parameters": parameters, "template": template, "details": details, "model_info": info,
                "capabilities": capabilities, "modified_at": _STARTED}  # fmt: skip

    def _embed(self, req: dict[str, Any], texts: list[str]) -> tuple[str, list[list[float]], int, int]:
        """Name, vectors, tokens read (after truncation) and nanoseconds spent loading the model."""
        name, backend = self.backend(req, Embeddings)
        start = time.perf_counter_ns()
        counting = isinstance(backend, LocalEmbeddings)
        counts = backend.count_tokens(texts) if counting and texts else [len(t.split()) for t in texts]  # loads once
        load = time.perf_counter_ns() - start
        limit = backend.max_tokens if counting else None
        if req.get("truncate") is False and limit and max(counts, default=0) > limit:
            raise HTTPError(400, "input exceeds maximum context length")
        vectors = backend.embed_documents(texts) if texts else []
        dims = req.get("dimensions")
        if dims is not None:  # Matryoshka-style: the first dims components, normalised again
            if not isinstance(dims, int) or dims < 1 or any(dims > len(v) for v in vectors):
                raise HTTPError(400, f"invalid dimensions: {dims!r}")
            vectors = [[x / (math.hypot(*v[:dims]) or 1.0) for x in v[:dims]] for v in vectors]
        return name, vectors, sum(min(c, limit or c) for c in counts), load

    def embed(self, req: dict[str, Any]) -> dict[str, Any]:
        raw, start = req.get("input", ""), time.perf_counter_ns()
        texts = ([raw] if raw else []) if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise HTTPError(400, "invalid input type")
        name, vectors, tokens, load = self._embed(req, texts)
        return {"model": name, "embeddings": vectors, "total_duration": time.perf_counter_ns() - start,
                "load_duration": load, "prompt_eval_count": tokens}  # fmt: skip

    def embeddings(self, req: dict[str, Any]) -> dict[str, Any]:
        prompt = req.get("prompt") or ""
        if not isinstance(prompt, str):
            raise HTTPError(400, "invalid prompt")
        vectors = self._embed(req, [prompt] if prompt else [])[1]
        return {"embedding": vectors[0] if vectors else []}

    def chat(self, req: dict[str, Any]) -> dict[str, Any] | Iterator[dict[str, Any]]:
        name, chat = self.backend(req, BaseChatModel)
        raw, tools, options = req.get("messages") or [], req.get("tools") or [], req.get("options") or {}
        if not isinstance(raw, list) or not isinstance(tools, list) or not isinstance(options, dict):
            raise HTTPError(400, "messages and tools must be lists, options an object")
        if req.get("think"):
            raise HTTPError(400, f'"{name}" does not support thinking')
        if req.get("format"):
            raise HTTPError(501, "format (structured output) is not supported by this test server")
        if tools and not _tools_capable(chat):
            raise HTTPError(400, f'"{name}" does not support tools')
        messages, stream = [_to_message(m) for m in raw], req.get("stream", True)
        if not messages:  # Ollama loads the model and says so
            load = {"model": name, "created_at": _now(), "message": {"role": "assistant", "content": ""},
                    "done_reason": "load", "done": True}  # fmt: skip
            return iter([load]) if stream else load
        parts = self._generate(name, chat, messages, tools, options)
        if stream:
            return parts
        *pieces, final = list(parts)
        calls = [c for p in pieces for c in p["message"].get("tool_calls", [])]
        text = "".join(p["message"]["content"] for p in pieces)
        return {**final, "message": {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}}

    def _generate(
        self, name: str, chat: BaseChatModel, messages: list[BaseMessage], tools: list[Any], options: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """NDJSON parts: one per streamed token (a tool call comes whole, as llama.cpp constrains it), then the totals."""
        cap = options.get("num_predict")
        wanted = {
            "max_tokens": cap if isinstance(cap, int) and cap > 0 else None,
            "temperature": options.get("temperature"),
        }
        chat = chat.model_copy(
            update={k: v for k, v in wanted.items() if v is not None and k in type(chat).model_fields}
        )
        stop, start = list(options.get("stop") or []) or None, time.perf_counter_ns()
        pieces, first, usage = 0, 0, None
        with self._chat_lock:
            getattr(chat, "_llm", None)  # llama.cpp loads once per process
            loaded = time.perf_counter_ns()
            for part in (
                [chat.bind_tools(tools).invoke(messages, stop=stop)] if tools else chat.stream(messages, stop=stop)
            ):
                first, usage = first or time.perf_counter_ns(), getattr(part, "usage_metadata", None) or usage
                calls = [
                    {"function": {"name": c["name"], "arguments": c["args"]}} for c in getattr(part, "tool_calls", [])
                ]
                if part.text or calls:
                    pieces += 1
                    message = {"role": "assistant", "content": part.text, **({"tool_calls": calls} if calls else {})}
                    yield {"model": name, "created_at": _now(), "message": message, "done": False}
            prompt_count = usage["input_tokens"] if usage else _prompt_tokens(messages)
        end, first = time.perf_counter_ns(), first or time.perf_counter_ns()
        count, cap = usage["output_tokens"] if usage else pieces, getattr(chat, "max_tokens", None)
        yield {"model": name, "created_at": _now(), "message": {"role": "assistant", "content": ""}, "done": True,
               "done_reason": "length" if cap and count >= cap else "stop", "total_duration": end - start,
               "load_duration": loaded - start, "prompt_eval_count": prompt_count, "prompt_eval_duration": first - loaded,
               "eval_count": count, "eval_duration": end - first}  # fmt: skip


class _Server(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], app: OllamaLoopback) -> None:
        super().__init__(address, _Handler)
        self.app = app

    def handle_error(self, request: Any, client_address: Any) -> None:
        _LOG.debug("request from %s failed", client_address, exc_info=True)  # a client gone mid-answer; no stderr


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; streams are chunked, as Ollama's are
    server_version = "ollama-loopback"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        _LOG.debug(format, *args)

    def _route(self) -> None:
        app = cast("_Server", self.server).app
        path = self.path.split("?", 1)[0]
        app.count(path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = app.routes.get(("GET" if self.command == "HEAD" else self.command, path))
        if route is None:
            self._send(404, b"404 page not found", "text/plain")
            return
        reply: Reply | None = None
        try:
            req = json.loads(body) if self.command == "POST" else {}
            if not isinstance(req, dict):
                raise HTTPError(400, "the request body must be a JSON object")  # noqa: TRY301
            reply = route(req)
            first = next(reply) if isinstance(reply, Iterator) else None  # errors before the first part get a status
        except json.JSONDecodeError as exc:
            self._send_json(400, {"error": f"invalid JSON: {exc}" if body else "missing request body"})
        except HTTPError as exc:
            self._send_json(exc.status, {"error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - a model's error is the client's answer, as with Ollama
            self._send_json(400 if isinstance(exc, ValueError) else 500, {"error": f"{type(exc).__name__}: {exc}"})
        else:
            if isinstance(reply, Iterator):
                self._stream(itertools.chain([first], reply))
            elif isinstance(reply, str):
                self._send(200, reply.encode(), "text/plain; charset=utf-8")
            else:
                self._send_json(200, reply)
        finally:
            close = getattr(reply, "close", None)
            if close is not None:
                close()  # a generator still holding the chat lock lets it go

    do_GET = do_HEAD = do_POST = _route  # noqa: N815

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body).encode(), "application/json; charset=utf-8")

    def _stream(self, parts: Iterator[Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for part in parts:
                self._chunk(json.dumps(part).encode() + b"\n")
        except OSError:  # the client went away
            self.close_connection = True
            return
        except Exception as exc:  # noqa: BLE001 - mid-stream, Ollama sends the error as a line
            self._chunk(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


@contextlib.contextmanager
def serve_ollama(models: Mapping[str, Backend] | None = None) -> Iterator[str]:
    """Serve ``models`` (default :func:`default_models`) on a free loopback port; yields the base URL."""
    with OllamaLoopback(models) as server:
        yield server.url


@pytest.fixture(scope="session")
def ollama_loopback() -> Iterator[OllamaLoopback]:
    """The default models behind Ollama's API for the test session (``.url``, ``.requests``)."""
    with OllamaLoopback() as server:
        yield server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Ollama's REST API on this machine, answered by the local models.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(message)s")
    with OllamaLoopback(host=args.host, port=args.port) as loopback:
        print(f"Ollama API at {loopback.url} serving {', '.join(loopback.models)}; Ctrl-C stops it")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
