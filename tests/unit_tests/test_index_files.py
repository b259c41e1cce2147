"""Chroma writes the unused slots of its vector index files from uninitialised memory; compaction zeroes them."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.stores.index_files import scrub_index_files

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
