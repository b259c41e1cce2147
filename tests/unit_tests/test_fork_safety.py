"""fork() after a memory was used (``gunicorn --preload``, ``multiprocessing`` with ``fork``): no hang, typed refusals.

A forked child has one thread: the writer's thread, the llama.cpp server's threads and embedded Chroma's threads
stay in the parent. Each test forks and bounds the wait, so a hang fails the test instead of the suite.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
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


def test_a_lock_held_by_another_thread_at_the_fork_is_free_in_the_child() -> None:
    from langchain_session_rag import _fork

    lock = _fork.ChildLock()

    def child() -> str:
        with lock:
            return f"taken, forked from {_fork.forked_from()}"

    with held_by_another_thread(lock):
        assert run_forked(child).startswith("taken, forked from ")
    with lock:  # the parent's lock is its own again
        pass


def test_chromadbs_client_lock_held_at_the_fork_is_free_in_the_child(tmp_path: Path) -> None:
    from chromadb.api.shared_system_client import SharedSystemClient
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    SessionVectorMemory.local(path=tmp_path / "parent", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))

    def child() -> str:
        memory = SessionVectorMemory.local(
            path=tmp_path / "child", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8)
        )
        memory.add_messages([{"role": "user", "content": "child"}], session_id="c")
        return f"count {memory.count()}"

    with held_by_another_thread(SharedSystemClient._refcount_lock):  # as while a parent's thread opens a client
        assert run_forked(child) == "count 1"


def test_locks_of_objects_held_at_the_fork_are_free_in_the_child(tmp_path: Path) -> None:
    """A cache, its vector memo, an LLM cache and a keyring whose lock a parent's thread held when it forked."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache, SemanticLLMCache
    from langchain_session_rag.privacy.keyring import Keyring

    cache = SemanticCache.local(path=tmp_path / "cache", user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    llm_cache = SemanticLLMCache(cache, config_key="user_id").for_user("alice")
    ring = Keyring(tmp_path / "keys", b"k" * 32)
    uses: list[tuple[Any, Callable[[], object]]] = [
        (cache._lock, lambda: cache.note_skipped("forked")),
        (cache._vectors._lock, lambda: cache._vectors.remember("q", [1.0])),
        (llm_cache._lock, llm_cache._view),
        (ring._lock, lambda: ring.current("alice")),
    ]
    for lock, use in uses:

        def child(use: Callable[[], object] = use) -> str:
            use()
            return "used"

        with held_by_another_thread(lock):
            assert run_forked(child) == "used", lock


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
    import os

    from langchain_session_rag.stores import locking

    locking.lock_embedded_store(tmp_path / "store")
    fd = next(fd for key, (fd, _pid) in locking._LOCKS.items() if key == str((tmp_path / "store").resolve()))

    lock_file = (tmp_path / "store" / locking.LOCK_FILE).stat()

    def child() -> str:
        try:
            same = os.path.samestat(os.fstat(fd), lock_file)  # the number may be reused by another file
        except OSError:
            return "closed"
        return "still open: the child would hold the lock after its parent exits" if same else "closed"

    assert run_forked(child) == "closed"
    assert os.path.samestat(os.fstat(fd), lock_file)  # the parent keeps it


REOPEN_AFTER_PARENT_EXITS = """
import faulthandler, os, sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory

folder, other = sys.argv[1], sys.argv[2]
embeddings = DeterministicFakeEmbedding(size=8)
memory = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=embeddings)
memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")
memory.core.append("memory", "- parent")
if len(sys.argv) > 3:  # moved while open: where the child finds it is not where it was opened
    os.rename(folder, sys.argv[3])
    folder = sys.argv[3]
gone, told = os.pipe()
if os.fork() == 0:
    os.close(told)
    os.read(gone, 1)  # the parent has exited: it no longer holds the folder's lock
    time.sleep(0.3)
    faulthandler.dump_traceback_later(60, exit=True)  # a hang prints where and fails the test
    try:
        again = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=embeddings)
        print("reopened", again.core.read("memory"), again.count(), flush=True)
    except Exception as exc:
        print("reopen", type(exc).__name__, exc, flush=True)
    fresh = SessionVectorMemory.local(path=other, user_id="alice", embeddings=embeddings)
    fresh.core.append("memory", "- child")
    fresh.add_messages([{"role": "user", "content": "child wrote this"}], session_id="c")
    print("other folder", fresh.core.read("memory"), fresh.count(), flush=True)
    os._exit(0)
os._exit(0)  # closes `told`: the child goes on
"""


@pytest.mark.parametrize("moved", [False, True], ids=["in place", "moved before the fork"])
def test_a_forked_child_refuses_to_reopen_its_parents_folder_even_after_the_parent_exits(
    tmp_path: Path, moved: bool
) -> None:
    # chromadb keeps an open folder's state for the whole process: a child's new client for it hung on its first read.
    folders = [str(tmp_path / "store"), str(tmp_path / "other")] + ([str(tmp_path / "moved")] if moved else [])
    out = subprocess.run(
        [sys.executable, "-c", REOPEN_AFTER_PARENT_EXITS, *folders],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    lines = out.stdout.splitlines()  # the child keeps the pipe open: run() returns when both have exited
    assert len(lines) == 2, (lines, out.stderr[-3000:])
    assert lines[0].startswith("reopen StoreLockedError "), lines[0]
    assert "was open in process" in lines[0]
    assert "forked from it" in lines[0]
    assert "'spawn'" in lines[0]
    assert "SessionVectorMemory.server" in lines[0]
    assert lines[1] == "other folder - child 1"  # another folder opens and works in the child


def test_a_client_a_forked_child_opens_on_its_parents_folder_is_refused(tmp_path: Path) -> None:
    import chromadb
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory
    from langchain_session_rag.errors import StoreLockedError
    from langchain_session_rag.stores.chroma import ChromaBackend

    embeddings = DeterministicFakeEmbedding(size=8)
    memory = SessionVectorMemory.local(path=tmp_path / "store", user_id="alice", embeddings=embeddings)
    memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")
    memory.core.append("memory", "- parent")

    def child() -> str:
        answers = []
        try:  # the caller's own client, past the package's lock (such a client hung on some first reads)
            ChromaBackend(chromadb.PersistentClient(path=str(tmp_path / "store")), name="session_memory").count()
        except StoreLockedError as exc:
            answers.append("refused" if "forked from it" in str(exc) else str(exc))
        fresh = SessionVectorMemory.local(path=tmp_path / "other", user_id="alice", embeddings=embeddings)
        fresh.core.append("memory", "- child")
        answers.append(fresh.core.read("memory"))
        return " / ".join(answers)

    assert run_forked(child) == "refused / - child"
    assert memory.core.read("memory") == "- parent"  # the parent goes on


def test_a_core_memory_block_lock_held_at_the_fork_is_free_in_the_child() -> None:
    from langchain_session_rag.memory import core

    lock = core._lock_for("store", "alice", "memory")
    with lock:  # held by the parent's thread that forks: in the child no thread would ever release it

        def child() -> str:
            taken = core._lock_for("store", "alice", "memory").acquire(timeout=5)
            return "taken" if taken else "held forever"

        assert run_forked(child) == "taken"


def test_a_copy_of_the_parents_folder_is_refused_in_the_child_and_a_fresh_one_works(tmp_path: Path) -> None:
    import shutil

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)
    seed = SessionVectorMemory.local(path=tmp_path / "template", user_id="alice", embeddings=embeddings)
    seed.add_messages([{"role": "user", "content": "seeded"}], session_id="p")
    seed.core.append("memory", "- seeded")
    shutil.copytree(tmp_path / "template", tmp_path / "worker")  # one folder per worker, copied before the fork

    def child() -> str:
        answers = []
        try:  # chromadb keeps its state by collection: the copy's core-memory read hung like the folder's
            copy = SessionVectorMemory.local(path=tmp_path / "worker", user_id="alice", embeddings=embeddings)
            answers.append(copy.core.read("memory"))
        except Exception as exc:  # noqa: BLE001 - the test reads the error's type and message
            names = f"holds the collections of {str(tmp_path / 'template')!r}" in str(exc)
            answers.append(f"{type(exc).__name__}: {names}")
        fresh = SessionVectorMemory.local(path=tmp_path / "fresh", user_id="alice", embeddings=embeddings)
        fresh.core.append("memory", "- fresh")
        answers.append(fresh.core.read("memory"))
        return " / ".join(answers)

    assert run_forked(child) == "StoreLockedError: True / - fresh"


def test_a_relative_folder_is_judged_where_it_was_opened_not_where_the_fork_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    memory = SessionVectorMemory.local(path="A", user_id="alice", embeddings=embeddings)
    memory.add_messages([{"role": "user", "content": "parent"}], session_id="p")
    monkeypatch.chdir(tmp_path / "elsewhere")  # a daemon changes directory before it forks

    def child() -> str:
        answers = []
        for folder in (tmp_path / "A", tmp_path / "elsewhere" / "A"):
            try:
                other = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=embeddings)
                other.add_messages([{"role": "user", "content": "child"}], session_id="c")
                answers.append(f"{folder.parent.name}/A opened")
            except Exception as exc:  # noqa: BLE001, PERF203 - the test reads the error type
                answers.append(f"{folder.parent.name}/A {type(exc).__name__}")
        return " / ".join(answers)

    assert run_forked(child) == f"{tmp_path.name}/A StoreLockedError / elsewhere/A opened"


