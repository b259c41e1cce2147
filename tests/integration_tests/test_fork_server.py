"""fork() with a Chroma server (``gunicorn --preload``, ``multiprocessing`` with ``fork``): the children just work.

The parent builds the memory and warms it (its writer thread runs, its replica is loaded, its HTTP client holds a
keep-alive connection); forked children then write and read through it. A hang fails the test after ``HANG`` s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from langchain_session_rag import LocalEmbeddings, SessionVectorMemory
from langchain_session_rag.errors import MissingDependencyError
from langchain_session_rag.models.local_llm import LocalChatModel, bundled_model_path
from tests.unit_tests.test_fork_safety import HANG, held_by_another_thread, run_forked

WORKERS = 2


def _has_model() -> bool:
    try:
        return Path(bundled_model_path()).is_file()
    except MissingDependencyError:
        return False


def test_a_forked_child_adds_messages_to_a_server_memory(
    chroma_server: tuple[str, int], real_embeddings: LocalEmbeddings
) -> None:
    host, port = chroma_server
    memory = SessionVectorMemory.server(host, port, user_id="alice", embeddings=real_embeddings,
                                        collection_name="fork-child")  # fmt: skip
    memory.add_messages([{"role": "user", "content": "The parent planted tomatoes."}], session_id="p")
    memory.invoke("tomatoes")  # warm: replica loaded, connection pooled

    def child() -> str:
        memory.add_messages([{"role": "user", "content": "The child planted basil."}], session_id="c")
        return " | ".join(d.page_content for d in memory.invoke("what did the child plant? basil"))

    assert "User: The child planted basil." in run_forked(child)
    fresh = SessionVectorMemory.server(host, port, user_id="alice", embeddings=real_embeddings,
                                       collection_name="fork-child")  # fmt: skip
    assert fresh.count() == 2
    assert any("basil" in d.page_content for d in memory.invoke("basil"))  # the parent sees the child's write


def _serve(memory: SessionVectorMemory, worker: int) -> str:
    """One request of a worker: store the user's turn, then answer from memory."""
    user = memory.for_user(f"user{worker}")
    for turn in range(3):
        user.add_messages([{"role": "user", "content": f"Worker {worker} turn {turn}: my locker is {worker}{turn}."}],
                          session_id=f"w{worker}")  # fmt: skip
    found = user.invoke(f"what is my locker? worker {worker}")
    return ",".join(sorted(str(d.metadata["user_id"]) for d in found)) + f"|{len(found)}|{user.count()}"


def test_a_preloaded_parent_forks_workers_that_serve_requests(
    chroma_server: tuple[str, int], real_embeddings: LocalEmbeddings
) -> None:
    host, port = chroma_server
    memory = SessionVectorMemory.server(host, port, user_id="boot", embeddings=real_embeddings,
                                        collection_name="fork-preload", k=10)  # fmt: skip
    memory.add_messages([{"role": "user", "content": "warm-up"}], session_id="boot", wait=False)
    memory.invoke("warm-up")
    memory.for_user("user0").invoke("warm")  # replicas of the workers' users exist in the parent
    pipes: dict[int, int] = {}
    for worker in range(WORKERS):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker
            os.close(read)
            try:
                answer = _serve(memory, worker)
            except BaseException as exc:  # noqa: BLE001
                answer = f"{type(exc).__name__}: {exc}"
            os.write(write, answer.encode())
            os._exit(0)
        os.close(write)
        pipes[pid] = read
    answers = {}
    for pid, read in pipes.items():
        for _ in range(HANG * 10):  # bounded: a hung worker fails the test
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        answers[pid] = os.read(read, 65536).decode()
        os.close(read)
    expected = [f"user{w},user{w},user{w}|3|3" for w in range(WORKERS)]
    assert sorted(answers.values()) == expected
    memory.flush()
    assert memory.count() == 1  # the parent's own write, sent by its writer thread


@pytest.mark.skipif(not _has_model(), reason="the SmolLM2 file is not installed")
def test_the_local_chat_model_in_a_forked_child_refuses_instead_of_hanging() -> None:
    model = LocalChatModel(max_tokens=4)
    assert model.invoke("Say hi").usage_metadata["output_tokens"] > 0  # type: ignore[index]

    def child() -> str:
        return model.invoke("Say hi").text

    def new_model_in_child() -> str:  # what the message once advised: a model created after the fork
        return LocalChatModel(max_tokens=4).invoke("Say hi").text

    for attempt in (child, new_model_in_child):
        answer = run_forked(attempt)  # bounded: a hang fails the test
        assert answer.startswith("UnsupportedOperationError: The local chat model (SmolLM2-135M-Instruct.Q4_1.gguf) "
                                 "was loaded in process "), answer  # fmt: skip
        assert "a process that has loaded the local chat model cannot use one after fork(), not even a new " in answer
        assert "with the parent never loading it (gunicorn: without --preload, or in post_fork)" in answer
        assert "'spawn'" in answer
        assert "Create and first use" not in answer  # the old advice, which fails the same way
    assert model.invoke("Say hi").usage_metadata["output_tokens"] > 0  # type: ignore[index] - the parent still works


