"""fork() after a memory was used (``gunicorn --preload``, ``multiprocessing`` with ``fork``): no hang, typed refusals.

A forked child has one thread: the writer's thread, the llama.cpp server's threads and embedded Chroma's threads
stay in the parent. The rule (``langchain_session_rag/_fork.py``): objects that hold an OS resource start afresh in
the child or refuse, typed; a child whose parent had an embedded store open refuses every embedded store. Each test
forks and bounds the wait, so a hang fails the test instead of the suite.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag.errors import StoreLockedError
from langchain_session_rag.memory.writes import WriteQueue
from langchain_session_rag.stores.base import Record

HANG = 60
"""Seconds after which a forked child counts as hung (it answers in well under a second)."""


def _report(send: Connection, work: Callable[[], str], stacks: str) -> None:
    with Path(stacks).open("w") as out:
        faulthandler.dump_traceback_later(HANG - 5, file=out)  # where a hung child waits, for the failure message
        try:
            send.send(work())
        except Exception as exc:  # noqa: BLE001 - the test reads the error's type and message
            send.send(f"{type(exc).__name__}: {exc}")
        finally:
            faulthandler.cancel_dump_traceback_later()


def run_forked(work: Callable[[], str]) -> str:
    """``work()`` in a child forked from this process: its answer (or ``"Error: message"``); fails on a hang."""
    receive, send = multiprocessing.Pipe(duplex=False)
    with tempfile.TemporaryDirectory() as folder:
        stacks = str(Path(folder) / "stacks.txt")
        child = multiprocessing.get_context("fork").Process(target=_report, args=(send, work, stacks))
        child.start()
        child.join(HANG)
        if child.is_alive():
            child.kill()
            child.join()
            pytest.fail(f"the forked child hung for {HANG} s; its threads then:\n{Path(stacks).read_text()[-6000:]}")
    assert child.exitcode == 0
    assert receive.poll(0), "the child answered nothing"
    return str(receive.recv())


class SlowBackend:
    """Just enough of a back end for the write queue: records what it stores."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, user_id: str, records: Sequence[Record]) -> None:
        self.added.extend(f"{user_id}/{r.id}" for r in records)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        del user_id, ids


def record(doc_id: str) -> Record:
    return Record(id=doc_id, text=doc_id, metadata={}, embedding=[0.0])


def test_a_forked_child_writes_through_the_write_queue_its_parent_started() -> None:
    backend = SlowBackend()
    queue = WriteQueue(backend)  # type: ignore[arg-type]
    queue.submit("alice", [record("parent")], []).result()  # the writer thread runs, in the parent only

    def child() -> str:
        queue.submit("alice", [record("child")], []).result()
        return f"pending={queue.pending} added={backend.added}"

    assert run_forked(child) == "pending=0 added=['alice/parent', 'alice/child']"
    queue.submit("alice", [record("parent2")], []).result()  # the parent's queue still works
    assert backend.added == ["alice/parent", "alice/parent2"]


@contextlib.contextmanager
def held_by_another_thread(lock: Any) -> Iterator[None]:
    """``lock`` held by another thread of this process for the block (as a fork could find it)."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        yield
    finally:
        release.set()
        holder.join()


def written_store(path: Path, text: str = "parent wrote this") -> Any:
    """A local memory at ``path`` holding one message, written through (fake embeddings)."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    memory.add_messages([{"role": "user", "content": text}], session_id="p")
    memory.core.append("memory", "- parent")
    memory.flush()
    return memory


