"""Replica coherence across processes on a real Chroma server: every change is seen on the next read.

Each process holds a warm replica of the same user. One process changes a memory under the same id (forget and
re-add with new text, ``add_note`` with the same key, a re-sent message id, ``SessionMemoryStore.put`` with the
same key, a forgotten session); every other process then reads once, through a search, ``get_by_ids`` or the
store's ``get``, and must see the new text and not the old one. The processes are this one and two others of the
session (``other_processes``), each holding a ``coherence_worker.Participant``.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integration_tests.another_process import AnotherProcess
from tests.integration_tests.coherence_worker import Participant

STEPS: list[tuple[str, str]] = [
    ("forget_readd", "search"),
    ("note", "search"),
    ("resend", "search"),
    ("store_put", "store"),
    ("resend", "get_by_ids"),
    ("add_gone", "search"),
    ("forget", "search"),
]
"""(write path, read path) of each step; the steps cycle, the writing process rotates."""


class Remote:
    """A participant in another process of the session (``other_processes``), driven through its pipe."""

    def __init__(self, process: AnotherProcess, host: str, port: int, collection: str) -> None:
        self.process = process
        process.run(
            "import json\nfrom tests.integration_tests.coherence_worker import Participant\n"
            "participant = Participant(host, port, collection)",
            host=host,
            port=port,
            collection=collection,
        )

    def ask(self, **command: Any) -> Any:
        return json.loads(self.process.run("print(json.dumps(participant.ask(**command)))", command=command))


def test_every_change_is_seen_by_every_other_process_on_its_next_read(
    chroma_server: tuple[str, int], other_processes
) -> None:
    """Three processes, every step twice: by two different writers (7 steps, 3 writers), read by the other two."""
    host, port = chroma_server
    processes = 3
    collection = f"coherence{processes}"
    others = [Remote(p, host, port, collection) for p in other_processes(processes - 1)]
    workers: list[Participant | Remote] = [Participant(host, port, collection), *others]
    last: dict[str, str] = {}
    for path in ("forget_readd", "note", "resend", "store_put"):  # first versions, then warm every replica
        last[path] = f"my ssn is zq{path}seed"
        workers[0].ask(op="write", path=path, text=last[path])
    resend_ids = [i for i, text in workers[0].ask(op="read", how="search") if last["resend"] in text]
    assert len(resend_ids) == 1
    for worker in workers:
        assert worker.ask(op="read", how="search")
    seen, total, stale = 0, 0, []
    for n in range(2 * len(STEPS)):
        path, how = STEPS[n % len(STEPS)]
        writer = workers[n % processes]
        key = "add_gone" if path == "forget" else path
        old = last.get(key)
        new = None if path == "forget" else f"my ssn is zq{path}{n}"
        writer.ask(op="write", path=path, text=new or "")
        if new is not None:
            last[key] = new
        else:
            last.pop(key, None)
        for reader in workers:
            if reader is writer:
                continue
            texts = [text for _, text in reader.ask(op="read", how=how, ids=resend_ids)]
            fresh = (new is None or any(new in t for t in texts)) and not (
                old is not None and any(old in t for t in texts)
            )
            total += 1
            seen += fresh
            if not fresh:
                stale.append((path, how, old, new, texts))
    print(f"\n{processes} processes: {seen}/{total} changes seen on the next read")
    assert not stale, f"{len(stale)} of {total} reads served stale memory, e.g. {stale[0]}"
    assert seen == total