def test_a_fork_while_another_thread_reads_a_replica_does_not_hang_the_child(
    chroma_server: tuple[str, int], real_embeddings: LocalEmbeddings
) -> None:
    host, port = chroma_server
    memory = SessionVectorMemory.server(host, port, user_id="alice", embeddings=real_embeddings,
                                        collection_name="fork-busy")  # fmt: skip
    memory.add_messages([{"role": "user", "content": "The parent keeps bees."}], session_id="p")
    replica = memory.service.state.replicas.get("alice")
    held, release = threading.Event(), threading.Event()

    def request_in_flight() -> None:
        with replica.lock:
            held.set()
            release.wait()

    thread = threading.Thread(target=request_in_flight)
    thread.start()
    held.wait()
    try:
        answer = run_forked(lambda: " | ".join(d.page_content for d in memory.invoke("bees")))
    finally:
        release.set()
        thread.join()
    assert answer == "User: The parent keeps bees."


def test_a_forget_in_a_child_refuses_before_erasing_when_a_linked_cache_is_the_parents(
    chroma_server: tuple[str, int], tmp_path: Path
) -> None:
    """A server memory linked to an embedded cache the parent opened: the child's forget cannot reach the cache.

    Erasing the memory and then failing on the cache would leave the parent serving the forgotten answer.
    """
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_session_rag import SemanticCache

    embeddings = DeterministicFakeEmbedding(size=8)
    host, port = chroma_server
    memory = SessionVectorMemory.server(host, port, user_id="alice", embeddings=embeddings,
                                        collection_name="fork-linked")  # fmt: skip
    cache = SemanticCache.local(path=tmp_path / "cache", user_id="alice", embeddings=embeddings)
    cache.link_memory(memory)
    memory.add_messages([{"role": "user", "content": "My PIN is 4321"}, {"role": "assistant", "content": "Noted."}],
                        session_id="pin")  # fmt: skip
    cache.update("What is my PIN?", "4321", metadata={"memory_session": "pin"})

    def child() -> str:
        memory.forget(session_id="pin")
        return "forgotten"

    answer = run_forked(child)
    assert answer.startswith("StoreLockedError: The embedded store "), answer
    assert str(tmp_path / "cache") in answer
    assert memory.count() == 1, "nothing erased: the forget refused before it began"
    assert cache.lookup("What is my PIN?") is not None
    memory.forget(session_id="pin")  # the parent, which can reach both, erases both
    assert memory.count() == 0
    assert cache.lookup("What is my PIN?") is None


def test_the_child_makes_its_http_client_on_first_use_not_in_the_fork_hook(
    chroma_server: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new httpx client builds an SSL context (OpenSSL's locks): not in the hook, where a parent's thread may hold them."""
    import httpx
    from langchain_core.embeddings import DeterministicFakeEmbedding

    host, port = chroma_server
    memory = SessionVectorMemory.server(host, port, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8),
                                        collection_name="fork-lazy-http")  # fmt: skip
    memory.add_messages([{"role": "user", "content": "The parent keeps bees."}], session_id="p")
    memory.flush()
    made: list[int] = []
    real_init = httpx.Client.__init__

    def recording_init(self: httpx.Client, *args: object, **kwargs: object) -> None:
        made.append(os.getpid())
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Client, "__init__", recording_init)

    def child() -> str:
        in_hook = made.count(os.getpid())
        found = memory.invoke("bees")
        return f"{in_hook} made in the hook; {made.count(os.getpid())} after a search; {len(found)} found"

    assert run_forked(child) == "0 made in the hook; 1 after a search; 1 found"


EXITS = """
import os, sys, time, signal
HANG_TENTHS = int(sys.argv[2])
from langchain_session_rag import LocalEmbeddings
from langchain_session_rag.models.local_llm import LocalChatModel
embeddings = LocalEmbeddings()
embeddings.embed_query("warm")
if sys.argv[1] == "chat":
    LocalChatModel(max_tokens=2).invoke("hi")

def child_exit(status, embed):
    pid = os.fork()
    if pid == 0:
        if embed:
            embeddings.embed_query("the child's own session")
        sys.exit(status)
    for _ in range(HANG_TENTHS):
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(code)
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"

print(child_exit(None, False), child_exit(3, True), child_exit("a message", True))
"""


def test_a_forked_child_that_exits_normally_after_its_parent_ran_the_models_ends_with_its_status(
    tmp_path: Path,
) -> None:
    """ONNX Runtime's and llama.cpp's destructors wait at exit for threads that stayed in the parent (they hung).

    The parent runs the embedding model, and the chat model when it is installed: each one's threads stay in the
    parent, so one parent shows both (it was one process per model).
    """
    loaded = "chat" if _has_model() else "embeddings"
    script = tmp_path / "exits.py"
    script.write_text(EXITS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(script), loaded, str(HANG * 10)], capture_output=True, text=True, env=env,
                          timeout=HANG * 4, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "3", "1"], done.stdout + done.stderr[-3000:]
    assert "a message" in done.stderr  # sys.exit's message is still written before the child ends


def test_a_new_server_memory_in_a_child_forked_while_chromadb_counted_its_clients(
    chroma_server: tuple[str, int],
) -> None:
    """A thread of the parent held chromadb's lock of its client count at the fork: the child's lock is free."""
    from chromadb.api.shared_system_client import SharedSystemClient
    from langchain_core.embeddings import DeterministicFakeEmbedding

    host, port = chroma_server
    fake = DeterministicFakeEmbedding(size=8)
    memory = SessionVectorMemory.server(host, port, user_id="alice", embeddings=fake, collection_name="fork-count")
    memory.add_messages([{"role": "user", "content": "hello"}], session_id="s")
    memory.flush()

    def count_in_child() -> str:
        child = SessionVectorMemory.server(host, port, user_id="bob", embeddings=fake, collection_name="fork-count")
        return str(child.count())

    with held_by_another_thread(SharedSystemClient._refcount_lock):
        count = run_forked(count_in_child)
    assert count == "0"
