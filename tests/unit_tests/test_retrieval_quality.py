"""Retrieval quality rules: speaker names out of the dense query, short facts that stay themselves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.memory.speakers import FREQUENT_SPEAKER_SHARE, dense_query
from langchain_session_rag.stores.base import Record

MakeMemory = Callable[..., SessionVectorMemory]


@pytest.mark.parametrize(
    ("query", "speakers", "expected"),
    [
        ("What books has Melanie read?", ["Melanie", "Caroline"], "What books has read?"),
        ("What do Melanie's kids like?", ["Melanie"], "What do kids like?"),
        ("what did melanie paint", ["Melanie"], "what did paint"),  # an all-lower-case query: any case
        ("What did MELANIE paint", ["Melanie"], "What did MELANIE paint"),  # otherwise names as written
        ("Who is in Will's will?", ["Will", "Sam"], "Who is in will?"),
        ("Will the deploy work?", ["Will", "Sam"], "Will the deploy work?"),  # an opening word, not the name
        ("How much was the electricity bill?", ["May", "Bill"], "How much was the electricity bill?"),
        ("Bill, what tariff did you find?", ["May", "Bill"], "what tariff did you find?"),
        ("Melanie's kids like what?", ["Melanie"], "kids like what?"),
        ("When did Caroline and Melanie meet?", ["Melanie", "Caroline"], "When did and meet?"),
        ("What did Mary Ann cook?", ["Mary Ann", "Mary"], "What did cook?"),  # the longest name first
        ("Did Melanieville flood?", ["Melanie"], "Did Melanieville flood?"),  # whole words only
        ("Melanie?", ["Melanie"], "Melanie?"),  # nothing left: the query as it is
        ("What books has Melanie read?", [], "What books has Melanie read?"),
        ("What did the Assistant suggest?", ["User", "Assistant"], "What did the suggest?"),
    ],
)
def test_dense_query_leaves_out_speaker_names(query: str, speakers: list[str], expected: str) -> None:
    assert dense_query(query, speakers) == expected


def _record(doc_id: str, speakers: list[str], *, source_type: str = "session") -> Record:
    meta: dict[str, Any] = {"user_id": "u", "session_id": "s", "source_type": source_type, "message_ids": "[]"}
    if speakers:
        meta["speakers"] = '["' + '", "'.join(speakers) + '"]'
    return Record(id=doc_id, text="x", metadata=meta)


def test_frequent_speakers_are_those_of_a_fifth_of_the_conversation_chunks() -> None:
    replica = UserReplica()
    replica.put([_record(f"c{i}", ["Caroline", "Melanie"]) for i in range(8)])
    replica.put([_record("b1", ["Caroline", "Bob"]), _record("n1", ["Bob"], source_type="note")])
    assert sorted(replica.speakers(FREQUENT_SPEAKER_SHARE)) == ["Caroline", "Melanie"]  # Bob: 1 chunk of 9
    replica.put([_record("b2", ["Bob"]), _record("b3", ["Bob"])])
    assert sorted(replica.speakers(FREQUENT_SPEAKER_SHARE)) == ["Bob", "Caroline", "Melanie"]  # 3 of 11
    replica.drop(["b2", "b3", "b1"])
    assert sorted(replica.speakers(FREQUENT_SPEAKER_SHARE)) == ["Caroline", "Melanie"]


_CHAT = [
    ("Caroline", "Hey Melanie, how are you doing?"),
    ("Melanie", "Hi Caroline, Melanie is doing great, thanks for asking!"),
    ("Caroline", "What did you get up to this weekend?"),
    ("Melanie", "I finished a Toni Morrison novel on the porch."),
    ("Caroline", "Melanie, you deserve a break."),
    ("Melanie", "Thanks Caroline, Melanie appreciates it."),
]


def _chat() -> list[dict[str, Any]]:
    return [
        {"role": "user" if name == "Caroline" else "assistant", "name": name, "id": f"m{i}", "content": text}
        for i, (name, text) in enumerate(_CHAT)
    ]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_speakers_name_alone_no_longer_matches(make_memory: MakeMemory, *, asynchronous: bool) -> None:
    """With the name in the dense query, every chunk that says "Melanie" passes a 0.3 similarity threshold."""
    found: dict[bool, list[list[str]]] = {}
    for strip in (True, False):
        memory = make_memory(chunking="exchange", strip_speaker_names=strip, score_threshold=0.3)
        memory.add_messages(_chat(), session_id="s1")
        query = "What books has Melanie read?"
        docs = await memory.ainvoke(query) if asynchronous else memory.invoke(query)
        found[strip] = [d.metadata["message_ids"] for d in docs]
        assert docs[0].metadata["speakers"] == ["Caroline", "Melanie"]
    assert found[True] == [["m2", "m3"]]
    assert found[False][0] == ["m2", "m3"]
    assert len(found[False]) == 3


def test_speakers_are_recorded_on_exchanges_and_segments(make_memory: MakeMemory) -> None:
    memory = make_memory()  # topic chunking: segments take the union of their exchanges' speakers
    memory.add_messages(_chat(), session_id="s1")
    stored = memory.backend.get("alice", {})
    assert stored
    for record in stored:
        assert record.metadata["speakers"] == '["Caroline", "Melanie"]'


_FACT_BATCH = [
    {"role": "user", "id": "u1", "content": "How do I pin a dependency in pyproject.toml?"},
    {"role": "assistant", "id": "a1", "content": "Write it as name==1.2.3 in the dependencies list."},
    {"role": "user", "id": "u2", "content": "My cat is called Pixel and she likes tuna."},
    {"role": "assistant", "id": "a2", "content": "Noted!"},
]


@pytest.mark.parametrize("chunking", ["exchange", "topic"])
def test_a_short_standalone_fact_stays_itself(make_memory: MakeMemory, chunking: str) -> None:
    memory = make_memory(chunking=chunking)
    memory.add_messages(_FACT_BATCH, session_id="s1")
    docs = memory.invoke("What is my cat called?", k=1)
    assert docs[0].metadata["message_ids"] == ["u2", "a2"]
    assert docs[0].metadata["exchange_count"] == 1
    if chunking == "exchange":
        assert docs[0].metadata["chunking"] == "exchange"
        assert docs[0].page_content == "User: My cat is called Pixel and she likes tuna.\nAssistant: Noted!"


def _timed(gap: timedelta) -> list[dict[str, Any]]:
    start = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    stamps = [start, start + timedelta(seconds=30), start + gap, start + gap + timedelta(seconds=30)]
    return [{**m, "timestamp": t.isoformat()} for m, t in zip(_FACT_BATCH, stamps, strict=True)]


@pytest.mark.parametrize(("gap", "merged"), [(timedelta(minutes=2), True), (timedelta(hours=3), False)])
def test_the_chunker_merges_short_exchanges_only_when_adjacent_in_time(*, gap: timedelta, merged: bool) -> None:
    chunker = ExchangeChunker(min_tokens=24)
    chunks = chunker.chunk(normalize_messages(_timed(gap), session_id="s1"))
    assert [c.exchanges for c in chunks] == ([2] if merged else [1, 1])
    assert [c.message_ids for c in chunks] == ([["u1", "a1", "u2", "a2"]] if merged else [["u1", "a1"], ["u2", "a2"]])


def test_a_merged_exchange_chunk_says_how_many_exchanges_it_holds(make_memory: MakeMemory) -> None:
    memory = make_memory(chunking="exchange", chunker=ExchangeChunker(min_tokens=24))
    memory.add_messages(_timed(timedelta(minutes=2)), session_id="s1")
    (record,) = memory.backend.get("alice", {})
    assert record.metadata["chunking"] == "exchange"
    assert record.metadata["exchange_count"] == 2


_GIT_WITH_AN_ASIDE = [
    ("How do I squash the last three commits?", "Run git rebase -i HEAD~3 and mark the later commits as squash."),
    ("My cat is called Pixel and she likes tuna.", "Noted!"),
    ("The rebase stopped with a conflict in setup.py.", "Fix the file, git add it, then git rebase --continue."),
    ("Can I undo the whole rebase?", "git rebase --abort, or git reset --hard ORIG_HEAD afterwards."),
    ("How do I push the rewritten branch?", "git push --force-with-lease."),
]


def test_a_short_fact_between_exchanges_of_another_topic_stays_itself(make_memory: MakeMemory) -> None:
    """Topic chunking with the default segmenter: the aside does not join the git segment around it."""
    memory = make_memory()
    batch = []
    for i, (question, answer) in enumerate(_GIT_WITH_AN_ASIDE):
        batch += [
            {"role": "user", "id": f"u{i}", "content": question},
            {"role": "assistant", "id": f"a{i}", "content": answer},
        ]
    memory.add_messages(batch, session_id="s1")
    stored = sorted(memory.backend.get("alice", {}), key=lambda r: int(r.metadata["chunk_index"]))
    assert [r.metadata["message_ids"] for r in stored][1] == '["u1", "a1"]'
    assert memory.invoke("What is my cat called?", k=1)[0].metadata["message_ids"] == ["u1", "a1"]
