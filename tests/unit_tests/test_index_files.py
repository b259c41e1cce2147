"""Chroma writes the unused slots of its vector index files from uninitialised memory; the package zeroes them."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.stores.base import shard_of
from langchain_session_rag.stores.index_files import IndexFileGuard, scrub_index_files

HEADER = struct.Struct("<i4Q")


def unused_bytes(folder: Path) -> dict[str, bytes]:
    """The bytes past the element count of every index file under ``folder``."""
    out = {}
    for header in folder.glob("*/header.bin"):
        _version, _offset, _capacity, count, slot = HEADER.unpack_from(header.read_bytes())
        for name, width in (("data_level0.bin", slot), ("length.bin", 4)):
            out[str(header.with_name(name))] = header.with_name(name).read_bytes()[count * width :]
    return out


def fake_index(folder: Path, *, count: int, capacity: int = 10, slot: int = 8, version: int = 1) -> Path:
    folder.mkdir(parents=True)
    (folder / "header.bin").write_bytes(HEADER.pack(version, 0, capacity, count, slot) + bytes(64))
    (folder / "data_level0.bin").write_bytes(b"L" * slot * count + b"secret!!" * capacity)
    (folder / "length.bin").write_bytes(b"\x01\x00\x00\x00" * count + b"heap" * (capacity - count))
    return folder


def test_only_slots_past_the_element_count_are_zeroed(tmp_path: Path) -> None:
    live = fake_index(tmp_path / "a", count=3)
    other = fake_index(tmp_path / "b", count=2, version=2)
    assert scrub_index_files(tmp_path) == {"indexes": 2, "scrubbed": 2, "skipped": 1}
    assert (live / "data_level0.bin").read_bytes() == b"L" * 24 + bytes(80)
    assert (live / "length.bin").read_bytes() == b"\x01\x00\x00\x00" * 3 + bytes(28)
    assert b"secret" in (other / "data_level0.bin").read_bytes(), "an unknown layout is left alone"
    assert scrub_index_files(tmp_path)["scrubbed"] == 0, "a second pass finds nothing left"


def test_compact_leaves_no_uninitialised_byte_in_the_index_files(tmp_path: Path, real_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "s", user_id="ana", embeddings=real_embeddings)
    memory.add_messages([{"role": "user", "content": "I keep bees on the roof."}], session_id="s1")
    memory.compact()
    leftovers = unused_bytes(tmp_path / "s")
    assert leftovers, "the store has vector index files"
    assert {name: rest.count(0) == len(rest) for name, rest in leftovers.items()} == dict.fromkeys(leftovers, True)
    assert ["bees on the roof" in d.page_content for d in memory.invoke("Where are the bees?")] == [True]


# -- as Chroma writes them -------------------------------------------------------------------------
PERTURBED = {"MALLOC_PERTURB_": "90", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
"""glibc fills every block it hands out with 0xA5 (90 ^ 0xFF), so any uninitialised byte written is seen."""
UNINITIALISED = b"\xa5" * 64

STEPS = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SemanticCache, SessionVectorMemory

folder, step = sys.argv[1], sys.argv[2]
fake = DeterministicFakeEmbedding(size=16)
memory = SessionVectorMemory.local(path=folder, user_id="ana", embeddings=fake)
cache = SemanticCache.local(path=folder + "-cache", user_id="ana", embeddings=fake)
if step == "write":
    memory.add_messages([{"role": "user", "content": "I keep bees on the roof."}], session_id="s1")
    memory.core.write("memory", "Prefers green tea.")
    memory.add_documents([Document("The handbook.", metadata={"name": "a.md"})])
    memory.for_user("bob").add_messages([{"role": "user", "content": "Bob rows."}], session_id="b1")
    cache.update("Where are the bees?", "On the roof.")
    memory.flush()
else:  # a later process: its first call on each index loads it
    assert [d.page_content for d in memory.invoke("Where are the bees?")]
    assert cache.lookup("Where are the bees?") == "On the roof."
    memory.for_user("bob").add_messages([{"role": "user", "content": "Bob swims."}], session_id="b2")
    memory.flush()
"""


def uninitialised_files(*folders: Path) -> list[str]:
    return [str(f) for d in folders for f in d.rglob("*") if f.is_file() and UNINITIALISED in f.read_bytes()]


