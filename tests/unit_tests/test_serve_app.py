"""``session-rag serve``'s app in process (FastAPI's TestClient, fake embeddings, an embedded store): the attacks
a reviewer found, each answered before any model call or write, with nothing stored lost or changed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection
from click.testing import CliRunner
from fastapi.testclient import TestClient
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.serve import served_hosts
from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.server import Authenticator, create_app
from langchain_session_rag.server.chat_models import choose_chat_model
from langchain_session_rag.server.settings import SETTINGS_ENV, ServeSettings
from langchain_session_rag.server.worker import build_app
from langchain_session_rag.stores import adapter
from tests.integration_tests.serve_support import ECHO

pytest.importorskip("fastapi")

HEADER = "X-Forwarded-User"
ALICE = {HEADER: "alice"}


class CountingModel(BaseChatModel):
    """Answers ``ok`` and counts its calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del messages, stop, run_manager, kwargs
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])


@pytest.fixture
def model() -> CountingModel:
    return CountingModel()


@pytest.fixture
def memory(tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "store", user_id="server", embeddings=fake_embeddings)


@pytest.fixture
def http(memory: SessionVectorMemory, model: CountingModel) -> TestClient:
    app = create_app(memory, model, auth=Authenticator(trusted_header=HEADER), min_similarity=None)
    return TestClient(app, raise_server_exceptions=False)


def chat(http: TestClient, text: str, **extra: Any) -> Any:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    return http.post("/v1/chat/completions", json=body, headers=ALICE)


def state(http: TestClient) -> tuple[Any, Any]:
    """Alice's sessions and core memory, to show that a refused request changed nothing."""
    return http.get("/v1/memory/sessions", headers=ALICE).json(), http.get("/v1/memory/core", headers=ALICE).json()


def test_forget_all_with_another_criterion_is_refused_and_nothing_changes(http: TestClient) -> None:
    assert chat(http, "My locker is number 41.").status_code == 200
    assert http.put("/v1/memory/core/memory", json={"text": "Alice likes tea."}, headers=ALICE).status_code == 200
    before = state(http)
    assert before[0]["data"]
    for asked in ({"session_id": "does-not-exist", "all": True}, {"all": True, "ids": []}, {"all": True, "before": "2000-01-01T00:00:00"}):  # fmt: skip
        reply = http.post("/v1/memory/forget", json=asked, headers=ALICE)
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"]["type"] == "invalid_request_error"
        assert "cannot be combined" in reply.json()["error"]["message"]
    assert state(http) == before
    assert "Alice likes tea." in str(before[1])


