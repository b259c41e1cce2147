"""The LangGraph server recipe (examples/langgraph), end to end: ``langgraph dev`` driven by the LangGraph SDK.

The server is the real one (``langgraph dev``, in-memory runtime) on a free loopback port, started with the very
``langgraph.json`` the docs page shows, offline, in its own process group, and stopped by its PID. Three users
hold tokens: alice, bob and the admin. Every cross-user attempt is made as the attack it is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.integration_tests.conftest import _free_port
from tests.integration_tests.serve_support import stop_group

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path("examples/langgraph/langgraph.json")
"""The recipe, relative to the repository root (where the page says to run ``langgraph dev``)."""
DOCS = REPO / "docs" / "deploy-langgraph.md"
GRAPH = "session_rag"
TOKENS = {
    "alice": "alice-token-7c1e94f0a2b3",
    "bob": "bob-token-55d0e6a1c9f47",
    "admin": "admin-token-0b9a3e72d61c",
}
COMMAND = ["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--config", str(CONFIG)]


def start_langgraph(folder: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``langgraph dev`` with the recipe on a free loopback port (own process group); wait until it answers."""
    # The server runs in a folder of its own (its in-memory runtime writes .langgraph_api/ there), which sees the
    # repository's examples/ at the same relative path as the repository root does.
    (folder / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    tokens = folder / "tokens.txt"
    write_tokens(tokens)
    port = _free_port()
    settings = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "PYTHONUNBUFFERED": "1",  # the log lines a test reads are in server.log when the response arrives
        "SESSION_RAG_LANGGRAPH_TOKENS": str(tokens),
        "SESSION_RAG_LANGGRAPH_ADMIN": "admin",
        "SESSION_RAG_LANGGRAPH_STORE": str(folder / "store"),
        **env,
    }
    settings.pop("LANGSMITH_API_KEY", None)
    log = (folder / "server.log").open("ab")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "langgraph"), *COMMAND, "--port", str(port)],
        cwd=folder,
        env=settings,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):  # bounded: at most about 2 minutes of 0.2 s polls
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1):
                return proc, url
        except OSError:  # noqa: PERF203 - polling until the server answers
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    stop_langgraph(proc)
    pytest.fail(f"langgraph dev did not start; see {folder / 'server.log'}")


def write_tokens(path: Path) -> None:
    """The users' token file, readable and writable by its owner only (as the docs page makes it)."""
    path.write_text("".join(f"{token} {user}\n" for user, token in TOKENS.items()), encoding="utf-8")
    path.chmod(0o600)


