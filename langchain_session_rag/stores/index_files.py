"""Zero the unused slots of Chroma's on-disk vector index files, which Chroma fills from uninitialised memory.

An embedded Chroma keeps each vector index as a folder of ``header.bin``, ``data_level0.bin`` (one fixed-size
slot per element), ``length.bin`` (one 4-byte vector length per element) and ``link_lists.bin``. When it creates
an index, and again each time a process first loads an index that was never flushed (one of fewer than 1,000
elements), it writes the two per-element files for the index's whole capacity (100 slots and up) straight from
memory it never initialised: the slots past the element count hold whatever the process's heap held, pointers and
fragments of texts it had handled, another user's or a forgotten one included (a byte scan found a secret of an
encrypted store in a fresh ``length.bin``). Chroma never reads those slots; this module overwrites them with zeros.

Only slots at or past the element count recorded in ``header.bin`` are touched, so a live index loads and
answers as before; a header of another layout is left alone (reported by :func:`scrub_index_files`).
:class:`IndexFileGuard` does it as the files are written: :class:`~langchain_session_rag.stores.chroma.ChromaBackend`
runs each of its calls on an embedded store inside :meth:`IndexFileGuard.using`, and the call's end zeroes the
slots of every index file that changed, while no other call on that folder runs in the process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from langchain_session_rag import _fork
from langchain_session_rag.stores.shared_exclusive import SharedExclusive

Layout = Callable[[], tuple[set[str] | None, set[str]]]
"""Reads the index folders of a store folder's collections (``None``: unknown) and those zeroed whole."""

_LOGGER = logging.getLogger(__name__)

# hnswlib's persistent header as Chroma writes it: a version (int32) then offsetLevel0, max_elements,
# cur_element_count, size_data_per_element (size_t each).
_HEADER = struct.Struct("<i4Q")
_LENGTH_BYTES = 4
_CHUNK = 1 << 20
_RECENT_NS = 2_000_000_000
"""A folder whose last change is less than this before the last listing is listed again: file times advance in
clock ticks, so a folder added in the tick of an earlier change leaves the folder's time as it was."""


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


def _scrub_index(header: Path, *, whole_lengths: bool = False) -> int | None:
    """Zero the unused slots of one index (its ``header.bin``); the files that held non-zero bytes there.

    ``None`` when the header has a layout this module does not know (nothing is touched). With ``whole_lengths``
    every entry of ``length.bin`` is zeroed (an index whose lengths Chroma never reads).
    """
    raw = header.read_bytes()
    if len(raw) < _HEADER.size:
        return None
    version, _offset, max_elements, count, slot = _HEADER.unpack_from(raw)
    if version != 1 or slot <= 0 or count > max_elements:
        return None
    scrubbed = 0
    for name, start in (
        ("data_level0.bin", count * slot),
        ("length.bin", 0 if whole_lengths else count * _LENGTH_BYTES),
    ):
        target = header.with_name(name)
        if target.is_file() and _zero_from(target, start):
            scrubbed += 1
    return scrubbed


def scrub_index_files(folder: str | Path) -> dict[str, int]:
    """Zero the unused slots of every vector index under ``folder``; return counts of what was found.

    Run it while no process has the folder's store open (or through :meth:`IndexFileGuard.sweep` in the one that
    has): Chroma writes these files as it adds elements.

    Returns a dict with ``indexes`` (index folders seen), ``scrubbed`` (files that held non-zero bytes in unused
    slots) and ``skipped`` (index folders whose header has a layout this function does not know).
    """
    counts = {"indexes": 0, "scrubbed": 0, "skipped": 0}
    for header in sorted(Path(folder).glob("*/header.bin")):
        counts["indexes"] += 1
        scrubbed = _scrub_index(header)
        if scrubbed is None:
            counts["skipped"] += 1
        else:
            counts["scrubbed"] += scrubbed
    return counts


