"""A replica follows a store's change log: edits under the same id, deletions, and the fallbacks to a listing."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from langchain_session_rag.memory import replica as replica_module
from langchain_session_rag.memory.replica import ReplicaSource, UserReplica
from langchain_session_rag.stores.base import Record, RecordPage, fingerprint
from langchain_session_rag.stores.records import stamp


class LoggedStore:
    """Plumbing fake of a store with a change log (as ChromaBackend keeps on a server); counts its reads."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.log: dict[str, list[str] | None] = {}
        self.reads: list[str] = []

    def write(self, *records: Record, everything: bool = False) -> None:
        stamp(records)
        self.records.update({r.id: r for r in records})
        self.log[uuid.uuid4().hex] = None if everything else [r.id for r in records]

    def delete(self, *ids: str) -> None:
        for doc_id in ids:
            self.records.pop(doc_id, None)
        self.log[uuid.uuid4().hex] = list(ids)

    def touched(self, entries: Sequence[str]) -> set[str] | None:
        self.reads.append("entries")
        named = [self.log[e] for e in entries]
        return None if any(n is None for n in named) else {i for n in named if n for i in n}

    def listing(self) -> dict[str, str]:
        self.reads.append("listing")
        return {i: fingerprint(r.metadata) for i, r in self.records.items()}

    def pages(self, ids: Sequence[str]) -> list[RecordPage]:
        self.reads.append(f"pages:{len(ids)}")
        return [
            RecordPage([Record(r.id, r.text, dict(r.metadata), r.embedding) for i in ids if (r := self.records.get(i))])
        ]

    def source(self) -> ReplicaSource:
        return ReplicaSource(
            log=lambda: set(self.log),
            touched=self.touched,
            ids=lambda: list(self.records),
            listing=self.listing,
            pages=self.pages,
        )


def _note(doc_id: str, text: str) -> Record:
    return Record(doc_id, text, {"user_id": "u", "source_type": "note"}, [1.0, 0.0])


def test_an_edit_under_the_same_id_is_fetched_by_its_log_entry_alone() -> None:
    store, replica = LoggedStore(), UserReplica()
    store.write(_note("a", "my ssn is wrong"), _note("b", "other"))
    replica.sync(store.source())
    store.reads.clear()
    replica.sync(store.source())
    assert store.reads == [], "nothing changed: only the log's ids were read"
    store.write(_note("a", "my ssn is right"))
    replica.sync(store.source())
    assert replica.record("a").text == "my ssn is right"
    assert store.reads == ["entries", "pages:1"], "one entry, one record: no listing"
    store.delete("b")
    replica.sync(store.source())
    assert not replica.has("b")


def test_a_write_logged_as_everything_and_an_idle_replica_list_the_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    store, replica = LoggedStore(), UserReplica()
    store.write(_note("a", "first"))
    replica.sync(store.source())
    store.write(_note("a", "second"), everything=True)
    store.reads.clear()
    replica.sync(store.source())
    assert replica.record("a").text == "second"
    assert store.reads == ["entries", "listing", "pages:1"]
    # The log keeps entries for RETENTION seconds: a replica idle for half of it lists instead.
    store.log.clear()  # pruned
    store.records["a"] = _note("a", "third")  # written, its entry pruned since
    stamp([store.records["a"]])
    now = replica_module.time.time()
    monkeypatch.setattr(replica_module.time, "time", lambda: now + replica_module.RETENTION)
    store.reads.clear()
    replica.sync(store.source())
    assert replica.record("a").text == "third"
    assert store.reads == ["listing", "pages:1"]


def test_a_record_of_an_older_version_without_revision_is_compared_by_its_metadata() -> None:
    store, replica = LoggedStore(), UserReplica()
    old = _note("a", "stored by 0.6.0")
    store.records["a"] = old  # no revision, no log entry
    replica.sync(
        ReplicaSource(
            log=lambda: None, touched=store.touched, ids=lambda: ["a"], listing=store.listing, pages=store.pages
        )
    )
    store.reads.clear()
    source = ReplicaSource(
        log=lambda: None, touched=store.touched, ids=lambda: ["a"], listing=store.listing, pages=store.pages
    )
    replica.sync(source)
    assert store.reads == ["listing"], "same metadata: not fetched again"
    store.write(_note("a", "edited now"))
    replica.sync(source)
    assert replica.record("a").text == "edited now"
