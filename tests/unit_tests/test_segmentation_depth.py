"""TopicSegmenter's depth method (TextTiling boundaries) on the real embedded model, and its pure math."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag import TopicSegmenter
from langchain_session_rag.chunking._depth import depth_boundaries, depth_scores
from langchain_session_rag.chunking.segmenter import CALIBRATED_THRESHOLDS
from langchain_session_rag.models.embeddings import embedding_model_id
from tests.conftest import CountingEmbeddings

PYTEST_IMPORT_ERROR = [
    ("Running pytest gives 'ImportError: cannot import name parse_config from myapp.config'. Why?",
     ("The name is not defined in myapp/config.py at import time; check the spelling, or a circular import between "
     "config and the module that imports it.")),
    ("There is a circular import: config imports utils and utils imports config. How do I break it?",
     ("Move the shared helper into a third module both can import, or import inside the function that needs it "
     "instead of at the top of the file.")),
    ("Fixed that, but now pytest says 'ModuleNotFoundError: No module named myapp' in the tests folder.",
     ("Install your project in editable mode with pip install -e . or set pythonpath = src in the "
     "[tool.pytest.ini_options] section of pyproject.toml.")),
]  # fmt: skip
FRIED_RICE = [
    ("How do I make chicken fried rice that isn't mushy?",
     ("Use cold day-old rice, a very hot wok, and cook the chicken first; take it out, fry the rice in small "
     "batches, then add everything back with soy sauce.")),
    ("What goes into the sauce for chicken fried rice?",
     ("Light soy sauce for salt, a little dark soy for color, a dash of oyster sauce and sesame oil at the end; "
     "some cooks add a pinch of white pepper.")),
    ("Can I add eggs and frozen peas, and when do they go in?",
     ("Scramble the eggs first and set them aside; add the thawed peas with the rice so they heat through "
     "without turning grey.")),
]  # fmt: skip
FRIED_RICE_MORE = [
    ("Which cut of chicken stays juicy in fried rice, breast or thigh?",
     ("Thigh: it has more fat and stays tender in a hot wok. Cut it into small cubes and marinate it briefly in "
     "soy sauce and cornstarch.")),
    ("I only have freshly cooked rice. Can I still make fried rice with it tonight?",
     ("Spread the fresh rice on a tray and chill it uncovered in the fridge for an hour so the surface dries; "
     "then fry it as usual.")),
    ("How do I get that smoky restaurant flavor in fried rice at home?",
     ("That is wok hei: heat the wok until it smokes, cook small portions so it stays hot, and toss the rice so "
     "it touches the hot metal.")),
]  # fmt: skip
MAROON_BELLS = [
    ("We want to hike to Maroon Bells near Aspen in September. Do we need a reservation?",
     ("Yes, from late May to October private cars need a timed parking reservation, or you book a seat on the "
     "shuttle bus from Aspen Highlands.")),
    ("Which trail there is good for a half day with great views?",
     ("The Crater Lake trail is about 3.6 miles round trip from Maroon Lake with 700 feet of gain and views of "
     "the Bells the whole way.")),
    ("What should we pack, given the altitude and the weather there?",
     ("Layers and a rain shell for afternoon storms, sun protection, plenty of water at 10,000 feet, and start "
     "early to be off the trail before thunderstorms.")),
]  # fmt: skip
NINE = PYTEST_IMPORT_ERROR + FRIED_RICE + MAROON_BELLS


def exchanges(pairs: list[tuple[str, str]]) -> list[Document]:
    return [
        Document(f"User: {q}\nAssistant: {a}", metadata={"session_id": "s1", "message_ids": [f"u{i}", f"a{i}"]})
        for i, (q, a) in enumerate(pairs)
    ]


def ids(segments: list[Document]) -> list[list[str]]:
    return [s.metadata["message_ids"] for s in segments]


@pytest.mark.parametrize("method", [None, "depth"], ids=["default", "depth"])
def test_three_topics_give_three_segments_at_the_defaults(real_embeddings, method: str | None) -> None:
    segments = list(TopicSegmenter(real_embeddings, method=method).transform_documents(exchanges(NINE)))
    assert ids(segments) == [
        ["u0", "a0", "u1", "a1", "u2", "a2"],
        ["u3", "a3", "u4", "a4", "u5", "a5"],
        ["u6", "a6", "u7", "a7", "u8", "a8"],
    ]


@pytest.mark.parametrize(
    "pairs", [FRIED_RICE, FRIED_RICE + FRIED_RICE_MORE, PYTEST_IMPORT_ERROR, MAROON_BELLS], ids=["3", "6", "py", "hike"]
)
@pytest.mark.parametrize("method", [None, "depth"], ids=["default", "depth"])
def test_one_topic_stays_one_segment(real_embeddings, pairs: list[tuple[str, str]], method: str | None) -> None:
    (segment,) = TopicSegmenter(real_embeddings, method=method).transform_documents(exchanges(pairs))
    assert segment.metadata["exchange_count"] == len(pairs)


K8S_ROLLOUT = [
    ("My new deployment is stuck at 0/3 ready pods.", "Run kubectl describe pod on one of them; the Events section usually says why (image pull, probes, scheduling)."),
    ("Events say the readiness probe fails with connection refused.", "The app may listen on another port than the probe targets, or it needs longer to start; check containerPort and initialDelaySeconds."),
    ("It was the port, fixed. Now one pod gets OOMKilled.", "Raise the memory limit or lower the heap; set requests close to real usage so the scheduler places it sensibly."),
    ("How do I see how much memory it actually uses?", "kubectl top pod, once metrics-server is installed, or the container_memory_working_set_bytes metric in Prometheus."),
    ("Can I roll back if the new version misbehaves?", "kubectl rollout undo deployment/NAME goes back one revision; add --to-revision for an older one."),
    ("And how do I make the rollout slower next time?", "Set strategy.rollingUpdate.maxSurge and maxUnavailable low, and add minReadySeconds."),
]  # fmt: skip


def test_a_one_topic_session_is_not_cut_at_its_edge(real_embeddings) -> None:
    """The last gap's block holds one exchange: its score runs low and its one-sided depth (0.38) passed the limit."""
    segmenter = TopicSegmenter(real_embeddings, method="depth")
    profile = segmenter.similarity_profile(exchanges(K8S_ROLLOUT))
    assert profile.depths[-1] > segmenter.min_depth
    (segment,) = segmenter.transform_documents(exchanges(K8S_ROLLOUT))
    assert segment.metadata["exchange_count"] == 6


