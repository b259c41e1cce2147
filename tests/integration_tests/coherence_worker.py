"""A participant of the cross-process coherence test: a warm memory on a Chroma server, obeying JSON commands.

``test_coherence_server.py`` holds one in its own process and one in each of two other processes of the session.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionMemoryStore, SessionVectorMemory

USER = "carol"
NAMESPACE = ("memories", USER)


def exchange(text: str, reply: str = "noted") -> list[dict[str, Any]]:
    """One exchange whose message ids never change (so its chunk id never changes)."""
    return [
        {"role": "user", "id": "r1", "timestamp": "2026-02-06T10:00:00", "content": text},
        {"role": "assistant", "id": "r2", "content": reply},
    ]


def write(memory: SessionVectorMemory, store: SessionMemoryStore, path: str, text: str) -> None:
    """Make one change through ``path``, all under the same ids as the previous change of that path."""
    if path == "forget_readd":
        memory.forget(session_id="s-forget")
        memory.add_messages(exchange(text), session_id="s-forget")
    elif path == "note":
        memory.add_note(text, key="ssn")
    elif path == "resend":
        memory.add_messages(exchange(text), session_id="s-resend")
    elif path == "store_put":
        store.put(NAMESPACE, "ssn", {"content": text})
    elif path == "forget":
        memory.forget(session_id="s-gone")
    elif path == "add_gone":
        memory.add_messages(exchange(text), session_id="s-gone")
    else:
        msg = f"unknown path {path!r}"
        raise ValueError(msg)


def read(memory: SessionVectorMemory, store: SessionMemoryStore, how: str, ids: list[str]) -> list[list[str]]:
    """Every (id, text) the memory gives back through ``how`` (a search, ``get_by_ids`` or the store's ``get``)."""
    if how == "search":
        return [[d.id or "", d.page_content] for d in memory.invoke("ssn", k=50)]
    if how == "get_by_ids":
        return [[d.id or "", d.page_content] for d in memory.get_by_ids(ids)]
    item = store.get(NAMESPACE, "ssn")
    return [] if item is None else [[item.key, str(item.value.get("content", ""))]]


class Participant:
    """A warm memory of ``USER`` on the server (and its store), obeying the commands a test sends."""

    def __init__(self, host: str, port: int, collection: str) -> None:
        self.memory = SessionVectorMemory.server(
            host, port, user_id=USER, embeddings=DeterministicFakeEmbedding(size=16), collection_name=collection
        )
        self.store = SessionMemoryStore(self.memory)

    def ask(self, **command: Any) -> Any:
        """Run one command (``op`` ``write`` or ``read``); its answer."""
        if command["op"] == "write":
            write(self.memory, self.store, command["path"], command["text"])
            return None
        return read(self.memory, self.store, command["how"], command.get("ids", []))