@pytest.mark.slow  # subprocesses with glibc's malloc perturbation
def test_no_file_of_a_store_or_a_cache_holds_uninitialised_memory(tmp_path: Path) -> None:
    store, cache = tmp_path / "s", tmp_path / "s-cache"
    for step in ("write", "read"):
        done = subprocess.run([sys.executable, "-c", STEPS, str(store), step], env={**os.environ, **PERTURBED},
                              capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert list(store.glob("*/header.bin")), "the store has vector index files"
        assert uninitialised_files(store, cache) == [], step


def test_the_guard_zeroes_new_and_changed_indexes_when_the_outermost_call_ends(tmp_path: Path) -> None:
    guard = IndexFileGuard(tmp_path)
    with guard.using():
        first = fake_index(tmp_path / "a", count=3)
        with guard.using():
            pass
        assert b"secret" in (first / "data_level0.bin").read_bytes(), "a nested call does not sweep"
    assert (first / "data_level0.bin").read_bytes() == b"L" * 24 + bytes(80)
    with guard.using():
        second = fake_index(tmp_path / "b", count=1)
        (first / "length.bin").write_bytes(b"\x01\x00\x00\x00" * 3 + b"heap" * 7)  # rewritten, header untouched
    assert (second / "length.bin").read_bytes() == b"\x01\x00\x00\x00" + bytes(36), "a new index is zeroed"
    assert b"heap" in (first / "length.bin").read_bytes(), "an index whose header did not change is not read"
    (first / "header.bin").write_bytes((first / "header.bin").read_bytes())  # Chroma rewrites the header
    os.utime(first / "header.bin", ns=(1, 1))
    with guard.using():
        pass
    assert (first / "length.bin").read_bytes() == b"\x01\x00\x00\x00" * 3 + bytes(28)
    assert guard.sweep(force=True) == 0, "nothing left"


def test_a_sweep_waits_for_the_calls_running_and_a_caller_written_folder_is_swept_only_when_forced(
    tmp_path: Path,
) -> None:
    guard = IndexFileGuard(tmp_path)
    index = fake_index(tmp_path / "a", count=2)
    inside, leave = threading.Event(), threading.Event()

    def call() -> None:
        with guard.using():
            inside.set()
            leave.wait(30)

    caller = threading.Thread(target=call)
    caller.start()
    inside.wait(30)
    sweeper = threading.Thread(target=guard.sweep, kwargs={"force": True})
    sweeper.start()
    sweeper.join(0.3)
    assert sweeper.is_alive(), "the sweep waits while a call runs"
    assert b"secret" in (index / "data_level0.bin").read_bytes()
    leave.set()
    caller.join(30)
    sweeper.join(30)
    assert (index / "data_level0.bin").read_bytes() == b"L" * 16 + bytes(80)

    other = IndexFileGuard(tmp_path / "b")
    other.hands_off()
    index = fake_index(tmp_path / "b" / "x", count=0)
    with other.using():
        pass
    assert b"secret" in (index / "data_level0.bin").read_bytes(), "code outside the package may be writing"
    assert other.sweep(force=True) == 2


CHECK = """
import sys, chromadb, numpy
client = chromadb.PersistentClient(path=sys.argv[1])
total = 0
for col in client.list_collections():
    got = col.get(include=["embeddings"])
    total += len(got["ids"])
    for rid, vector in list(zip(got["ids"], got["embeddings"]))[::7]:
        assert numpy.isfinite(vector).all() and numpy.abs(vector).sum() > 0, (col.name, rid)
        assert col.query(query_embeddings=[vector], n_results=1)["ids"][0] == [rid], (col.name, rid)
print(total)
"""


@pytest.mark.slow  # a second process loads what the first wrote
def test_indexes_flushed_while_threads_write_and_read_load_whole_in_another_process(
    tmp_path: Path, fake_embeddings: Any
) -> None:
    """Sweeps after every call never zero a flushed element (that a sweep waits for running calls is tested above)."""
    memory = SessionVectorMemory.local(path=tmp_path / "s", user_id="ana", embeddings=fake_embeddings)
    failures: list[BaseException] = []

    def write(part: int) -> None:
        try:
            for start in range(0, 300, 25):
                docs = [Document(f"note {part}-{i}", metadata={"name": f"{part}.md"}) for i in range(start, start + 25)]
                memory.add_documents(docs)
                memory.invoke(f"note {part}-{start}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(part,)) for part in range(4)]  # 1,200 chunks: one flush at 1,000
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert failures == []
    memory.flush()
    assert max(HEADER.unpack_from(h.read_bytes())[3] for h in (tmp_path / "s").glob("*/header.bin")) >= 1000
    done = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "s")], capture_output=True, text=True,
                          check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) >= 1200