def test_edge_gaps_are_cut_only_below_the_floor() -> None:
    shallow = [0.6, 0.62, 0.6, 0.61, 0.3]  # the last gap: a one-sided valley of depth 0.31, score above the floor
    assert depth_scores(shallow)[-1] == pytest.approx(0.31)
    assert (
        depth_boundaries(shallow, depth_scores(shallow), cutoff=0.5, min_depth=0.25, floor=0.1, min_exchanges=1) == []
    )
    unrelated = [0.05, 0.6, 0.62, 0.6, 0.61]  # the first exchange shares nothing with the rest
    assert depth_boundaries(
        unrelated, depth_scores(unrelated), cutoff=0.5, min_depth=0.25, floor=0.1, min_exchanges=1
    ) == [1]


def test_the_bundled_model_gets_its_calibrated_threshold_and_other_models_the_depth_method(real_embeddings) -> None:
    default = TopicSegmenter(real_embeddings)
    assert (default.method, default.threshold, default.comparison) == ("threshold", 0.15, "centroid")
    assert CALIBRATED_THRESHOLDS[embedding_model_id(real_embeddings)] == 0.15
    (segment,) = default.transform_documents(exchanges(K8S_ROLLOUT))  # the depth method cuts it (test above)
    assert segment.metadata["segmentation"] == "threshold"

    class Renamed(Embeddings):  # the same vectors under another model id: nothing calibrated
        model_id = "some-other-model"

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return real_embeddings.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return real_embeddings.embed_query(text)

    other = TopicSegmenter(Renamed())
    assert other.method == "depth"
    assert [s.metadata["exchange_count"] for s in other.transform_documents(exchanges(NINE))] == [3, 3, 3]