class IndexFileGuard:
    """Keeps the index files of one embedded store folder free of uninitialised memory, in this process.

    Chroma calls on the folder run inside :meth:`using` (any number at once, and nested); when the outermost one
    of a thread ends, :meth:`sweep` compares every ``header.bin`` with what it last saw (inode, size, time) and,
    if one changed or appeared, waits until no call runs (new ones wait meanwhile), zeroes the new index files'
    unused slots and lets the calls go on. A sweep that finds nothing changed takes no lock, so the common call
    pays a ``stat`` per index folder. The first sweep in a process zeroes every index of the folder (a process
    that ended or crashed between Chroma's write and its sweep leaves its slots to the next one).

    Chroma rewrites a header whenever it writes the other files (it creates or loads an index, or flushes
    elements), and it fills unused slots only when it creates or first loads an index in a process: a header's
    modification time is enough to see it, even where file times advance in clock ticks.
    """

    def __init__(self, folder: str | Path) -> None:
        """A guard for ``folder`` (one per folder and process: use :func:`index_guard`)."""
        self.folder = Path(folder)
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._hands_off: set[str] | None = set()
        self._listed = (-1, 0)
        self._headers_at: list[str] = []
        self._deleted: set[str] = set()
        self._pid = os.getpid()
        """In a forked child the guard never sweeps: the parent's calls, invisible there, may be writing the files."""
        self._lock = SharedExclusive()
        """Store calls on the shared side, sweeps on the exclusive one."""

    def hands_off(self, names: Iterable[str] | None = None) -> None:
        """Leave the index folders ``names`` (all, with ``None``) to forced sweeps: other code writes to them.

        A collection handed in by the caller (a ``langchain_chroma.Chroma``) may be written to directly at any
        moment; zeroing slots while such a write flushes could zero elements it just wrote. ``compact()`` sweeps
        them (run it while your code does not write to the collection).
        """
        if names is None or self._hands_off is None:
            self._hands_off = None
        else:
            self._hands_off.update(names)

    @contextlib.contextmanager
    def using(self) -> Iterator[None]:
        """Run Chroma calls on the folder; the outermost one's end sweeps (see the class)."""
        outermost = False
        try:
            with self._lock.shared() as outermost:
                yield
        finally:
            if outermost:
                self.sweep()

    def _headers(self) -> dict[str, tuple[int, int, int]]:
        """Index folder name → (inode, size, modification time in ns) of its ``header.bin``."""
        try:
            changed = os.stat(self.folder).st_mtime_ns  # noqa: PTH116 - the hot path
            # a folder was added or removed since the last listing, or may have been within a clock tick of it
            if changed != self._listed[0] or changed > self._listed[1] - _RECENT_NS:
                listed_at = time.time_ns()
                self._headers_at = [
                    os.path.join(entry.path, "header.bin")  # noqa: PTH118
                    for entry in os.scandir(self.folder)
                    if entry.is_dir()
                ]
                self._listed = (changed, listed_at)
        except OSError:  # the folder is gone (a test's temporary folder, a store deleted by hand)
            return {}
        found: dict[str, tuple[int, int, int]] = {}
        for header in self._headers_at:
            with contextlib.suppress(OSError):  # not an index folder, or removed meanwhile
                stat = os.stat(header)  # noqa: PTH116
                found[os.path.basename(os.path.dirname(header))] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)  # noqa: PTH119, PTH120
        return found

    def sweep(self, *, force: bool = False, layout: Layout | None = None) -> int:
        """Zero the unused slots of the index files that changed since the last sweep (all with ``force``).

        Args:
            force: Every index folder, those left alone by :meth:`hands_off` included.
            layout: Read once no call runs (so no collection is created meanwhile through this package): the
                index folders of the folder's collections (``None`` when unknown) and those whose ``length.bin``
                Chroma never reads (l2 and inner-product spaces, where it writes even the live elements' entries
                from uninitialised memory: zeroed whole). An index folder of no collection whose header is older
                than the read by :data:`_RECENT_NS` is removed (a deleted collection's, with its vectors and ids).

        Returns how many files held non-zero bytes there. Inside a call (:meth:`using`), in a forked child (its
        parent may be writing), or in a folder left to forced sweeps, it does nothing.
        """
        if self._lock.held_shared or self._pid != os.getpid() or (self._hands_off is None and not force):
            return 0
        if not force and not self._deleted and self._headers() == self._seen:
            return 0
        with self._lock.exclusive():
            live: set[str] | None = None
            whole: set[str] = set()
            read_at = time.time_ns()
            if layout is not None:
                live, whole = layout()
            self._remove_orphans(live, read_at)
            current = self._headers()
            scrubbed = 0
            for name, signature in current.items():
                if not force and (self._seen.get(name) == signature or name in (self._hands_off or ())):
                    continue
                try:
                    scrubbed += _scrub_index(self.folder / name / "header.bin", whole_lengths=name in whole) or 0
                except OSError as exc:  # read-only, removed meanwhile: the call itself succeeded
                    _LOGGER.warning("Could not zero the unused slots of the index files in %s: %s", name, exc)
                    current.pop(name)  # tried again at the next sweep
            self._seen = current
            return scrubbed

    def forget(self, names: Iterable[str]) -> None:
        """Index folders of collections this process deleted: the next sweep removes them."""
        self._deleted.update(names)

    def _remove_orphans(self, live: set[str] | None, read_at: int) -> None:
        """Remove the folders :meth:`forget` named, and (given ``live``) old index folders of no collection."""
        for name in list(self._deleted):
            shutil.rmtree(self.folder / name, ignore_errors=True)
            self._deleted.discard(name)
        if live is None:
            return
        for entry in list(os.scandir(self.folder)):
            header = Path(entry.path) / "header.bin"
            with contextlib.suppress(OSError):  # not an index folder, or removed meanwhile
                if entry.name not in live and header.stat().st_mtime_ns < read_at - _RECENT_NS:
                    shutil.rmtree(entry.path, ignore_errors=True)


_GUARDS: dict[str, IndexFileGuard] = {}
_GUARDS_LOCK = _fork.lock()


def index_guard(folder: str | Path) -> IndexFileGuard:
    """The process's :class:`IndexFileGuard` of an embedded store folder (shared by every store opened on it)."""
    key = os.path.realpath(folder)
    with _GUARDS_LOCK:
        guard = _GUARDS.get(key)
        if guard is None:
            guard = _GUARDS[key] = IndexFileGuard(key)
        return guard
