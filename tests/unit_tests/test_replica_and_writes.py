"""The in-process replica, the write queue, and how the memory uses them (background writes, shared state)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag._faults import acting_at
from langchain_session_rag.errors import InvalidArgumentError, StoreWriteError
from langchain_session_rag.memory.admin import user_store
from langchain_session_rag.memory.replica import ReplicaSource, UserReplica
from langchain_session_rag.memory.writes import WriteQueue
from langchain_session_rag.stores.base import Record, RecordPage, fingerprint
from tests.conftest import chroma_session, cooking_session

Factory = Callable[..., SessionVectorMemory]


def _record(doc_id: str, vector: Sequence[float], **meta: Any) -> Record:
    return Record(id=doc_id, text=f"text of {doc_id}", metadata={"user_id": "u", **meta}, embedding=list(vector))


# -- replica ---------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 29)), min_size=1, max_size=80), st.integers(1, 8))
def test_replica_dense_search_is_exact_after_any_adds_and_drops(ops: list[tuple[bool, int]], k: int) -> None:
    rng = np.random.default_rng(7)
    vectors = {f"d{i}": rng.normal(size=8) for i in range(30)}
    replica, alive = UserReplica(), set()
    for add, i in ops:
        doc_id = f"d{i}"
        if add:
            replica.put([_record(doc_id, vectors[doc_id], parity=i % 2)])
            alive.add(doc_id)
        else:
            replica.drop([doc_id])
            alive.discard(doc_id)
    query = rng.normal(size=8)

    def cos(v: np.ndarray) -> float:
        return float(v @ query / np.linalg.norm(v) / np.linalg.norm(query))

    expected = sorted(alive, key=lambda d: (-cos(vectors[d]), d))[:k]
    got = replica.dense(query.tolist(), k)
    assert [r.id for r, _ in got] == expected
    assert [s for _, s in got] == pytest.approx([cos(vectors[d]) for d in expected], abs=1e-5)
    even = [r.id for r, _ in replica.dense(query.tolist(), k, only=replica.select({"parity": 0}))]
    assert even == [d for d in sorted(alive, key=lambda d: (-cos(vectors[d]), d)) if int(d[1:]) % 2 == 0][:k]
    assert len(replica) == len(alive)


def dict_source(stored: dict[str, Record]) -> ReplicaSource:
    """A replica source over a dict of records, without a change log (listed on every sync)."""
    return ReplicaSource(
        log=lambda: None,
        touched=lambda _: None,
        ids=lambda: list(stored),
        listing=lambda: {i: fingerprint(r.metadata) for i, r in stored.items()},
        pages=lambda ids: [RecordPage([stored[i] for i in ids if i in stored])],
    )


def test_replica_sync_follows_the_store_but_keeps_writes_in_flight() -> None:
    replica = UserReplica()
    stored = {"a": _record("a", [1, 0]), "b": _record("b", [0, 1])}
    source = dict_source(stored)

    replica.sync(source)
    assert replica.select({}) == {"a", "b"}
    # c is on its way to the store, b is being deleted: a listing without c and with b changes neither.
    replica.begin(["c"], ["b"])
    replica.put([_record("c", [1, 1])])
    replica.drop(["b"])
    replica.sync(source)
    assert replica.select({}) == {"a", "c"}
    # Once settled, the store decides: here the write of c failed and the delete of b did not happen.
    replica.settle(["c"], ["b"])
    replica.sync(source)
    assert replica.select({}) == {"a", "b"}
    # A recent sync stands when max_age allows it; invalidate() forces the next one.
    del stored["a"]
    replica.sync(source, max_age=60)
    assert replica.has("a")
    replica.invalidate()
    replica.sync(source, max_age=60)
    assert not replica.has("a")


# -- write queue -----------------------------------------------------------------------------------
class RecordingBackend:
    """Plumbing fake: records store calls; fails on ids starting with 'bad'."""

    embeds_itself = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list[str]]] = []
        self.gate = threading.Event()
        self.gate.set()

    def add(self, user_id: str, records: Sequence[Record]) -> None:
        self.gate.wait(5)
        if any(r.id.startswith("bad") for r in records):
            msg = "disk full"
            raise OSError(msg)
        self.calls.append(("add", user_id, [r.id for r in records]))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        self.calls.append(("delete", user_id, list(ids)))


def _rec(doc_id: str) -> Record:
    return Record(id=doc_id, text=doc_id, metadata={})


def test_queue_merges_consecutive_writes_of_a_user_in_order() -> None:
    backend = RecordingBackend()
    queue = WriteQueue(backend, linger=3600)  # type: ignore[arg-type]
    queue.submit("u", [_rec("a")], [], detached=True)
    queue.submit("u", [_rec("b")], ["a"], detached=True)
    queue.submit("v", [_rec("x")], [], detached=True)
    queue.submit("u", [_rec("a")], [], detached=True)  # re-adds what the run deletes: not merged
    queue.flush()  # the linger is an hour: returning at all (before the suite's timeout) shows that flush ended it
    assert queue.pending == 0
    assert backend.calls == [
        ("add", "u", ["a", "b"]),
        ("delete", "u", ["a"]),
        ("add", "v", ["x"]),
        ("add", "u", ["a"]),
    ]
    assert queue.pending == 0


def test_a_waited_write_is_sent_at_once_and_carries_its_error() -> None:
    backend = RecordingBackend()
    queue = WriteQueue(backend, linger=3600)  # type: ignore[arg-type]
    queue.submit("u", [_rec("a")], []).result(timeout=600)  # an hour's linger: a waited write does not linger
    with pytest.raises(OSError, match="disk full"):
        queue.submit("u", [_rec("bad1")], []).result(timeout=5)
    queue.flush()  # a waited-for failure is its caller's, not flush's


def test_a_detached_failure_is_raised_once_by_the_next_flush() -> None:
    backend = RecordingBackend()
    seen: list[BaseException | None] = []
    queue = WriteQueue(backend, linger=0)  # type: ignore[arg-type]
    queue.submit("u", [_rec("bad1")], [], detached=True, on_done=seen.append)
    with pytest.raises(StoreWriteError, match="disk full") as info:
        queue.flush()
    assert isinstance(info.value.__cause__, OSError)
    assert len(seen) == 1
    assert isinstance(seen[0], OSError)
    queue.flush()  # raised once


def test_queue_refuses_a_negative_linger() -> None:
    with pytest.raises(ValueError, match="linger"):
        WriteQueue(RecordingBackend(), linger=-1)  # type: ignore[arg-type]


# -- the memory ------------------------------------------------------------------------------------
def test_background_write_is_retrievable_at_once_and_stored_after_flush(make_memory: Factory) -> None:
    m = make_memory()
    ids = m.add_messages(chroma_session(), session_id="s1", wait=False)
    assert [d.id for d in m.invoke("chroma collection not found", k=1)] == ids
    assert [d.id for d in m.get_by_ids([*ids, "unknown"])] == ids
    m.flush()
    assert m.backend.all_ids("alice") == ids
    assert m.count() == 1


def test_failed_background_write_is_raised_and_not_retrievable(
    make_memory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    backend = m.backend

    def broken(user_id: str, records: Sequence[Record]) -> None:
        msg = "store unavailable"
        raise RuntimeError(msg)

    monkeypatch.setattr(backend, "add", broken)
    m.add_messages(cooking_session(), session_id="s2", wait=False)
    with pytest.raises(StoreWriteError, match="store unavailable"):
        m.flush()
    monkeypatch.undo()
    assert [d.metadata["session_id"] for d in m.invoke("sourdough loaf", k=5)] == ["s1"]
    assert m.count() == 1, "the earlier memory is intact"


def test_memories_over_one_store_share_their_writes(make_memory: Factory) -> None:
    first = make_memory()
    second = SessionVectorMemory(
        chroma_client=first.chroma_client,
        collection_name=first.collection_name,
        user_id="alice",
        embeddings=first.embeddings,
    )
    assert first.invoke("anything", k=3) == []  # loads alice's (empty) replica
    second.add_messages(cooking_session(), session_id="s2", wait=False)
    assert [d.metadata["session_id"] for d in first.invoke("sourdough loaf", k=3)] == ["s2"]
    first.forget(session_id="s2")
    assert second.invoke("sourdough loaf", k=3) == []
    assert second.count() == 0


async def test_async_background_write_and_flush(make_memory: Factory) -> None:
    m = make_memory()
    ids = await m.aadd_messages(chroma_session(), session_id="s1", wait=False)
    assert [d.id for d in await m.aget_by_ids(ids)] == ids
    await m.aflush()
    assert m.backend.all_ids("alice") == ids


def test_replica_cache_evicts_least_recently_used_within_its_limits() -> None:
    from langchain_session_rag.memory.replica_cache import ReplicaCache

    cache = ReplicaCache(max_users=3, max_chunks=4)
    for user in ("a", "b", "c"):
        cache.get(user).put([_record(f"{user}1", [1, 0]), _record(f"{user}2", [0, 1])])
    # 6 chunks > 4: the least recently used (a, then b) went out, c stays even though it alone fills the cache.
    assert cache.get("c").has("c1")
    assert not cache.get("a").has("a1"), "a was evicted and comes back empty"
    busy = cache.get("b")
    busy.begin(["b9"], [])
    for user in ("d", "e", "f"):
        cache.get(user)
    assert cache.get("b") is busy, "a replica with writes in flight is never evicted"


@settings(max_examples=60, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "source_type": st.sampled_from(["session", "document"]),
            "session_id": st.one_of(st.sampled_from(["s0", "s1", "s9"]), st.just({"$in": ["s0", "s2"]})),
            "chunk_index": st.just({"$gte": 2}),
        },
    )
)
def test_replica_select_agrees_with_the_filter_semantics(where: dict[str, Any]) -> None:
    from langchain_session_rag.stores.filters import matches

    replica = UserReplica()
    for n in range(12):
        kind = "document" if n % 4 == 0 else "session"
        replica.put([_record(f"d{n}", [1, n], source_type=kind, session_id=f"s{n % 3}", chunk_index=n,
                             message_ids=f'["m{n}"]')])  # fmt: skip
    expected = {i for i in replica.select({}) if matches(replica.record(i).metadata, where)}
    assert replica.select(where) == expected


def test_a_batch_of_mixed_dimensions_is_refused_typed_and_the_replica_keeps_what_it_held() -> None:
    replica = UserReplica()
    replica.put([_record("d0", [1, 0]), _record("d1", [0, 1])])
    with pytest.raises(InvalidArgumentError, match="different dimensions"):
        replica.put([_record("d0", [1, 0, 0]), _record("d2", [0, 1])])
    assert len(replica) == 2
    assert replica.record("d0").text == "text of d0"


def test_bm25_ignores_a_term_found_in_nearly_every_chunk() -> None:
    from langchain_session_rag.memory.lexical import BM25Index

    index = BM25Index()
    for n in range(30):
        index.add(f"d{n}", f"meeting notes {n}" + (" kubernetes" if n == 7 else ""))
    assert index.scores("meeting") == {}
    assert list(index.scores("meeting kubernetes")) == ["d7"]


def test_a_chroma_vectorstore_of_the_caller_is_followed(tmp_path, real_embeddings) -> None:
    from langchain_chroma import Chroma

    store = Chroma(collection_name="mine", persist_directory=str(tmp_path / "c"), embedding_function=real_embeddings)
    m = SessionVectorMemory(vectorstore=store, user_id="alice")
    m.add_messages(chroma_session(), session_id="s1")
    assert len(m.invoke("sourdough bread", k=5)) == 1  # the replica is loaded
    # The caller writes to their own collection directly: the memory sees it on the next read.
    store.add_texts(
        ["User: How long do I bake sourdough?\nAssistant: About 40 minutes."],
        metadatas=[{"user_id": "alice", "session_id": "s2", "source_type": "session", "message_ids": '["x1"]'}],
        ids=["direct-1"],
    )
    assert m.invoke("how long to bake sourdough bread", k=1)[0].id == "direct-1"


def test_a_background_write_reaches_the_store_without_flush(make_memory: Factory) -> None:
    m = make_memory()
    ids = m.add_messages(chroma_session(), session_id="s1", wait=False)
    for _ in range(500):  # bounded: at most about 10 s
        if m.backend.all_ids("alice") == ids:
            break
        time.sleep(0.02)
    assert m.backend.all_ids("alice") == ids, "the writer thread sends it after its linger"


def test_a_write_that_finishes_while_a_sync_reads_the_store_is_kept() -> None:
    """The listing a sync reads can predate a write that begins and settles meanwhile: the write stays."""
    replica = UserReplica()
    written = _record("new", [1.0, 0.0], session_id="s", chunk_index=0)

    def slow_ids() -> list[str]:
        replica.begin(["new"], [])
        replica.put([written])
        replica.settle(["new"], [])
        return []  # the store as read before the write landed

    source = dict_source({})
    replica.sync(
        ReplicaSource(log=source.log, touched=source.touched, ids=slow_ids, listing=source.listing, pages=source.pages)
    )
    assert replica.has("new"), "a concurrent writer would otherwise number its chunk 0 again"


@pytest.mark.parametrize("where", [None, {"session_id": "s1"}], ids=["every-chunk", "filtered"])
def test_a_chunk_dropped_while_a_search_filters_is_left_out_not_a_key_error(
    tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding, where: dict[str, str] | None
) -> None:
    """A sync dropping chunks (their write failed) between the search's id snapshot and its reads: no KeyError.

    Every graph turn passes ``exclude_message_ids``, the option that makes the search read each chunk's metadata.
    """
    memory = SessionVectorMemory.local(path=tmp_path, user_id="dana", embeddings=fake_embeddings)
    sessions = {
        f"s{n}": memory.add_messages(
            [
                {"role": "user", "content": f"My plant number {n} is green."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": f"My lamp number {n} is red."},
                {"role": "assistant", "content": "Noted too."},
            ],
            session_id=f"s{n}",
            chunking="exchange",
        )
        for n in range(3)
    }
    replica = user_store(memory).replica()
    assert replica is not None
    dropped = sessions["s1"][:1]
    with acting_at("search:selected", lambda: replica.drop(dropped)):  # what the concurrent sync does there
        found = memory.invoke("plant", k=10, exclude_message_ids=["elsewhere"], **({"filter": where} if where else {}))
    ids = [d.id for d in found]
    assert dropped[0] not in ids
    expected = {i for s, held in sessions.items() if where is None or s == "s1" for i in held} - set(dropped)
    assert set(ids) == expected