def test_the_threshold_method_remains_reachable(real_embeddings) -> None:
    docs = exchanges(NINE)
    old = TopicSegmenter(real_embeddings, threshold=0.7, comparison="centroid", method="threshold")
    segments = old.transform_documents(docs)
    assert len(segments) >= 6, "the absolute 0.7 threshold over-splits with all-MiniLM-L6-v2"
    assert {s.metadata["segmentation"] for s in segments} == {"threshold"}
    profile = old.similarity_profile(docs)
    assert profile.method == "threshold"
    assert profile.depths == []
    assert profile.boundaries == [i + 1 for i, s in enumerate(profile.similarities) if s < 0.7]


def test_callers_that_give_a_threshold_keep_the_threshold_method(real_embeddings) -> None:
    docs = exchanges(NINE)
    explicit = TopicSegmenter(real_embeddings, threshold=0.7, comparison="centroid", method="threshold")
    for kwargs in ({"threshold": 0.7, "comparison": "centroid"}, {"threshold": 0.7}, {"comparison": "centroid"}):
        segmenter = TopicSegmenter(real_embeddings, min_exchanges=1, max_tokens=None, **kwargs)  # type: ignore[arg-type]
        assert segmenter.method == "threshold"
        assert ids(list(segmenter.transform_documents(docs))) == ids(list(explicit.transform_documents(docs)))
    depth = TopicSegmenter(real_embeddings, threshold=0.7, method="depth")
    assert len(depth.transform_documents(docs)) == 3


def test_metadata_says_how_each_segment_was_made(real_embeddings) -> None:
    segmenter = TopicSegmenter(real_embeddings, method="depth")
    segments = segmenter.segment(exchanges(NINE))
    metas = [s.document.metadata for s in segments]
    assert [m["segmentation"] for m in metas] == ["depth"] * 3
    assert "boundary_depth" not in metas[0]
    assert "boundary" not in metas[0]
    for segment, meta in zip(segments[1:], metas[1:], strict=True):
        assert meta["boundary"] == "topic"
        assert meta["boundary_depth"] == segment.boundary_depth
        assert meta["boundary_depth"] > segmenter.min_depth
    profile = segmenter.similarity_profile(exchanges(NINE))
    assert profile.method == "depth"
    assert profile.boundaries == profile.topic_boundaries == [3, 6]
    assert [metas[1]["boundary_depth"], metas[2]["boundary_depth"]] == [profile.depths[2], profile.depths[5]]
    assert [metas[1]["boundary_similarity"], metas[2]["boundary_similarity"]] == [
        profile.similarities[2],
        profile.similarities[5],
    ]


def test_max_tokens_boundaries_are_marked(real_embeddings) -> None:
    segmenter = TopicSegmenter(real_embeddings, method="depth", max_tokens=60)
    segments = segmenter.transform_documents(exchanges(NINE))
    reasons = [s.metadata.get("boundary") for s in segments]
    assert reasons[0] is None
    assert "max_tokens" in reasons
    assert reasons.count("topic") == 2
    assert all(s.metadata["token_count"] <= 60 or s.metadata["exchange_count"] == 1 for s in segments)


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([PYTEST_IMPORT_ERROR[2], FRIED_RICE[0]], [["u0", "a0"], ["u1", "a1"]]),
        (FRIED_RICE[:2], [["u0", "a0", "u1", "a1"]]),
        ([PYTEST_IMPORT_ERROR[2], *FRIED_RICE[:2]], [["u0", "a0"], ["u1", "a1", "u2", "a2"]]),
        ([*FRIED_RICE[1:], MAROON_BELLS[0]], [["u0", "a0", "u1", "a1"], ["u2", "a2"]]),
    ],
    ids=["two-topics-of-one", "one-topic-of-two", "1+2", "2+1"],
)
def test_short_sessions_fall_back_to_the_floor(real_embeddings, pairs, expected: list[list[str]]) -> None:
    segmenter = TopicSegmenter(real_embeddings)
    assert ids(list(segmenter.transform_documents(exchanges(pairs)))) == expected
    profile = segmenter.similarity_profile(exchanges(pairs))
    cut = [i + 1 for i, s in enumerate(profile.similarities) if s < segmenter.floor]
    assert profile.boundaries == cut