def open_store(path: Path) -> str:
    """Open a local memory at ``path`` and count it."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    return str(
        SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)).count()
    )


def lock_of(kind: str, tmp_path: Path) -> tuple[Any, Callable[[], object]]:
    """A lock of the package, and a use of its owner that takes it."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache, SemanticLLMCache, _fork
    from langchain_session_rag.memory import core
    from langchain_session_rag.privacy.keyring import Keyring

    if kind == "module":
        lock = _fork.lock()
        return lock, lambda: lock.acquire(timeout=HANG)
    if kind == "core block":
        return core._lock_for("store", "alice", "memory"), lambda: core._lock_for("store", "alice", "memory").acquire()
    if kind == "keyring":
        ring = Keyring(tmp_path / "keys", b"k" * 32)
        return ring._lock, lambda: ring.current("alice")
    cache = SemanticCache.local(path=tmp_path / "cache", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    if kind == "cache":
        return cache._lock, lambda: cache.note_skipped("forked")
    if kind == "cache vectors":
        return cache._vectors._lock, lambda: cache._vectors.remember("q", [1.0])
    llm_cache = SemanticLLMCache(cache, config_key="user_id").for_user("alice")
    return llm_cache._lock, llm_cache._view


@pytest.mark.parametrize("kind", ["module", "core block", "keyring", "cache", "cache vectors", "llm cache"])
@pytest.mark.parametrize("holder", ["another thread", "the forking thread"])
def test_a_lock_held_at_the_fork_is_free_in_the_child(tmp_path: Path, kind: str, holder: str) -> None:
    lock, use = lock_of(kind, tmp_path)

    def child() -> str:
        use()
        return "used"

    with held_by_another_thread(lock) if holder == "another thread" else lock:
        assert run_forked(child) == "used"
    with lock:  # the parent's lock is its own again
        pass


def _in_memory(embeddings: Any) -> Any:
    import chromadb
    from chromadb.config import Settings

    from langchain_session_rag import SessionVectorMemory

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    return SessionVectorMemory(chroma_client=client, user_id="alice", embeddings=embeddings)


ATTEMPTS: dict[str, Callable[[Path, Any], object]] = {
    "the parent's memory: add": lambda tmp, memory: memory.add_messages(
        [{"role": "user", "content": "child"}], session_id="c"
    ),
    "the parent's memory: search": lambda tmp, memory: memory.invoke("parent"),
    "the parent's memory: count": lambda tmp, memory: memory.count(),
    "the parent's memory: core memory": lambda tmp, memory: memory.core.read("memory"),
    "the same folder again": lambda tmp, memory: open_store(tmp / "store"),
    "a copy made before the fork": lambda tmp, memory: open_store(tmp / "copy"),
    "the folder, moved after the fork": lambda tmp, memory: (
        (tmp / "store").rename(tmp / "moved"),
        open_store(tmp / "moved"),
    ),
    "a relative path to the folder": lambda tmp, memory: (os.chdir(tmp), open_store(Path("store"))),
    "a new folder": lambda tmp, memory: open_store(tmp / "new"),
    "a new in-memory store": lambda tmp, memory: _in_memory(memory.service.embeddings).count(),
    "a new store on the parent's client": lambda tmp, memory: _on_client(memory.backend.client).count(),
    "linking the parent's cache": lambda tmp, memory: _parents_cache(tmp).link_memory(memory),
}
"""What a child of a process with an embedded store open may try; each ends in ``StoreLockedError``."""


def _on_client(client: Any) -> Any:
    from langchain_session_rag.stores.chroma import ChromaBackend

    return ChromaBackend(client, name="another_store")


def _parents_cache(tmp: Path) -> Any:
    return PARENTS_CACHE[tmp]


PARENTS_CACHE: dict[Path, Any] = {}


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_a_child_of_a_process_with_an_embedded_store_refuses_every_embedded_store(tmp_path: Path, attempt: str) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache

    memory = written_store(tmp_path / "store")
    memory.invoke("parent")  # warm: the replica is loaded
    shutil.copytree(tmp_path / "store", tmp_path / "copy")
    PARENTS_CACHE[tmp_path] = SemanticCache.local(
        path=tmp_path / "cache", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)
    )

    def child() -> str:
        try:
            ATTEMPTS[attempt](tmp_path, memory)
        except StoreLockedError as exc:
            return f"StoreLockedError: {exc}"
        return "not refused"

    answer = run_forked(child)
    assert answer.startswith("StoreLockedError: "), answer
    assert f"forked from process {os.getpid()}" in answer
    assert "'spawn'" in answer
    assert "SessionVectorMemory.server(host, port, ...)" in answer
    if (tmp_path / "moved").exists():  # the parent's folder back where it opened it (SQLite opens files by path)
        (tmp_path / "moved").rename(tmp_path / "store")
    assert memory.count() == 1  # the parent goes on
    assert memory.core.read("memory") == "- parent"


