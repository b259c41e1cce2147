"""Nothing is lost: every part of every message is stored, in every chunking mode, before and after
``consolidate()``; messages over the size limit are refused whole; the chunker is linear.

Storage coverage is plumbing, so these tests embed with a deterministic fake (similarity is not asserted).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import MessageTooLargeError

_names = itertools.count()
_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _text(kind: str, tokens: int, seed: int) -> str:
    """A message of about ``tokens`` tokens: words, one long word without spaces, code fences, or lines."""
    rnd = random.Random(seed)  # noqa: S311 - reproducible text, not a secret
    if kind == "nospace":
        return "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(tokens * 3))
    words = [f"{rnd.choice(_WORDS)}{n}" for n in range(tokens // 2)]
    if kind == "code":
        body = "\n".join(" ".join(words[i : i + 8]) for i in range(0, len(words), 8))
        return f"Here is the fix:\n```python\n{body}\n```\nand a note {words[-1] if words else ''}"
    if kind == "lines":
        return "\n".join(" ".join(words[i : i + 5]) for i in range(0, len(words), 5)) or "x"
    return " ".join(words) or "x"


def _squash(text: str) -> str:
    return "".join(text.split())


def _covered(messages: list[dict[str, Any]], path: Path) -> tuple[set[str], list[str]]:
    """The message ids the export covers, and the ids of messages whose text is not all there, in order."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = {m for line in lines for m in line["metadata"]["message_ids"]}
    lost = []
    for message in messages:
        chunks = sorted(
            (line for line in lines if message["id"] in line["metadata"]["message_ids"]),
            key=lambda line: (line["metadata"]["chunk_index"], line["metadata"].get("chunk_part", 0)),
        )
        body = iter(_squash("".join(c["text"] for c in chunks)))
        if not all(ch in body for ch in _squash(message["content"])):  # every character, in order
            lost.append(message["id"])
    return ids, lost


conversation = st.lists(  # up to 16 times the chunker's 256 tokens (one 100k-token message is tested below)
    st.tuples(st.sampled_from(["words", "nospace", "code", "lines"]), st.sampled_from([1, 5, 40, 300, 1_000, 4_000])),
    min_size=2,
    max_size=6,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=conversation, chunking=st.sampled_from(["topic", "exchange"]), seed=st.integers(0, 10_000))
def test_every_character_of_every_message_is_stored(
    tmp_path: Path, spec: list[tuple[str, int]], chunking: str, seed: int
) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id=f"u{next(_names)}", embeddings=DeterministicFakeEmbedding(size=16),
        collection_name="coverage",
    )  # fmt: skip
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "id": f"m{i}", "content": _text(kind, size, seed + i)}
        for i, (kind, size) in enumerate(spec)
    ]
    returned = memory.add_messages(messages, session_id="s", chunking=chunking)  # type: ignore[arg-type]
    assert len(returned) == len(set(returned)), "every stored chunk has its own id"
    for stage in ("stored", "consolidated"):
        if stage == "consolidated":
            memory.consolidate("s")
        out = tmp_path / f"{stage}-{next(_names)}.jsonl"
        memory.export_jsonl(out)
        ids, lost = _covered(messages, out)
        assert {m["id"] for m in messages} <= ids, stage
        assert lost == [], (stage, lost)


def test_a_100k_token_message_is_stored_whole(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="big", embeddings=DeterministicFakeEmbedding(size=16)
    )
    messages = [
        {"role": "user", "id": "q", "content": "Paste the whole log, please."},
        {"role": "assistant", "id": "a", "content": _text("lines", 100_000, 1)},
    ]
    ids = memory.add_messages(messages, session_id="s")
    assert len(ids) == len(set(ids)) > 300
    assert memory.count() == len(ids)
    memory.consolidate("s")
    out = tmp_path / "x.jsonl"
    memory.export_jsonl(out)
    assert _covered(messages, out)[1] == []


def test_a_message_over_the_limit_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="big", embeddings=DeterministicFakeEmbedding(size=16),
                                       max_message_chars=10_000)  # fmt: skip
    memory.add_messages([{"role": "user", "id": "ok", "content": "keep me"}], session_id="s0")
    batch = [{"role": "user", "id": "q", "content": "fine"}, {"role": "assistant", "id": "a", "content": "x" * 10_001}]
    with pytest.raises(MessageTooLargeError, match=r"10,001 characters, over the limit of 10,000"):
        memory.add_messages(batch, session_id="s")
    assert memory.count() == 1
    assert isinstance(MessageTooLargeError("x"), ValueError)


@pytest.mark.parametrize("chunking", ["exchange", "topic"])
def test_re_adding_an_edited_message_replaces_what_was_stored(
    tmp_path: Path, real_embeddings: Any, chunking: str
) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=real_embeddings)
    conversation = [
        {"role": "user", "id": "u1", "content": "My locker code is 1111.", "timestamp": "2026-01-01T10:00:00"},
        {"role": "assistant", "id": "a1", "content": "Noted: your locker code is 1111."},
        {"role": "user", "id": "u2", "content": "Also, my bike is the blue one by the door."},
        {"role": "assistant", "id": "a2", "content": "Noted: the blue bike by the door."},
    ]
    memory.add_messages(conversation, session_id="s", chunking=chunking)  # type: ignore[arg-type]
    conversation[0]["content"] = "My locker code is 2222."
    conversation[1]["content"] = "Noted: your locker code is 2222."
    memory.add_messages(conversation, session_id="s", chunking=chunking)  # type: ignore[arg-type]
    text = " ".join(d.page_content for d in memory.invoke("What is my locker code?", k=10))
    assert "2222" in text
    assert "1111" not in text
    out = tmp_path / "x.jsonl"
    memory.export_jsonl(out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows
    for row in rows:  # every text and metadata value (not the vectors, whose digits may spell anything)
        assert "1111" not in row["text"]
        assert "1111" not in json.dumps(row["metadata"])


def test_concurrent_writers_of_one_session_get_unique_chunk_indexes(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16)
    )

    def write(n: int) -> None:
        memory.add_messages([{"role": "user", "id": f"u{n}", "content": f"Question {n}: " + "word " * 30},
                             {"role": "assistant", "id": f"a{n}", "content": f"Answer {n}: " + "word " * 30}],
                            session_id="shared", chunking="exchange")  # fmt: skip

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(write, range(40)))
    out = tmp_path / "x.jsonl"
    memory.export_jsonl(out)
    indexes = [json.loads(line)["metadata"]["chunk_index"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(indexes) == 40
    assert sorted(indexes) == list(range(40))