def test_an_interrupt_while_a_sweep_waits_leaves_the_folder_usable(tmp_path: Path) -> None:
    guard = IndexFileGuard(tmp_path)
    index = fake_index(tmp_path / "a", count=1)
    inside, leave = threading.Event(), threading.Event()

    def call() -> None:
        with guard.using():
            inside.set()
            leave.wait(30)

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    caller = threading.Thread(target=call)
    caller.start()
    inside.wait(30)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            guard.sweep(force=True)  # waits for the call above: Ctrl-C lands meanwhile
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    leave.set()
    caller.join(30)

    def later_call() -> None:
        with guard.using():
            pass

    later = threading.Thread(target=later_call)
    later.start()
    later.join(30)
    assert not later.is_alive(), "a later call is not blocked by the interrupted sweep"
    assert (index / "data_level0.bin").read_bytes() == b"L" * 8 + bytes(80), "the call's own end swept"


class BlockingEmbeddings(DeterministicFakeEmbedding):
    """Fake vectors; the second ``embed_documents`` call waits until ``release`` is set."""

    calls: int = 0
    started: Any = None
    release: Any = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 2:
            self.started.set()
            self.release.wait(60)
        return super().embed_documents(texts)


def test_a_reembedding_does_not_hold_up_the_other_calls_while_it_embeds(tmp_path: Path, fake_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "s", user_id="ana", embeddings=fake_embeddings)
    for user in ("ana", "bob", "cy", "dee"):  # several shards: the rebuild copies one, then embeds the next
        memory.for_user(user).add_messages([{"role": "user", "content": f"{user} keeps bees."}], session_id="s1")
    memory.flush()
    slow = BlockingEmbeddings(size=16, started=threading.Event(), release=threading.Event())
    done: list[int] = []
    rebuild = threading.Thread(target=lambda: done.append(SessionVectorMemory.reembed(memory.backend.client, embeddings=slow)))  # fmt: skip
    rebuild.start()
    try:
        assert slow.started.wait(60)
        reader = threading.Thread(target=lambda: [memory.backend.all_ids(u) for u in ("ana", "bob", "cy", "dee")])
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "store calls run while the new model embeds"
    finally:
        slow.release.set()
        rebuild.join(120)
    assert done == [4]


HANDED_IN = """
import sys
from langchain_chroma import Chroma
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory

folder, step = sys.argv[1], sys.argv[2]
fake = DeterministicFakeEmbedding(size=16)
local = SessionVectorMemory.local(path=folder, user_id="ana", embeddings=fake)
theirs = Chroma(client=local.backend.client, collection_name="theirs", embedding_function=fake)  # l2, langchain's default
mine = SessionVectorMemory(vectorstore=theirs, user_id="ana", embeddings=fake)
if step == "write":
    theirs.add_texts([f"Note {i}." for i in range(1100)])  # the caller's own writes: flushed at 1,000
    mine.add_messages([{"role": "user", "content": "Through the memory."}], session_id="t1")
    for user in ("ana", "bob", "cy", "dee"):
        local.for_user(user).add_messages([{"role": "user", "content": f"{user} rows."}], session_id="s1")
    local.flush()
    mine.flush()
else:
    local.for_user("bob").forget_all()
    print(local.compact())
"""


