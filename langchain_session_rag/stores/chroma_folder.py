"""The stores that share an embedded Chroma folder with a store (compacted with it: they share its files)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_session_rag.stores.chroma import ChromaBackend


def neighbours(backend: ChromaBackend) -> list[str]:
    """Names of the other partitioned stores in ``backend``'s embedded folder (none on a server)."""
    if backend.persist_directory is None:
        return []
    names = {c.name if hasattr(c, "name") else str(c) for c in backend.client.list_collections()}
    base = backend.name
    stores = {n.removesuffix("-manifest") for n in names if n.endswith("-manifest")}
    return [
        store
        for store in sorted(stores)
        if store != base
        and not store.startswith(base + "-")  # the store's own companions are compacted with it
        and not base.startswith(store + "-")
        and any(n.startswith(store + "-u") and n[len(store) + 2 :].isdigit() for n in names)
    ]
