"""TopicSegmenter and topic chunking on the real embedded model."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_core.documents import Document

from langchain_session_rag import SessionVectorMemory, TopicSegmenter
from tests.conftest import CountingEmbeddings

Factory = Callable[..., SessionVectorMemory]

THREE_TOPICS = [
    ("How do I fix 'ModuleNotFoundError: No module named requests' in my Python script?",
     "Install the package into the interpreter you run: python -m pip install requests."),
    ("I installed it but Python still raises ModuleNotFoundError for requests.",
     "Your script runs another Python interpreter than the one pip installed into; check sys.executable."),
    ("Where should the Python package folder go in my project layout, src or root?",
     "Put the package under src/ (a src layout) so tests import the installed package."),
    ("Should tests live inside the package folder or in a separate tests directory of the project?",
     "Keep tests in a top-level tests/ directory next to src/ in the project layout."),
    ("How do I deploy the web app to production on a cloud server?",
     "Build a Docker image, push it to a registry, and run it on the server behind a reverse proxy."),
    ("How do I roll back a bad production deployment of the app on the server?",
     "Keep the previous Docker image tag and redeploy it; the reverse proxy switches over."),
]  # fmt: skip


def exchanges(pairs: list[tuple[str, str]], session_id: str = "s1") -> list[Document]:
    return [
        Document(f"User: {q}\nAssistant: {a}", metadata={"session_id": session_id, "message_ids": [f"u{i}", f"a{i}"],
                                                          "timestamp": f"2026-02-0{1 + i}T10:00:00+00:00"})
        for i, (q, a) in enumerate(pairs)
    ]  # fmt: skip


def messages(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    out = []
    for i, (q, a) in enumerate(pairs):
        out += [{"role": "user", "content": q, "id": f"u{i}"}, {"role": "assistant", "content": a, "id": f"a{i}"}]
    return out


@pytest.mark.parametrize("comparison", ["centroid", "previous"])
def test_three_topics_give_three_segments(real_embeddings, comparison: str) -> None:
    segmenter = TopicSegmenter(real_embeddings, threshold=0.5, comparison=comparison)  # type: ignore[arg-type]
    segments = segmenter.transform_documents(exchanges(THREE_TOPICS))
    assert [s.metadata["message_ids"] for s in segments] == [
        ["u0", "a0", "u1", "a1"],
        ["u2", "a2", "u3", "a3"],
        ["u4", "a4", "u5", "a5"],
    ]
    assert [s.metadata["topic_index"] for s in segments] == [0, 1, 2]
    assert [s.metadata["exchange_count"] for s in segments] == [2, 2, 2]
    assert segments[1].metadata["timestamp"] == "2026-02-03T10:00:00+00:00"
    assert "boundary_similarity" not in segments[0].metadata
    assert all(s.metadata["boundary_similarity"] < 0.5 for s in segments[1:])


def test_single_topic_session_gives_one_segment(real_embeddings) -> None:
    segmenter = TopicSegmenter(real_embeddings, threshold=0.5)
    (segment,) = segmenter.transform_documents(exchanges(THREE_TOPICS[:2]))
    assert segment.metadata["message_ids"] == ["u0", "a0", "u1", "a1"]


def test_similarity_profile_matches_the_boundaries(real_embeddings) -> None:
    profile = TopicSegmenter(real_embeddings, threshold=0.5).similarity_profile(exchanges(THREE_TOPICS))
    assert len(profile.similarities) == 5
    assert profile.boundaries == [2, 4]
    assert [i + 1 for i, s in enumerate(profile.similarities) if s < 0.5] == [2, 4]


@pytest.mark.parametrize("threshold", [0, 1, -0.2, 1.5, "0.7"])
def test_out_of_range_threshold_raises(real_embeddings, threshold: object) -> None:
    with pytest.raises(ValueError, match="threshold must lie strictly between 0 and 1"):
        TopicSegmenter(real_embeddings, threshold=threshold)  # type: ignore[arg-type]


def test_limits_split_segments(real_embeddings) -> None:
    docs = exchanges(THREE_TOPICS[:2])
    assert len(TopicSegmenter(real_embeddings, threshold=0.5, max_tokens=30).transform_documents(docs)) == 2
    segs = TopicSegmenter(real_embeddings, threshold=0.99, min_exchanges=3).transform_documents(exchanges(THREE_TOPICS))
    assert [s.metadata["exchange_count"] for s in segs] == [3, 3]


async def test_async_transform_matches_sync(real_embeddings) -> None:
    segmenter = TopicSegmenter(real_embeddings, threshold=0.5)
    docs = exchanges(THREE_TOPICS)
    sync = segmenter.transform_documents(docs)
    asy = await segmenter.atransform_documents(docs)
    assert [d.metadata["message_ids"] for d in asy] == [d.metadata["message_ids"] for d in sync]


def test_topic_ingest_embeds_at_most_n_plus_segments(make_memory: Factory, real_embeddings) -> None:
    counting = CountingEmbeddings(real_embeddings)
    segmenter = TopicSegmenter(counting, threshold=0.5)
    memory = make_memory(embeddings=counting, chunking="topic", chunker_min=0, segmenter=segmenter)
    ids = memory.add_messages(messages(THREE_TOPICS), session_id="s1")
    n_exchanges, n_segments = len(THREE_TOPICS), len(ids)
    assert n_segments == 3
    assert len(counting.texts) <= n_exchanges + n_segments
    assert len(counting.texts) < 2 * n_exchanges, "fewer than the naive pipeline's 2N"
    docs = memory.invoke("python module not found", k=5)
    assert docs[0].metadata["message_ids"] == ["u0", "a0", "u1", "a1"]
    assert docs[0].metadata["chunking"] == "topic"
    before = len(counting.texts)
    assert memory.add_messages(messages(THREE_TOPICS), session_id="s1") == ids
    assert len(counting.texts) == before, "re-ingesting a stored session embeds nothing"


def covered(memory: SessionVectorMemory, session_id: str) -> list[str]:
    return sorted(m for d in memory.invoke("x", k=100, session_ids=[session_id]) for m in d.metadata["message_ids"])


def test_consolidate_reuses_vectors_and_is_idempotent(make_memory: Factory, real_embeddings) -> None:
    counting = CountingEmbeddings(real_embeddings)
    memory = make_memory(embeddings=counting, chunker_min=0, segmenter=TopicSegmenter(counting, threshold=0.5))
    msgs = messages(THREE_TOPICS)
    for i in range(0, len(msgs), 2):  # live chat: one exchange at a time
        memory.add_messages(msgs[i : i + 2], session_id="s1")
    assert memory.count() == 6
    embedded_live = len(counting.texts)
    profile = memory.similarity_profile("s1")
    assert profile.boundaries == [2, 4]
    assert len(counting.texts) == embedded_live, "the profile reuses stored vectors"
    result = memory.consolidate("s1")
    assert (result.exchanges, result.segments) == (6, 3)
    assert result.texts_embedded == 3
    assert len(counting.texts) == embedded_live + 3, "only multi-exchange segments are embedded"
    assert memory.count() == 3
    assert covered(memory, "s1") == sorted(m["id"] for m in msgs)
    assert memory.similarity_profile("s1").similarities == []
    again = memory.consolidate("s1")
    assert (again.exchanges, again.segments) == (0, 0)
    assert covered(memory, "s1") == sorted(m["id"] for m in msgs)


def test_consolidate_survives_an_interruption(
    make_memory: Factory, real_embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(chunker_min=0, segmenter=TopicSegmenter(real_embeddings, threshold=0.5))
    msgs = messages(THREE_TOPICS)
    for i in range(0, len(msgs), 2):
        memory.add_messages(msgs[i : i + 2], session_id="s1")
    backend = memory.backend

    def crash(user_id: str, ids: list[str]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(backend, "delete", crash)
    with pytest.raises(KeyboardInterrupt):
        memory.consolidate("s1")
    monkeypatch.undo()
    result = memory.consolidate("s1")
    assert result.exchanges == 6
    ids = covered(memory, "s1")
    assert ids == sorted(m["id"] for m in msgs), "every message covered exactly once"
    assert memory.count() == 3


def test_segmenter_must_share_the_memory_model(make_memory: Factory, real_embeddings) -> None:
    other = CountingEmbeddings(real_embeddings)
    with pytest.raises(ValueError, match="same object"):
        make_memory(segmenter=TopicSegmenter(other))


async def test_async_consolidate(make_memory: Factory, real_embeddings) -> None:
    memory = make_memory(chunker_min=0, segmenter=TopicSegmenter(real_embeddings, threshold=0.5))
    msgs = messages(THREE_TOPICS)
    for i in range(0, len(msgs), 2):
        await memory.aadd_messages(msgs[i : i + 2], session_id="s1")
    result = await memory.aconsolidate("s1")
    assert (result.exchanges, result.segments) == (6, 3)
    assert covered(memory, "s1") == sorted(m["id"] for m in msgs)