@pytest.mark.parametrize("error", [ConnectionError, httpx.ConnectError])
def test_a_store_that_does_not_answer_is_a_503_everywhere(
    http: TestClient, monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """As a Chroma server that went down: its calls fail (chromadb's ConnectionError or httpx's, unwrapped when a
    companion store such as core memory is opened for the first time in this worker)."""

    def down(*_args: object, **_kwargs: object) -> None:
        msg = "Could not connect to a Chroma server. Are you sure it is running? [Errno 111] Connection refused"
        raise error(msg)

    for name in ("query", "get", "upsert", "add", "delete", "count", "update"):
        monkeypatch.setattr(Collection, name, down)
    for name in ("get_or_create_collection", "get_collection", "create_collection"):
        monkeypatch.setattr(Client, name, down)
    replies = {
        "chat": chat(http, "Which locker is mine?"),
        "chat streamed": chat(http, "Which locker is mine, again?", stream=True),
        "search": http.get("/v1/memory/search", params={"q": "locker"}, headers=ALICE),
        "sessions": http.get("/v1/memory/sessions", headers=ALICE),
        "forget": http.post("/v1/memory/forget", json={"session_id": "s1"}, headers=ALICE),
        "export": http.get("/v1/memory/export", headers=ALICE),
        "chat of a new user": http.post(
            CHAT, json={"model": "m", "messages": [{"role": "user", "content": "Hi"}]}, headers={HEADER: "bob"}
        ),
    }
    for what, reply in replies.items():
        assert reply.status_code == 503, (what, reply.text)
        error = reply.json()["error"]
        assert (error["type"], error["code"]) == ("service_unavailable", "store_unavailable"), what
        assert reply.headers["retry-after"] == "1"


CHAT = "/v1/chat/completions"
SURROGATES = [
    (CHAT, {"model": "m", "messages": [{"role": "user", "content": "hi \ud800 there"}]}, "messages[0].content"),
    (
        CHAT,
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a\udc00"}]}]},
        "messages[0].content[0].text",
    ),
    ("/v1/memory/core/memory", {"text": "\ud800x"}, "text"),
]


@pytest.mark.parametrize(("path", "body", "param"), SURROGATES)
def test_lone_surrogates_are_a_422_naming_the_field_before_any_model_call_or_write(
    http: TestClient, model: CountingModel, path: str, body: dict[str, Any], param: str
) -> None:
    method = "POST" if path == CHAT else "PUT"
    before = state(http)
    content = json.dumps(body)  # as clients send them: escaped, "\ud800" in the JSON text
    headers = {**ALICE, "Content-Type": "application/json"}
    reply = http.request(method, path, content=content, headers=headers)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert "not valid Unicode" in error["message"]
    assert model.calls == 0
    assert state(http) == before


@pytest.mark.parametrize("text", ["", " \n", "\u200b", "\u2060\u00ad", " \ufeff "])
def test_a_question_that_draws_nothing_is_a_422_before_any_model_call_or_write(
    http: TestClient, model: CountingModel, text: str
) -> None:
    before = state(http)
    reply = chat(http, text)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert (error["param"], error["code"]) == ("messages[0].content", "invalid_messages")
    assert "empty" in error["message"]
    assert model.calls == 0
    assert state(http) == before


def test_a_client_system_message_too_large_for_the_window_is_a_400_before_any_model_call(
    http: TestClient, model: CountingModel
) -> None:
    huge = "Always answer in the voice of a pirate. " * 8_000  # about 64k tokens: over the 8,192-token window
    for stream in (False, True):
        body = {
            "model": "m",
            "stream": stream,
            "messages": [{"role": "system", "content": huge}, {"role": "user", "content": "Hello?"}],
        }
        reply = http.post("/v1/chat/completions", json=body, headers=ALICE)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["code"] == "context_length_exceeded"
        assert "system message" in reply.json()["error"]["message"]
    assert model.calls == 0
    assert state(http)[0]["data"] == []
    small = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}
    assert http.post("/v1/chat/completions", json=small, headers=ALICE).status_code == 200


def test_a_repeated_credential_header_is_a_401(http: TestClient, model: CountingModel) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Whose memory is this?"}]}
    twice = [(HEADER, "mallory"), (HEADER, "alice")]
    for path in ("/v1/chat/completions", "/v1/memory/forget"):
        reply = http.post(path, json=body if "chat" in path else {"all": True}, headers=twice)
        assert reply.status_code == 401, reply.text
        assert "sent 2 times" in reply.json()["error"]["message"]
    assert model.calls == 0


def test_a_repeated_bearer_token_is_a_401(memory: SessionVectorMemory, model: CountingModel) -> None:
    auth = Authenticator(tokens={b"x" * 32: "alice"})
    http = TestClient(create_app(memory, model, auth=auth), raise_server_exceptions=False)
    reply = http.get("/v1/models", headers=[("Authorization", "Bearer a" * 20), ("authorization", "Bearer b" * 20)])
    assert reply.status_code == 401
    assert "sent 2 times" in reply.json()["error"]["message"]


@pytest.mark.parametrize(
    ("served", "why"),
    [(None, "no Ollama server answered"), ([], "has no model")],
)
def test_auto_says_why_it_does_not_use_ollama(
    monkeypatch: pytest.MonkeyPatch, served: list[str] | None, why: str
) -> None:
    from langchain_session_rag.models import local_llm

    monkeypatch.setattr(local_llm, "ollama_models", lambda *_a, **_k: served)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    chosen = choose_chat_model(ServeSettings(trusted_user_header=HEADER, chat_model="auto"))
    assert chosen.description.startswith("SmolLM2")
    assert chosen.note is not None
    assert "OLLAMA_HOST=http://127.0.0.1:9" in chosen.note
    assert why in chosen.note