def test_depth_embeds_each_text_once(real_embeddings) -> None:
    counting = CountingEmbeddings(real_embeddings)
    segments = TopicSegmenter(counting).segment(exchanges(NINE))
    assert len(counting.texts) == len(NINE) + 3, "nine exchanges, then the three multi-exchange segments"
    assert segments[0].texts_embedded == len(NINE) + 3
    stored = counting.embed_documents([d.page_content for d in exchanges(NINE)])
    before = len(counting.texts)
    TopicSegmenter(counting).segment(exchanges(NINE), stored)
    assert len(counting.texts) == before + 3, "given vectors, only the segments are embedded"


async def test_async_depth_matches_sync(real_embeddings) -> None:
    segmenter = TopicSegmenter(real_embeddings)
    docs = exchanges(NINE)
    assert ids(list(await segmenter.atransform_documents(docs))) == ids(list(segmenter.transform_documents(docs)))


def test_depth_scores_by_hand() -> None:
    scores = [0.8, 0.2, 0.6, 0.5, 0.9]
    assert depth_scores(scores) == pytest.approx([0.0, 1.0, 0.0, 0.5, 0.0])
    assert depth_scores([0.4]) == [0.0]
    assert depth_scores([0.9, 0.3]) == pytest.approx([0.0, 0.6])


def test_a_flat_profile_is_not_cut_only_because_depth_is_relative() -> None:
    scores = [0.9, 0.85, 0.9, 0.86, 0.9]
    depths = depth_scores(scores)
    relative_only = depth_boundaries(scores, depths, cutoff=1.0, min_depth=0.0, floor=0.1, min_exchanges=1)
    assert relative_only == [2], "relative to itself, the flat session has a deepest valley"
    assert depth_boundaries(scores, depths, cutoff=1.0, min_depth=0.25, floor=0.1, min_exchanges=1) == []


def test_min_exchanges_keeps_the_deeper_of_two_close_valleys() -> None:
    scores = [0.9, 0.9, 0.1, 0.5, 0.3, 0.9, 0.9]  # valleys at gaps 3 (depth 1.2) and 5 (depth 0.8)
    depths = depth_scores(scores)
    assert depths == pytest.approx([0.0, 0.0, 1.2, 0.0, 0.8, 0.0, 0.0])
    assert depth_boundaries(scores, depths, cutoff=-1.0, min_depth=0.1, floor=0.1, min_exchanges=2) == [3, 5]
    assert depth_boundaries(scores, depths, cutoff=-1.0, min_depth=0.1, floor=0.1, min_exchanges=3) == [3]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"method": "tiling"}, "method"),
        ({"window": 0}, "window"),
        ({"window": 1.5}, "window"),
        ({"depth_cutoff": 3.5}, "depth_cutoff"),
        ({"depth_cutoff": float("nan")}, "depth_cutoff"),
        ({"min_depth": -0.1}, "min_depth"),
        ({"min_depth": 4}, "min_depth"),
        ({"min_depth": True}, "min_depth"),
        ({"floor": 1.5}, "floor"),
        ({"floor": "0.1"}, "floor"),
    ],
)
def test_out_of_range_depth_arguments_raise(real_embeddings, kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must .*got {kwargs[name]!r}"):
        TopicSegmenter(real_embeddings, **kwargs)  # type: ignore[arg-type]