@pytest.mark.slow  # subprocesses with glibc's malloc perturbation
def test_a_handed_in_collection_is_left_alone_until_compact_which_also_drops_deleted_indexes(tmp_path: Path) -> None:
    store = tmp_path / "s"

    def run(step: str) -> str:
        done = subprocess.run([sys.executable, "-c", HANDED_IN, str(store), step], env={**os.environ, **PERTURBED},
                              capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def segments() -> dict[str, str]:
        with contextlib.closing(sqlite3.connect(store / "chroma.sqlite3")) as db:
            return dict(db.execute("SELECT id, collection FROM segments WHERE scope = 'VECTOR'").fetchall())

    run("write")
    with contextlib.closing(sqlite3.connect(store / "chroma.sqlite3")) as db:
        (theirs,) = db.execute("SELECT id FROM collections WHERE name = 'theirs'").fetchone()
    their_index = next(name for name, owner in segments().items() if owner == theirs)
    dirty = uninitialised_files(store)
    assert dirty, "the l2 collection's own lengths hold uninitialised memory"
    assert {Path(f).parent.name for f in dirty} == {their_index}, "the package's own indexes were zeroed"
    before = {f.parent.name for f in store.glob("*/header.bin")}
    run("compact")
    assert uninitialised_files(store) == [], "compact() zeroes the handed-in collection's files too"
    after = {f.parent.name for f in store.glob("*/header.bin")}
    assert after <= set(segments()), "no index folder of a deleted collection is left"
    assert before - after, "the rebuild's deleted collections had left their folders"
    done = subprocess.run([sys.executable, "-c", CHECK, str(store)], capture_output=True, text=True, check=False,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) >= 1100 + 1 + 3


def test_only_folders_of_deleted_collections_are_removed_never_one_created_meanwhile(tmp_path: Path) -> None:
    guard = IndexFileGuard(tmp_path)
    _, old, _ = (fake_index(tmp_path / n, count=1) for n in ("live", "old", "forgotten"))
    os.utime(old / "header.bin", ns=(1, 1))  # no collection owns it, and it was last written long ago
    guard.forget(["forgotten"])

    def layout() -> tuple[set[str] | None, set[str]]:
        fake_index(tmp_path / "meanwhile", count=0)  # created by other code right after the read: no owner seen
        return {"live"}, set()

    guard.sweep(force=True, layout=layout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "meanwhile"]


def test_a_forked_child_never_sweeps_its_parents_folder(tmp_path: Path) -> None:
    guard = IndexFileGuard(tmp_path)
    index = fake_index(tmp_path / "a", count=1)
    pid = os.fork()
    if pid == 0:  # the child: a call's end and a forced sweep
        try:
            with guard.using():
                pass
            os._exit(0 if guard.sweep(force=True) == 0 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"secret" in (index / "data_level0.bin").read_bytes(), "the child left the parent's files alone"
    assert guard.sweep(force=True) == 2, "the parent still sweeps"


@pytest.mark.slow  # a compaction, and a second process loads what was written meanwhile
def test_shards_first_written_while_a_compaction_runs_load_whole_in_another_process(
    tmp_path: Path, fake_embeddings: Any
) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "s", user_id="ana", embeddings=fake_embeddings)
    memory.add_messages([{"role": "user", "content": "Ana rows."}], session_id="s1")
    memory.flush()
    compacting = threading.Thread(target=memory.compact)
    compacting.start()
    written = 0
    while compacting.is_alive() or written < 8:  # new users land in shards (and index folders) of their own
        memory.for_user(f"new{written}").add_documents([Document(f"note {written}-{i}") for i in range(30)])
        written += 1
    compacting.join(300)
    memory.flush()
    done = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "s")], capture_output=True, text=True,
                          check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) >= 30 * written


@pytest.mark.slow  # a compaction (it runs `chroma vacuum`)
def test_a_write_to_a_shard_already_copied_by_a_compaction_is_kept(tmp_path: Path, fake_embeddings: Any) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "s", user_id="ana", embeddings=fake_embeddings)
    mine = shard_of("ana", 32)
    later = next(u for u in (f"user{i}" for i in range(1000)) if shard_of(u, 32) > mine)  # copied after ana's shard
    memory.add_documents([Document(f"ana {i}") for i in range(5)])
    memory.for_user(later).add_documents([Document(f"later {i}") for i in range(3000)])  # a long copy
    memory.flush()
    client = memory.backend.client
    wrote = threading.Event()

    def write_once_ana_is_copied() -> None:
        target = f"session_memory-u{shard_of(later, 32):02d}-next"
        while target not in {c.name for c in client.list_collections()}:
            time.sleep(0.01)
        memory.add_documents([Document(f"during {i}") for i in range(5)])  # waits for the rebuild: kept
        memory.flush()
        wrote.set()

    writer = threading.Thread(target=write_once_ana_is_copied)
    writer.start()
    memory.compact()
    writer.join(120)
    assert wrote.is_set()
    assert len(memory.backend.all_ids("ana")) == 10