def stop_langgraph(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server's whole process group by its PID."""
    stop_group(proc)


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the echo server runs in: its tokens.txt and server.log."""
    return tmp_path_factory.mktemp("langgraph")


@pytest.fixture(scope="module")
def server(server_dir: Path) -> Iterator[str]:
    """The recipe served with the echo stand-in model (answers with what the memory recalled)."""
    proc, url = start_langgraph(server_dir, SESSION_RAG_LANGGRAPH_MODEL="echo")
    try:
        yield url
    finally:
        stop_langgraph(proc)


def client(url: str, user: str | None) -> SyncLangGraphClient:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"} if user else {}
    return get_sync_client(url=url, headers=headers)


def ask(c: SyncLangGraphClient, thread_id: str, text: str) -> str:
    out = c.runs.wait(thread_id, GRAPH, input={"messages": [{"role": "user", "content": text}]})
    assert isinstance(out, dict), out
    return str(out["messages"][-1]["content"])


def status(call: Any) -> int:
    """The HTTP status a refused SDK call got (the call must be refused)."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code


def test_the_docs_page_shows_the_recipe_the_tests_start() -> None:
    page = DOCS.read_text(encoding="utf-8")
    assert f"langgraph dev --config {CONFIG}" in page
    shown = re.search(r"```json\n(.*?)```", page, re.DOTALL)
    assert shown is not None, "the page shows langgraph.json"
    assert json.loads(shown.group(1)) == json.loads((REPO / CONFIG).read_text(encoding="utf-8"))
    for name in ["SESSION_RAG_LANGGRAPH_TOKENS", "SESSION_RAG_LANGGRAPH_ADMIN", "SESSION_RAG_LANGGRAPH_STORE"]:
        assert name in page
        assert name in (REPO / "examples" / "langgraph" / "graph.py").read_text(encoding="utf-8") + (
            REPO / "examples" / "langgraph" / "auth.py"
        ).read_text(encoding="utf-8")


def test_a_fact_is_recalled_in_a_new_thread_of_its_user_streamed_and_never_by_another_user(server: str) -> None:
    alice, bob = client(server, "alice"), client(server, "bob")
    first = alice.threads.create()
    assert first["metadata"]["owner"] == "alice"
    parts = list(
        alice.runs.stream(
            first["thread_id"],
            GRAPH,
            input={"messages": [{"role": "user", "content": "My locker code is 4471."}]},
            stream_mode=["messages", "values"],
        )
    )
    events = {p.event for p in parts}
    assert "error" not in events, [p.data for p in parts if p.event == "error"]
    assert {"messages/partial", "values"} <= events
    streamed = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    assert len(streamed) > 1  # the answer streamed, in several partial events
    assert streamed[-1].startswith("Recalled")
    final = [p.data for p in parts if p.event == "values"][-1]
    assert final["messages"][-1]["content"] == streamed[-1]

    # A new thread of alice: no history, so the fact can come only from her long-term memory.
    answer = ask(alice, alice.threads.create()["thread_id"], "What is my locker code?")
    assert "4471" in answer
    # Bob asks the same in his own thread: none of alice's memories reach his prompt.
    assert "4471" not in ask(bob, bob.threads.create()["thread_id"], "What is my locker code?")
    # The session of a run without context is its thread (a new thread, a new session).
    assert alice.runs.list(first["thread_id"])[0]["kwargs"]["context"]["session_id"] == first["thread_id"]


def test_a_user_reads_and_writes_their_own_namespace(server: str) -> None:
    alice = client(server, "alice")
    alice.store.put_item(["memories", "alice", "prefs"], "drink", {"content": "Alice drinks green tea."})
    item = alice.store.get_item(["memories", "alice", "prefs"], "drink")
    assert item["value"] == {"content": "Alice drinks green tea."}
    found = alice.store.search_items(["memories", "alice"], query="what does alice drink?", limit=3)["items"]
    assert [i["key"] for i in found][:1] == ["drink"]
    # A search above the users is narrowed to the caller's own namespaces.
    assert {tuple(i["namespace"][:2]) for i in alice.store.search_items(["memories"], limit=50)["items"]} == {
        ("memories", "alice")
    }
    alice.store.delete_item(["memories", "alice", "prefs"], "drink")
    assert alice.store.get_item(["memories", "alice", "prefs"], "drink") is None


def test_every_cross_user_attempt_is_refused_and_changes_nothing(server: str) -> None:
    alice, bob = client(server, "alice"), client(server, "bob")
    thread = alice.threads.create()["thread_id"]
    ask(alice, thread, "My bank is Banco Azul.")
    alice.store.put_item(["memories", "alice"], "secret", {"content": "Alice's PIN is 9071."})
    before = alice.store.search_items(["memories", "alice"], limit=100)["items"]

    # Another user's thread and its runs do not exist for bob.
    assert status(lambda: bob.threads.get(thread)) == 404
    assert status(lambda: bob.runs.list(thread)) == 404
    assert status(lambda: bob.threads.get_state(thread)) in {403, 404}
    assert status(lambda: ask(bob, thread, "What is my bank?")) == 404
    assert thread not in {t["thread_id"] for t in bob.threads.search(limit=100)}
    # Another user's namespace: every store operation refused.
    ns = ["memories", "alice"]
    assert status(lambda: bob.store.get_item(ns, "secret")) == 403
    assert status(lambda: bob.store.search_items(ns, query="PIN")) == 403
    assert status(lambda: bob.store.put_item(ns, "secret", {"content": "overwritten by bob"})) == 403
    assert status(lambda: bob.store.delete_item(ns, "secret")) == 403
    assert status(lambda: bob.store.list_namespaces(prefix=ns)) == 403
    assert status(lambda: bob.store.put_item(["shared"], "k", {"content": "x"})) == 403
    # A run that names alice, sent with bob's token, in any of the ways a client can name a user.
    own = bob.threads.create()["thread_id"]
    question = {"messages": [{"role": "user", "content": "What is my bank?"}]}
    for claim in [
        {"context": {"user_id": "alice"}},
        {"context": {"langgraph_user_id": "alice"}},
        {"config": {"configurable": {"user_id": "alice"}}},
        {"config": {"configurable": {"langgraph_user_id": "alice"}}},
    ]:
        assert status(lambda claim=claim: bob.runs.wait(own, GRAPH, input=question, **claim)) == 403, claim
    # Naming oneself is fine.
    assert "Banco Azul" not in str(bob.runs.wait(own, GRAPH, input=question, context={"user_id": "bob"}))
    # Nothing of alice's was read into bob's answers or changed.
    assert alice.store.get_item(ns, "secret")["value"] == {"content": "Alice's PIN is 9071."}
    assert alice.store.search_items(ns, limit=100)["items"] == before


def test_requests_without_a_valid_token_are_refused(server: str) -> None:
    for headers in [{}, {"Authorization": "Bearer not-a-token"}, {"Authorization": f"Basic {TOKENS['alice']}"}]:
        with httpx.Client(base_url=server, headers=headers, timeout=30) as http:
            assert http.post("/threads", json={}).status_code == 401
            assert http.post("/store/items/search", json={"namespace_prefix": ["memories"]}).status_code == 401
            assert http.post("/store/namespaces", json={"prefix": ["memories"]}).status_code == 401
            assert http.get("/store/items", params={"namespace": "memories.alice", "key": "k"}).status_code == 401


def test_the_admin_lists_every_user_and_a_user_lists_only_their_own(server: str) -> None:
    alice, bob, admin = client(server, "alice"), client(server, "bob"), client(server, "admin")
    alice.store.put_item(["memories", "alice", "trips"], "porto", {"content": "Alice visits Porto in May."})
    bob.store.put_item(["memories", "bob"], "pet", {"content": "Bob has a dog."})
    # The attack of issue 28: the admin view's listing was a 400 (the store refused a prefix without a user).
    users = admin.store.list_namespaces(prefix=["memories"], max_depth=2)["namespaces"]
    assert {("memories", "alice"), ("memories", "bob")} <= {tuple(n) for n in users}
    everything = {tuple(n) for n in admin.store.list_namespaces(prefix=["memories"])["namespaces"]}
    assert ("memories", "alice", "trips") in everything
    assert ("memories", "bob") in everything
    # A normal user asking the same gets their own namespaces only.
    for name, c in [("alice", alice), ("bob", bob)]:
        listed = {tuple(n) for n in c.store.list_namespaces(prefix=["memories"])["namespaces"]}
        assert listed
        assert all(n[:2] == ("memories", name) for n in listed), listed
        assert {tuple(n) for n in c.store.list_namespaces()["namespaces"]} == listed


UNUSABLE = "The server's token file is unusable; see the server log."
BROKEN_TOKEN_FILES = {
    "a line without a user": b"alice-token-7c1e94f0a2b3\n",
    "a user id with a dot (the store splits namespaces on dots)": b"alice-token-7c1e94f0a2b3 alice.smith\n",
    "the same token twice": b"alice-token-7c1e94f0a2b3 alice\nalice-token-7c1e94f0a2b3 mallory\n",
    "JSON": b'{"alice-token-7c1e94f0a2b3": "alice"}\n',
    "not UTF-8": b"alice-token-7c1e94f0a2b3 \xff\xfe\n",
    "empty": b"",
}


def test_a_broken_token_file_fails_closed_with_one_generic_sentence_and_one_log_line(
    server: str, server_dir: Path
) -> None:
    tokens, log = server_dir / "tokens.txt", server_dir / "server.log"
    start = log.stat().st_size
    attempts: dict[str, bytes | int | None] = {**BROKEN_TOKEN_FILES, "group-readable (mode 640)": 0o640}
    attempts["missing"] = None
    try:
        for name, broken in attempts.items():
            write_tokens(tokens)
            if broken is None:
                tokens.unlink()
            elif isinstance(broken, int):
                tokens.chmod(broken)
            else:
                tokens.write_bytes(broken)
            for user in ["alice", "admin"]:  # fails closed: nobody gets in, not even the admin
                with httpx.Client(base_url=server, headers={"Authorization": f"Bearer {TOKENS[user]}"}) as http:
                    answer = http.post("/threads", json={})
                assert answer.status_code == 503, (name, answer.text)
                assert answer.json() == {"detail": UNUSABLE}, name  # no path, no user name, no parser error
        write_tokens(tokens)
        assert client(server, "alice").threads.create()["metadata"]["owner"] == "alice"  # fixed: served again
    finally:
        write_tokens(tokens)
    with log.open("rb") as f:
        f.seek(start)
        logged = f.read().decode("utf-8", "replace")
    assert "Traceback" not in logged
    reasons = [line for line in logged.splitlines() if "until the token file is fixed" in line]
    assert len(reasons) == len(attempts), reasons  # one line per broken state, not one per request
    assert all(str(tokens) in line for line in reasons)  # the detail is in the log, with the file's path


def test_crons_and_assistants_naming_another_user_are_refused_at_creation(server: str) -> None:
    bob = client(server, "bob")
    question = {"messages": [{"role": "user", "content": "What is my bank?"}]}
    own = bob.threads.create()["thread_id"]
    for claim in [
        {"context": {"user_id": "alice"}},
        {"context": {"langgraph_user_id": "alice"}},
        {"config": {"configurable": {"user_id": "alice"}}},
        {"config": {"configurable": {"langgraph_user_id": "alice"}}},
    ]:
        cron = lambda claim=claim: bob.crons.create(GRAPH, schedule="0 0 1 1 *", input=question, **claim)  # noqa: E731
        assert status(cron) == 403, claim
        on_thread = lambda claim=claim: bob.crons.create_for_thread(  # noqa: E731
            own, GRAPH, schedule="0 0 1 1 *", input=question, **claim
        )
        assert status(on_thread) == 403, claim
        assert status(lambda claim=claim: bob.assistants.create(GRAPH, **claim)) == 403, claim
    assert bob.crons.search(limit=100) == []
    # Naming oneself is fine; an update cannot make it name another user.
    mine = bob.crons.create(GRAPH, schedule="0 0 1 1 *", input=question, context={"user_id": "bob"})
    bob.crons.delete(mine["cron_id"])
    assistant = bob.assistants.create(GRAPH, context={"user_id": "bob"})
    assert assistant["metadata"]["owner"] == "bob"
    assert status(lambda: bob.assistants.update(assistant["assistant_id"], context={"user_id": "alice"})) == 403
    assert (
        status(lambda: bob.assistants.update(assistant["assistant_id"], config={"configurable": {"user_id": "alice"}}))
        == 403
    )
    assert bob.assistants.get(assistant["assistant_id"])["context"] == {"user_id": "bob"}
    assert ask(bob, own, "Hello").startswith("Recalled")


def test_a_stateless_run_has_a_session_of_its_own(server: str) -> None:
    alice = client(server, "alice")
    question = {"messages": [{"role": "user", "content": "My tram stop is Bolhao."}]}
    out = alice.runs.wait(None, GRAPH, input=question)
    assert isinstance(out, dict), out
    assert "__error__" not in out, out
    assert out["messages"][-1]["content"].startswith("Recalled")
    sessions: set[str] = set()
    for _ in range(100):  # bounded: the exchange is written in the background, at most about 10 s of 0.1 s polls
        found = alice.store.search_items(["memories", "alice"], query="tram stop", limit=20)["items"]
        sessions = {str(i["value"].get("session_id")) for i in found if "Bolhao" in str(i["value"].get("content"))}
        if sessions:
            break
        time.sleep(0.1)
    assert len(sessions) == 1, sessions  # remembered, under a session of the run's own
    assert re.fullmatch(r"stateless-[0-9a-f-]{36}", next(iter(sessions))), sessions  # stateless-<run id>
    parts = list(alice.runs.stream(None, GRAPH, input=question, stream_mode="values"))
    assert "error" not in {p.event for p in parts}, [p.data for p in parts if p.event == "error"]
    assert status(lambda: alice.runs.wait(None, GRAPH, input=question, context={"user_id": "bob"})) == 403


def test_what_the_docs_page_says_of_copies_ttl_and_a_question_too_long(server: str) -> None:
    alice, bob = client(server, "alice"), client(server, "bob")
    thread = alice.threads.create()["thread_id"]
    ask(alice, thread, "My cat is called Miso.")
    # Copying another user's thread: 409 (the copy's id would collide with the source the caller cannot see).
    assert status(lambda: bob.threads.copy(thread)) == 409
    assert status(lambda: bob.threads.copy(str(uuid.uuid4()))) == 409  # as for a thread that does not exist
    assert thread not in {t["thread_id"] for t in bob.threads.search(limit=100)}
    # A ttl: a 400 naming the reason, and nothing stored.
    ns = ["memories", "alice", "ttl"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        alice.store.put_item(ns, "k", {"content": "Short-lived."}, ttl=1)
    assert refused.value.response.status_code == 400
    assert "ttl is not supported" in refused.value.response.text
    assert alice.store.get_item(ns, "k") is None
    # A question too long for the model's budget: runs.wait answers 200 with the error, a stream one error event;
    # nothing is checkpointed or streamed before it.
    huge = {"messages": [{"role": "user", "content": "tea " * 60_000}]}
    fresh = alice.threads.create()["thread_id"]
    out = alice.runs.wait(fresh, GRAPH, input=huge, raise_error=False)
    assert isinstance(out, dict), out
    assert out["__error__"]["error"] == "QuestionTooLongError", out
    with pytest.raises(Exception, match="QuestionTooLongError"):  # the SDK's default: raise_error=True
        alice.runs.wait(fresh, GRAPH, input=huge)
    parts = list(alice.runs.stream(fresh, GRAPH, input=huge, stream_mode=["messages", "values"]))
    assert [p.event for p in parts] == ["metadata", "error"], [p.event for p in parts]
    assert parts[-1].data["error"] == "QuestionTooLongError"
    assert not alice.threads.get_state(fresh)["values"]


def test_the_default_local_model_streams_and_with_a_master_key_only_langgraph_devs_run_records_hold_a_turn_in_clear(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The recipe's default chat model (SmolLM2 in process, offline) streams a turn through the server, here with
    SESSION_RAG_MASTER_KEY set (one server for both). The attack: scan every file the server wrote for a turn's words.
    """
    from langchain_session_rag.privacy import generate_master_key

    folder = tmp_path_factory.mktemp("langgraph-keyed")
    marker = "ZQXPASSPORT4411"
    proc, url = start_langgraph(folder, SESSION_RAG_MASTER_KEY=generate_master_key())
    try:
        alice = client(url, "alice")
        thread = alice.threads.create()["thread_id"]
        parts = list(
            alice.runs.stream(
                thread,
                GRAPH,
                input={"messages": [{"role": "user", "content": f"My passport number is {marker}."}]},
                stream_mode="messages-tuple",
            )
        )
        assert "error" not in {p.event for p in parts}, [p.data for p in parts if p.event == "error"]
        tokens = [p.data[0]["content"] for p in parts if p.event == "messages"]
        assert len(tokens) > 1, "the local model's answer streams token by token"
        answer = alice.threads.get_state(thread)["values"]["messages"][-1]
        assert answer["type"] == "ai"
        assert answer["content"].strip()
        assert answer["content"] == "".join(tokens)
        recall = alice.threads.create()["thread_id"]  # a new thread: the marker can only come from her memory
        ask(alice, recall, "Which passport number did I give you?")
        assert marker in str(alice.threads.get_state(recall)["values"]), "recalled, and the checkpoints open again"
    finally:
        stop_langgraph(proc)
    holding = sorted(
        str(f.relative_to(folder))
        for f in folder.rglob("*")
        if f.is_file() and "examples" not in f.relative_to(folder).parts and marker.encode() in f.read_bytes()
    )
    # langgraph dev's own records of threads and runs (their latest values and inputs): the documented rest.
    assert holding == [".langgraph_api/.langgraph_ops.pckl"]
    assert (folder / ".session-rag-langgraph.checkpoints.sqlite").is_file(), "the encrypted checkpointer was used"
