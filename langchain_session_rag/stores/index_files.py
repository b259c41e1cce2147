"""Zero the unused slots of Chroma's on-disk vector index files, which Chroma fills from uninitialised memory.

An embedded Chroma keeps each vector index as a folder of ``header.bin``, ``data_level0.bin`` (one fixed-size
slot per element), ``length.bin`` (one 4-byte link count per element) and ``link_lists.bin``. The two per-element
files are written for the index's whole capacity (100 slots and up), and the slots past the element count hold
whatever the process's heap held: pointers, and fragments of texts it had handled, a forgotten one included (a
byte scan of a compacted folder found a forgotten marker in ``length.bin``). Chroma never reads those slots; this
module overwrites them with zeros, so :meth:`ChromaBackend.compact` can promise that no forgotten byte is left.

Only slots at or past the element count recorded in ``header.bin`` are touched, so a live index loads and
answers as before; a header of another layout is left alone (reported by :func:`scrub_index_files`).
"""

from __future__ import annotations

import struct
from pathlib import Path

# hnswlib's persistent header as Chroma writes it: a version (int32) then offsetLevel0, max_elements,
# cur_element_count, size_data_per_element (size_t each).
_HEADER = struct.Struct("<i4Q")
_LINK_COUNT_BYTES = 4
_CHUNK = 1 << 20


def _zero_from(path: Path, start: int) -> bool:
    """Overwrite ``path`` with zeros from byte ``start`` to its end; return whether any byte there was non-zero."""
    size = path.stat().st_size
    if start >= size:
        return False
    dirty = False
    with path.open("r+b") as handle:
        position = start
        while position < size:
            handle.seek(position)
            block = handle.read(min(_CHUNK, size - position))
            if block.count(0) != len(block):
                dirty = True
                handle.seek(position)
                handle.write(bytes(len(block)))
            position += len(block)
        handle.flush()
    return dirty


def scrub_index_files(folder: str | Path) -> dict[str, int]:
    """Zero the unused slots of every vector index under ``folder``; return counts of what was found.

    Returns a dict with ``indexes`` (index folders seen), ``scrubbed`` (files that held non-zero bytes in unused
    slots) and ``skipped`` (index folders whose header has a layout this function does not know).
    """
    counts = {"indexes": 0, "scrubbed": 0, "skipped": 0}
    for header in sorted(Path(folder).glob("*/header.bin")):
        counts["indexes"] += 1
        raw = header.read_bytes()
        if len(raw) < _HEADER.size:
            counts["skipped"] += 1
            continue
        version, _offset, max_elements, count, slot = _HEADER.unpack_from(raw)
        if version != 1 or slot <= 0 or count > max_elements:
            counts["skipped"] += 1
            continue
        for name, width in (("data_level0.bin", slot), ("length.bin", _LINK_COUNT_BYTES)):
            target = header.with_name(name)
            if target.is_file() and _zero_from(target, count * width):
                counts["scrubbed"] += 1
    return counts
