"""Issue 26, finding 12 (two of its low items), as the attacks: a Chroma server address where no Chroma server
answers (nothing listening, a socket that hangs up, a socket that never answers) gives one typed error naming the
address and the fix, within a bounded time; an export of bob's memories is not imported as alice's unless asked.
Loopback sockets only; real embedded Chroma and embeddings."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.cli.app import main
from langchain_session_rag.errors import IdentityConflictError, StoreUnavailableError


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def hangs_up() -> Iterator[int]:
    """A loopback port whose listener accepts each connection and closes it at once (no HTTP answer)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (a close alone leaves it waiting)
    server.close()
    thread.join(timeout=10)
    assert not thread.is_alive()


@pytest.fixture
def silent() -> Iterator[int]:
    """A loopback port that completes the TCP handshake (the kernel's backlog) and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield int(server.getsockname()[1])
    server.close()


def connect(port: int, **kwargs: Any) -> BaseException | None:
    """Open a server memory in a thread (so an unbounded hang fails the test instead of stalling it)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            SessionVectorMemory.server("127.0.0.1", port, user_id="alice", **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)  # a guard against a hang, not a timing assertion: the bound is connect_timeout
    assert outcome, f"SessionVectorMemory.server to 127.0.0.1:{port} still waits: no bounded connect time"
    return outcome[0]


@pytest.mark.parametrize("where", ["nothing_listens", "hangs_up", "silent"])
def test_an_address_without_a_chroma_server_is_one_typed_error_naming_it(
    where: str, request: pytest.FixtureRequest
) -> None:
    port = free_port() if where == "nothing_listens" else int(request.getfixturevalue(where))
    error = connect(port, connect_timeout=0.5)
    assert isinstance(error, StoreUnavailableError), repr(error)
    assert f"127.0.0.1:{port}" in str(error)
    assert "chroma run" in str(error)


def test_the_cli_prints_the_sentence_not_a_class_name(hangs_up: int, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "--server", f"127.0.0.1:{hangs_up}", "--user", "alice", "anything"])
    printed = capsys.readouterr().err
    assert code == 1
    assert f"No Chroma server answers at 127.0.0.1:{hangs_up}" in printed
    assert "chroma run" in printed


# -- an export of another user -----------------------------------------------------------------------
@pytest.fixture
def bobs_export(tmp_path: Path, real_embeddings: Any) -> Path:
    bob = SessionVectorMemory.local(path=tmp_path / "bobs", user_id="bob", embeddings=real_embeddings)
    bob.add_messages(
        [{"role": "user", "content": "My bank PIN is 4711."}, {"role": "assistant", "content": "Noted."}],
        session_id="s1",
    )
    file = tmp_path / "bob.jsonl"
    assert bob.export_jsonl(file) == 1
    return file


def test_an_export_of_bob_is_refused_for_alice_unless_reassigned(
    bobs_export: Path, tmp_path: Path, real_embeddings: Any
) -> None:
    alice = SessionVectorMemory.local(path=tmp_path / "alices", user_id="alice", embeddings=real_embeddings)
    with pytest.raises(IdentityConflictError, match=r"'bob'.*'alice'"):
        alice.import_jsonl(bobs_export)
    assert alice.count() == 0  # nothing imported
    assert alice.import_jsonl(bobs_export, reassign=True) == 1
    [doc] = alice.list_memories()
    assert doc.metadata["user_id"] == "alice"
    assert "4711" in doc.page_content


async def test_async_import_refuses_too(bobs_export: Path, tmp_path: Path, real_embeddings: Any) -> None:
    alice = SessionVectorMemory.local(path=tmp_path / "alices", user_id="alice", embeddings=real_embeddings)
    with pytest.raises(IdentityConflictError):
        await alice.aimport_jsonl(bobs_export)
    assert await alice.aimport_jsonl(bobs_export, reassign=True) == 1


def test_the_cli_import_refuses_another_users_export(
    bobs_export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ["--path", str(tmp_path / "cli-store"), "--user", "alice"]
    assert main(["import", str(bobs_export), *store]) == 1
    printed = capsys.readouterr().err
    assert "'bob'" in printed
    assert "'alice'" in printed
    assert "--reassign-user" in printed
    assert main(["import", str(bobs_export), "--reassign-user", *store]) == 0
    assert "Imported 1 new chunk(s)" in capsys.readouterr().out