EMBEDDED_THEN_FORK = """
import os, signal, sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory

memory = SessionVectorMemory.local(path=sys.argv[1], user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")
memory.invoke("parent")  # warm: the replica is loaded
pid = os.fork()
if pid == 0:
    for name, call in [
        ("add", lambda: memory.add_messages([{"role": "user", "content": "child wrote this"}], session_id="c")),
        ("search", lambda: memory.invoke("parent")),
        ("count", memory.count),
    ]:
        try:
            print(name, "returned", call(), flush=True)
        except Exception as exc:
            print(name, type(exc).__name__, exc, flush=True)
    sys.exit(0)  # a normal exit: the interpreter's finalization runs
for _ in range(600):  # at most 60 s
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    print("child hung", flush=True)
    sys.exit(1)
print("child exit", os.waitstatus_to_exitcode(status), "parent count", memory.count(), flush=True)
memory.add_messages([{"role": "user", "content": "parent again"}], session_id="p2")
print("parent count after", memory.count(), flush=True)
"""


def test_a_forked_child_refuses_an_embedded_store_its_parent_opened(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", EMBEDDED_THEN_FORK, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    lines = out.stdout.splitlines()
    assert "child hung" not in lines, out.stderr[-2000:]
    assert len(lines) == 5, (lines, out.stderr[-2000:])
    for line, name in zip(lines[:3], ["add", "search", "count"], strict=True):
        assert line.startswith(f"{name} StoreLockedError "), line
        assert "before fork()" in line
        assert "SessionVectorMemory.server" in line
        assert "'spawn'" in line
    # The child exits normally; nothing it tried reached the store; the parent goes on writing.
    assert lines[3:] == ["child exit 0 parent count 1", "parent count after 2"]


def test_a_forked_child_does_not_keep_the_store_lock_past_its_parent(tmp_path: Path) -> None:
    from langchain_session_rag.stores import locking

    locking.lock_embedded_store(tmp_path / "store")
    fd = locking._LOCKS[str((tmp_path / "store").resolve())]
    lock_file = (tmp_path / "store" / locking.LOCK_FILE).stat()

    def child() -> str:
        try:
            same = os.path.samestat(os.fstat(fd), lock_file)  # the number may be reused by another file
        except OSError:
            return "closed"
        return "still open: the child would hold the lock after its parent exits" if same else "closed"

    assert run_forked(child) == "closed"
    assert os.path.samestat(os.fstat(fd), lock_file)  # the parent keeps it


FORK_FIRST = """
import os, sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory

folder = sys.argv[1]
if os.fork() == 0:  # a child whose parent never opened an embedded store: it opens one and works
    memory = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    memory.add_messages([{"role": "user", "content": "child wrote this"}], session_id="c")
    memory.core.append("memory", "- child")
    print("child", memory.count(), memory.core.read("memory"), flush=True)
    if os.fork() == 0:  # its own child refuses, and exits normally
        try:
            memory.count()
        except Exception as exc:
            print("grandchild", type(exc).__name__, flush=True)
        sys.exit(0)
    print("grandchild exit", os.waitstatus_to_exitcode(os.wait()[1]), flush=True)
    sys.exit(0)
print("child exit", os.waitstatus_to_exitcode(os.wait()[1]), flush=True)
"""


def test_a_child_whose_parent_never_opened_an_embedded_store_opens_one(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", FORK_FIRST, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=HANG,  # a hang fails the test
        check=False,
    )
    assert out.stdout.splitlines() == [
        "child 1 - child",
        "grandchild StoreLockedError",
        "grandchild exit 0",
        "child exit 0",
    ], out.stderr[-2000:]