@pytest.mark.parametrize(
    "args",
    [
        ("--server", "127.0.0.1:9", "--workers", "2", "--context-window", "300"),
        ("--server", "127.0.0.1:9", "--workers", "2", "--chat-model", "local", "--max-tokens", "1500"),
        ("--chat-model", "ollama:llama3.2", "--max-tokens", "3000"),
    ],
)
def test_max_tokens_over_half_a_known_window_is_refused_before_any_worker(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = CliRunner().invoke(cli, ["serve", "--trusted-user-header", HEADER, "--path", str(tmp_path / "s"), *args])
    assert done.exit_code == 2, done.output
    assert "--max-tokens" in done.output
    assert "at most" in done.output
    assert not (tmp_path / "s").exists()


def test_relations_are_the_users_own_with_markers_and_validity(http: TestClient) -> None:
    assert chat(http, "Our analytics service switched from PostgreSQL to ClickHouse last week.").status_code == 200
    found = http.get("/v1/memory/relations", params={"entity": "analytics service"}, headers=ALICE)
    assert found.status_code == 200, found.text
    rels = {(r["predicate"], r["object_name"]): r for r in found.json()["data"]}
    now, before = rels[("uses", "ClickHouse")], rels[("uses", "PostgreSQL")]
    assert now["current"]
    assert now["valid_to"] is None
    assert not before["current"]
    assert before["replaced_by"] == "ClickHouse"
    assert before["valid_to"] is not None
    assert now["line"].startswith("analytics service — uses → ClickHouse [S: ")
    assert now["sources"][0]["marker"].startswith("[S: ")
    linked = http.get("/v1/memory/relations", params={"entity": "ClickHouse", "to": "PostgreSQL"}, headers=ALICE)
    assert linked.json()["data"][0]["object"] == "memory.path"
    two = http.get(
        "/v1/memory/relations", params={"entity": "ClickHouse", "to": "PostgreSQL", "hops": 1}, headers=ALICE
    )
    assert two.json()["data"] == []  # linked through the analytics service only: two relations
    past = http.get(
        "/v1/memory/relations", params={"entity": "analytics service", "as_of": "2000-01-01"}, headers=ALICE
    )
    assert [r["object_name"] for r in past.json()["data"]] == ["PostgreSQL"]  # held then (since an unknown time)
    bob = http.get("/v1/memory/relations", params={"entity": "analytics service"}, headers={HEADER: "bob"})
    assert bob.status_code == 200
    assert bob.json()["data"] == []  # another user: nothing, not even that the entity exists
    for params in (
        {"entity": "analytics service", "as_of": "last tuesday"},
        {"entity": " "},
        {"entity": "x", "hops": 3},
    ):
        refused = http.get("/v1/memory/relations", params=params, headers=ALICE)
        assert refused.status_code == 422, (params, refused.text)
    assert http.get("/v1/memory/relations", params={"entity": "analytics service"}).status_code == 401


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/memory/forget"])
def test_json_nested_thousands_deep_is_a_422_not_a_500(http: TestClient, model: CountingModel, route: str) -> None:
    before = state(http)
    for depth in (5_000, 100_000):
        body = b'{"model": "m", "messages": ' + b"[" * depth + b"]" * depth + b"}"
        reply = http.post(route, content=body, headers={**ALICE, "Content-Type": "application/json"})
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"]["code"] == "invalid_json"
        assert "nested" in reply.json()["error"]["message"]
    assert model.calls == 0
    assert state(http) == before


def test_behind_a_proxy_on_any_loopback_address_only_loopback_names_are_answered(
    memory: SessionVectorMemory, model: CountingModel
) -> None:
    """``--host 127.0.0.2 --trusted-user-header``: a DNS-rebinding page (Host: evil.example) is refused too."""
    for host in ("127.0.0.2", "127.1.2.3", "localhost", "::1"):
        hosts = served_hosts(host, HEADER, ())
        app = create_app(memory, model, auth=Authenticator(trusted_header=HEADER), allowed_hosts=hosts)
        http = TestClient(app, raise_server_exceptions=False)
        evil = http.get("/v1/memory/sessions", headers={**ALICE, "Host": "evil.example"})
        assert evil.status_code == 403, (host, evil.text)
        assert evil.json()["error"]["code"] == "host_not_allowed"
        name = f"[{host}]" if ":" in host else host
        assert http.get("/v1/memory/sessions", headers={**ALICE, "Host": f"{name}:8080"}).status_code == 200
    assert served_hosts("0.0.0.0", HEADER, ()) == ()  # noqa: S104 - listening everywhere: any name (and a warning)
    assert served_hosts("127.0.0.2", None, ()) == ()  # bearer tokens: a rebinding page has none


async def test_an_abandoned_body_is_one_log_line_not_a_traceback(
    http: TestClient, model: CountingModel, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that goes away mid-body (ClientDisconnect): one short log line, no traceback, nothing stored."""
    before = state(http)
    for route in ("/v1/chat/completions", "/v1/memory/forget", "/v1/memory/core/memory", "/ui/core/now"):
        messages = [{"type": "http.request", "body": b'{"model": "m", "mess', "more_body": True}]
        kind = b"application/x-www-form-urlencoded" if route.startswith("/ui") else b"application/json"

        async def receive(messages: list[dict[str, Any]] = messages) -> dict[str, Any]:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            del message

        headers = [(b"x-forwarded-user", b"alice"), (b"content-type", kind), (b"host", b"testserver")]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "PUT" if route.startswith("/v1/memory/core") else "POST",
            "scheme": "http",
            "path": route,
            "raw_path": route.encode(),
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8080),
            "root_path": "",
        }
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            await http.app(scope, receive, send)  # type: ignore[arg-type]
        lines = [r for r in caplog.records if r.levelno >= logging.INFO]
        assert len(lines) == 1, [r.getMessage() for r in caplog.records]
        assert lines[0].exc_info is None
        assert "went away" in lines[0].getMessage()
        assert len(lines[0].getMessage()) < 300  # one line, not a 4 KB traceback
    assert model.calls == 0
    assert state(http) == before


def test_store_timeout_reaches_the_chroma_client_of_serve_and_every_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--store-timeout`` (or ``SESSION_RAG_STORE_TIMEOUT``) is the server client's ``read_timeout``, in every worker.

    ``session-rag ui`` takes the same store options (it binds its port first, so it is not run here).
    """
    asked: list[float] = []

    def no_server(**kwargs: Any) -> None:
        asked.append(kwargs.get("read_timeout", adapter.READ_TIMEOUT))
        msg = "No Chroma server answers at 127.0.0.1:9"
        raise StoreUnavailableError(msg)

    monkeypatch.setattr(adapter, "open_chroma_client", no_server)
    runner = CliRunner()
    serve = ["serve", "--trusted-user-header", HEADER, "--server", "127.0.0.1:9"]
    for args, env in [
        ([*serve, "--store-timeout", "30"], {}),
        (serve, {"SESSION_RAG_STORE_TIMEOUT": "45.5"}),
        (["sessions", "--server", "127.0.0.1:9", "--store-timeout", "12"], {}),
        (["sessions", "--server", "127.0.0.1:9"], {}),
    ]:
        done = runner.invoke(cli, args, env=env)
        assert isinstance(done.exception, StoreUnavailableError), done.output
    settings = ServeSettings(trusted_user_header=HEADER, server=("127.0.0.1", 9), store_timeout=7.0, chat_model=ECHO)
    with pytest.raises(StoreUnavailableError):
        build_app(ServeSettings.model_validate_json(settings.to_env()[SETTINGS_ENV]))  # as a worker gets them
    assert asked == [30.0, 45.5, 12.0, adapter.READ_TIMEOUT, 7.0]
    with pytest.raises(ValueError, match="store_timeout"):
        ServeSettings(trusted_user_header=HEADER, store_timeout=float("inf"))
