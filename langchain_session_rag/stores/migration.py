"""Crash-safe rebuilds of a Chroma store: re-embedding with a new model, and compaction (erasure).

A rebuild copies every data collection to ``<name>-next`` (re-embedding the texts, or keeping the vectors),
verifies each copy (the same ids), and only then switches: the old collection is deleted and the copy renamed.
The manifest records the phase (``copy`` or ``switch``), so a process killed at any moment leaves a store that
the next open repairs: during ``copy`` the old collections are intact and the partial copies are dropped;
during ``switch`` every copy is complete, and the switch is finished. The old model keeps working until the
switch; nothing is deleted before its copy is complete and verified. The crash tests kill a rebuild at the
named points of :mod:`langchain_session_rag._faults` (``rebuild:copy-page``, ``rebuild:copied``,
``rebuild:switch``, ``rebuild:switched-one``).

Compaction then runs ``chroma vacuum`` (Chroma's own command) on an embedded store: deleted records leave
Chroma's write-ahead log only when their collection is rebuilt, and SQLite's free pages only on a vacuum.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_session_rag._faults import fault_point
from langchain_session_rag.errors import StoreWriteError, UnsupportedOperationError
from langchain_session_rag.stores.chroma_calls import forget_indexes, store_lock

if TYPE_CHECKING:
    from langchain_session_rag.stores.chroma import ChromaBackend

NEXT_SUFFIX = "-next"
MIGRATION_KEY = "migration"
PAGE = 2000
Embed = Callable[[list[str]], list[list[float]]]


def _state(backend: ChromaBackend) -> dict[str, Any] | None:
    raw = backend.manifest.get(MIGRATION_KEY) or ""
    return json.loads(raw) if raw else None


def _set_state(backend: ChromaBackend, state: dict[str, Any] | None) -> None:
    backend.update_manifest({MIGRATION_KEY: json.dumps(state) if state else ""})


def _drop_copies(backend: ChromaBackend, sources: list[str]) -> None:
    with backend.guarded():
        existing = backend.collection_names()
        for name in sources:
            if name + NEXT_SUFFIX in existing:
                forget_indexes(backend, name + NEXT_SUFFIX)
                backend.client.delete_collection(name + NEXT_SUFFIX)


def _switch(backend: ChromaBackend, sources: list[str]) -> None:
    """Replace each source by its complete copy (idempotent: a re-run finishes what a killed run began)."""
    for name in sources:
        with backend.guarded():
            existing = backend.collection_names()
            if name + NEXT_SUFFIX not in existing:
                continue  # switched already
            if name in existing:
                forget_indexes(backend, name)
                backend.client.delete_collection(name)
            backend.client.get_collection(name + NEXT_SUFFIX).modify(name=name)
        fault_point("rebuild:switched-one")


def recover(backend: ChromaBackend) -> None:
    """Repair a store left by an interrupted rebuild (nothing to do when none was)."""
    state = _state(backend)
    if state is None:
        return
    sources = list(state.get("sources", []))
    if state.get("phase") == "switch":
        _switch(backend, sources)
        if state.get("model"):
            backend.set_model(str(state["model"]), int(state.get("dim", -1)))
    else:
        _drop_copies(backend, sources)
    _set_state(backend, None)
    backend.collections_changed()


def _copy(backend: ChromaBackend, name: str, embed: Embed | None, model_id: str | None) -> tuple[int, int | None]:
    """Copy one collection to ``name-next`` (re-embedded when ``embed`` is given) and verify it."""
    client = backend.client
    with backend.guarded():  # each step of the copy is one call of the index guard; the embedding runs outside
        source = client.get_collection(name)
        config: Any = {"hnsw": {"space": backend.space_of(source)}}
        target = client.create_collection(name + NEXT_SUFFIX, configuration=config)
    dimension: int | None = None
    copied = 0
    while True:
        with backend.guarded():
            page: Any = source.get(include=["documents", "metadatas", "embeddings"], limit=PAGE, offset=copied)
        ids = list(page["ids"])
        if not ids:
            break
        docs = [d or "" for d in page["documents"]]
        metas: Any = [dict(m or {}) for m in page["metadatas"]]
        vectors: Any = embed(docs) if embed is not None else page["embeddings"]
        if len(vectors):
            dimension = len(vectors[0])
        if model_id is not None:
            for meta in metas:
                meta["embedding_model"] = model_id
        for start in range(0, len(ids), backend.max_batch):
            end = start + backend.max_batch
            with backend.guarded():
                target.add(ids=ids[start:end], documents=docs[start:end], metadatas=metas[start:end],
                           embeddings=vectors[start:end])  # fmt: skip
        copied += len(ids)
        fault_point("rebuild:copy-page")
    with backend.guarded():
        same = set(target.get(include=[])["ids"]) == set(source.get(include=[])["ids"])
    if not same:
        msg = f"The copy of collection {name!r} does not hold the same ids; the store was left unchanged."
        raise StoreWriteError(msg)
    return copied, dimension


def rebuild(backend: ChromaBackend, *, embed: Embed | None = None, model_id: str | None = None) -> int:
    """Copy, verify and switch every data collection of the store; return the number of records copied.

    Args:
        backend: The store.
        embed: Re-embeds texts (a re-embedding); ``None`` keeps the stored vectors (a compaction).
        model_id: The model to record after a re-embedding.
    """
    with store_lock(backend).exclusive():  # a write after a collection's copy was checked would be deleted with it
        recover(backend)
        sources = [c.name for c in backend.all_collections()]
        _set_state(backend, {"phase": "copy", "sources": sources})
        total, dimension = 0, None
        try:
            _drop_copies(backend, sources)
            for name in sources:
                copied, dim = _copy(backend, name, embed, model_id)
                total += copied
                dimension = dim if dim is not None else dimension
            fault_point("rebuild:copied")
        except BaseException:
            _drop_copies(backend, sources)  # the old store is intact: leave it as it was
            _set_state(backend, None)
            raise
        state: dict[str, Any] = {"phase": "switch", "sources": sources}
        if model_id is not None:
            state.update({"model": model_id, "dim": dimension if dimension is not None else -1})
        _set_state(backend, state)
        fault_point("rebuild:switch")
        recover(backend)  # performs the switch, records the model, clears the state
        return total


def vacuum(path: str | Path) -> None:
    """Run ``chroma vacuum`` on an embedded store folder: purge applied log entries and rebuild the file.

    Raises:
        UnsupportedOperationError: The ``chroma`` command is not installed, or the vacuum failed.
    """
    command = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(command).exists():
        msg = "The `chroma` command (installed with chromadb) was not found, so the store could not be vacuumed."
        raise UnsupportedOperationError(msg)
    done = subprocess.run(  # noqa: S603 - our own argument list, no shell
        [command, "vacuum", "--path", str(path), "--force", "--timeout", "60"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        msg = f"`chroma vacuum --path {path}` failed: {(done.stderr or done.stdout).strip()[-500:]}"
        raise UnsupportedOperationError(msg)
