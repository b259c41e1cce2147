"""Chroma writes the unused slots of its vector index files from uninitialised memory; the package zeroes them."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_session_rag import SessionVectorMemory
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
