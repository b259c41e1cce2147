"""A process of the cross-process coherence test: holds a warm memory on a Chroma server and obeys stdin.

Each line on stdin is a JSON command; each answer is one JSON line on stdout. Run as
``python -m tests.integration_tests.coherence_worker HOST PORT COLLECTION``.
"""

from __future__ import annotations

import json
import sys
import time
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


def main() -> None:
    """Serve commands until ``quit``."""
    host, port, collection = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    memory = SessionVectorMemory.server(
        host, port, user_id=USER, embeddings=DeterministicFakeEmbedding(size=16), collection_name=collection
    )
    store = SessionMemoryStore(memory)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "quit":
            break
        started = time.perf_counter()
        if op == "write":
            write(memory, store, command["path"], command["text"])
            answer: Any = None
        else:
            answer = read(memory, store, command["how"], command.get("ids", []))
        print(json.dumps({"answer": answer, "ms": (time.perf_counter() - started) * 1000}), flush=True)


if __name__ == "__main__":
    main()