def test_a_new_in_memory_store_works_in_a_forked_child_beside_a_linked_cache(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache, SessionVectorMemory

    embeddings, settings = DeterministicFakeEmbedding(size=8), Settings(anonymized_telemetry=False)

    def in_memory() -> SessionVectorMemory:
        client = chromadb.EphemeralClient(settings=settings)
        return SessionVectorMemory(chroma_client=client, user_id="alice", embeddings=embeddings)

    memory = in_memory()
    cache = SemanticCache.local(path=tmp_path / "cache", user_id="alice", embeddings=embeddings)
    cache.link_memory(memory)  # an embedded cache: refused in the child, so it must not stop the child's forget
    memory.add_messages([{"role": "user", "content": "parent"}], session_id="p")
    memory.core.append("memory", "- parent")

    def child() -> str:
        fresh = in_memory()
        fresh.add_messages([{"role": "user", "content": "child"}], session_id="c")
        fresh.core.append("memory", "- child")
        return f"{fresh.count()} {fresh.core.read('memory')} forgot {fresh.forget(session_id='c')} {fresh.count()}"

    assert run_forked(child) == "1 - child forgot 1 0"
    assert memory.count() == 1
    assert memory.core.read("memory") == "- parent"


def test_a_forked_child_reads_no_database_to_refuse_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own locks may be held by another thread of the parent at the fork: the child must not call it.

    The parent reads what the child needs just before the fork; the child looks for the ids in the file's bytes.
    """
    import os

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory
    from langchain_session_rag.stores import locking

    embeddings = DeterministicFakeEmbedding(size=8)
    memory = SessionVectorMemory.local(path=tmp_path / "store", user_id="alice", embeddings=embeddings)
    memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")
    memory.core.append("memory", "- parent")
    readers: list[int] = []
    real = locking.read_chroma_db

    def recording(folder: str, query: str, **options: float) -> object:
        readers.append(os.getpid())
        return real(folder, query, **options)

    monkeypatch.setattr(locking, "read_chroma_db", recording)

    def child() -> str:
        shutil.copytree(tmp_path / "store", tmp_path / "copy")  # made after the fork: known by its collections
        try:
            SessionVectorMemory.local(path=tmp_path / "copy", user_id="alice", embeddings=embeddings)
        except StoreLockedError as exc:
            refused = "holds the collections of" in str(exc)
        else:
            refused = False
        return f"{readers.count(os.getpid())} reads in the child; copy refused: {refused}"

    assert run_forked(child) == "0 reads in the child; copy refused: True"
    assert readers, "the parent read the ids before the fork"


def test_a_folder_moved_after_the_fork_is_refused_where_it_is_now(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)
    memory = SessionVectorMemory.local(path=tmp_path / "store", user_id="alice", embeddings=embeddings)
    memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")

    def child() -> str:
        (tmp_path / "store").rename(tmp_path / "moved")
        try:
            SessionVectorMemory.local(path=tmp_path / "moved", user_id="alice", embeddings=embeddings)
        except StoreLockedError as exc:
            named = repr(str(tmp_path / "store")) in str(exc)
            return f"refused, names the folder it was: {named}"
        return "opened"

    assert run_forked(child) == "refused, names the folder it was: True"


def test_a_database_the_parent_merely_reads_is_not_refused_in_the_child(tmp_path: Path) -> None:
    import sqlite3

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)

    def make() -> str:  # a store made by another process
        made = SessionVectorMemory.local(path=tmp_path / "other", user_id="alice", embeddings=embeddings)
        made.add_messages([{"role": "user", "content": "made elsewhere"}], session_id="o")
        made.flush()
        return "made"

    assert run_forked(make) == "made"
    reader = sqlite3.connect(f"file:{tmp_path / 'other' / 'chroma.sqlite3'}?mode=ro", uri=True)
    try:
        assert reader.execute("SELECT count(*) FROM collections").fetchone()[0] >= 1

        def child() -> str:
            opened = SessionVectorMemory.local(path=tmp_path / "other", user_id="alice", embeddings=embeddings)
            return f"count {opened.count()}"

        assert run_forked(child) == "count 1"
    finally:
        reader.close()


def test_a_cache_the_parent_opened_cannot_be_linked_in_the_child(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache, SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)
    cache = SemanticCache.local(path=tmp_path / "cache", user_id="alice", embeddings=embeddings)

    def child() -> str:
        memory = SessionVectorMemory.local(path=tmp_path / "child", user_id="alice", embeddings=embeddings)
        try:
            cache.link_memory(memory)
        except StoreLockedError as exc:
            return f"refused: {str(tmp_path / 'cache') in str(exc)}"
        return "linked"

    assert run_forked(child) == "refused: True"


def test_copies_are_refused_after_the_parents_folder_moved_or_went_after_the_fork(tmp_path: Path) -> None:
    written_store(tmp_path / "store").core.append("memory", "- parent")
    shutil.copytree(tmp_path / "store", tmp_path / "before")  # a copy made before the fork

    def child() -> str:
        (tmp_path / "store").rename(tmp_path / "moved")
        shutil.copytree(tmp_path / "moved", tmp_path / "after")  # a copy of the moved folder
        shutil.rmtree(tmp_path / "moved")
        return ", ".join(f"{name} {opened_or_refused(tmp_path / name)}" for name in ("after", "before"))

    assert run_forked(child) == "after refused, before refused"


def test_a_handed_in_client_whose_folder_moved_before_the_fork_is_refused_where_it_is(tmp_path: Path) -> None:
    import chromadb
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    embeddings = DeterministicFakeEmbedding(size=8)
    client = chromadb.PersistentClient(path=str(tmp_path / "store"))
    memory = SessionVectorMemory(chroma_client=client, user_id="alice", embeddings=embeddings)
    memory.add_messages([{"role": "user", "content": "parent wrote this"}], session_id="p")
    memory.flush()
    (tmp_path / "store").rename(tmp_path / "moved")

    def child() -> str:
        try:
            SessionVectorMemory.local(path=tmp_path / "moved", user_id="alice", embeddings=embeddings)
        except StoreLockedError:
            return "refused"
        return "opened"

    assert run_forked(child) == "refused"


def written_store(path: Path, text: str = "parent wrote this") -> Any:
    """A local memory at ``path`` holding one message, written through (fake embeddings)."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    memory.add_messages([{"role": "user", "content": text}], session_id="p")
    memory.flush()
    return memory


def open_answer(path: Path) -> str:
    """Open a local memory at ``path``: its count, or the refusal with its message."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SessionVectorMemory

    try:
        memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    except StoreLockedError as exc:
        return f"StoreLockedError: {exc}"
    return f"count {memory.count()}"


def opened_or_refused(path: Path) -> str:
    """Open a local memory at ``path``: its count, or ``"refused"``."""
    answer = open_answer(path)
    return "refused" if answer.startswith("StoreLockedError") else answer


def test_a_store_quoting_the_parents_collection_ids_in_its_text_is_not_refused(tmp_path: Path) -> None:
    from langchain_session_rag.stores import locking

    written_store(tmp_path / "store")
    ids = sorted(locking._folder_ids(str(tmp_path / "store")))
    assert len(ids) >= 3
    quoting = f"my collections {' '.join(ids)} return 500"
    assert run_forked(lambda: str(written_store(tmp_path / "other", quoting).count())) == "1"  # another process's
    assert run_forked(lambda: opened_or_refused(tmp_path / "other")) == "count 1"


def test_a_copy_is_refused_when_a_writer_held_the_parents_database_at_the_fork(tmp_path: Path) -> None:
    import sqlite3

    written_store(tmp_path / "store")
    assert run_forked(lambda: "an earlier fork") == "an earlier fork"  # the parent read the ids then
    shutil.copytree(tmp_path / "store", tmp_path / "copy")
    writer = sqlite3.connect(str(tmp_path / "store" / "chroma.sqlite3"), isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # the parent's read just before the next fork cannot get in
    try:
        assert run_forked(lambda: opened_or_refused(tmp_path / "copy")) == "refused"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_folder_the_child_cannot_check_is_refused_not_risked(tmp_path: Path) -> None:
    """No Python to run the check (an embedding host names itself as the executable): refused, with the reason."""
    import sys

    written_store(tmp_path / "store")

    def child() -> str:
        shutil.copytree(tmp_path / "store", tmp_path / "copy")
        sys.executable = "/usr/sbin/uwsgi"
        return open_answer(tmp_path / "copy")

    answer = run_forked(child)
    assert answer.startswith("StoreLockedError: This process cannot tell whether the embedded store "), answer
    assert "'spawn'" in answer


def test_a_check_that_fails_refuses_and_is_tried_again(tmp_path: Path) -> None:
    """The copy's database held by a writer for longer than the check waits: refused, and not remembered."""
    import sqlite3

    from langchain_session_rag.stores import locking

    written_store(tmp_path / "store")
    assert run_forked(lambda: "an earlier fork") == "an earlier fork"
    shutil.copytree(tmp_path / "store", tmp_path / "copy")
    writer = sqlite3.connect(str(tmp_path / "copy" / "chroma.sqlite3"), isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # held by this process: the child's check in a new interpreter waits, fails
    try:
        answer = run_forked(lambda: f"{open_answer(tmp_path / 'copy')} | remembered {len(locking._COPY_CHECKS)}")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert answer.startswith("StoreLockedError: This process cannot tell whether"), answer
    assert answer.endswith(" | remembered 0")
    assert run_forked(lambda: opened_or_refused(tmp_path / "copy")) == "refused"  # the lock gone: known as a copy


def test_a_copy_is_refused_when_the_fork_read_its_folders_past_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many open folders (a long-running process) use up the wait for writers: the folders are still read."""
    from langchain_session_rag.stores import locking

    monkeypatch.setattr(locking, "FORK_READ_TIMEOUT", 0.0)  # as when earlier folders took all of it
    written_store(tmp_path / "store")
    shutil.copytree(tmp_path / "store", tmp_path / "copy")
    assert run_forked(lambda: opened_or_refused(tmp_path / "copy")) == "refused"
