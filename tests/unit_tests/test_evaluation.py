"""The LoCoMo evaluation: loading (and refusing) LoCoMo's JSON, the recall arithmetic, and a run on the bundled sample."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.errors import (
    FileAccessError,
    InvalidArgumentError,
    InvalidMessageError,
    UnknownOptionError,
)
from langchain_session_rag.evaluation import (
    LocomoConversation,
    LocomoQuestion,
    LocomoReport,
    LocomoSession,
    evaluate_locomo,
    load_locomo,
)
from langchain_session_rag.evaluation.locomo import (
    prompt_tokens,
    recall_table,
    recall_within_budget,
    score_question,
)
from langchain_session_rag.evaluation.locomo_data import CATEGORIES

Run = tuple[LocomoReport, list[tuple[int, int]], Path]
SAMPLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "locomo_sample.json"
"""LoCoMo conv-26, sessions 1-4 (CC BY-NC 4.0)."""


def raw_sample() -> list[dict[str, Any]]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def write(tmp_path: Path, data: object, name: str = "locomo.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def words(text: str) -> int:
    """A token counter whose arithmetic is easy to follow: one token a word."""
    return len(text.split())


# -- loading ----------------------------------------------------------------------------------
def test_the_bundled_sample_loads_as_sessions_of_messages_with_dia_ids() -> None:
    raw = raw_sample()[0]
    [conv] = load_locomo(SAMPLE)
    assert conv.sample_id == "conv-26"
    assert conv.speakers == (raw["conversation"]["speaker_a"], raw["conversation"]["speaker_b"])
    assert [s.session_id for s in conv.sessions] == ["session_1", "session_2", "session_3", "session_4"]
    for session in conv.sessions:
        turns = raw["conversation"][session.session_id]
        assert [m["id"] for m in session.messages] == [t["dia_id"] for t in turns]
        assert {m["timestamp"] for m in session.messages} == {session.date.isoformat()}
    first = conv.sessions[0].messages[0]
    assert first == {
        "role": "user",
        "name": raw["conversation"]["speaker_a"],
        "id": "D1:1",
        "content": raw["conversation"]["session_1"][0]["text"],
        "timestamp": "2023-05-08T13:56:00+00:00",
    }
    assert conv.sessions[0].messages[1]["role"] == "assistant"
    assert len(conv.questions) == len(raw["qa"])
    assert {q.category for q in conv.questions} == set(CATEGORIES.values())
    assert all(set(q.evidence) <= conv.turn_ids for q in conv.questions)


def test_evidence_is_normalised_to_known_turns_and_photos_are_described(tmp_path: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:05 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a dog"},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "Cute."},
            ],
            "session_2_date_time": "",
            "session_2": [],  # an empty session is skipped, as LoCoMo's unused slots are
        },
        "qa": [
            {"question": "What did Bob show?", "category": 4, "evidence": ["D1:03", "D:1:2; D1:1", "D9:9", "D1:3"]},
            {"question": "Unanswerable?", "category": "5"},
        ],
    }
    [conv] = load_locomo(write(tmp_path, [sample]))
    assert [s.session_id for s in conv.sessions] == ["session_1"]
    assert conv.sessions[0].messages[1]["content"] == "Look! [shares a photo: a photo of a dog]"
    assert conv.questions == [
        LocomoQuestion(question="What did Bob show?", category="single", evidence=("D1:3", "D1:2", "D1:1")),
        LocomoQuestion(question="Unanswerable?", category="adv", evidence=()),
    ]


def test_a_missing_file_or_a_folder_is_a_file_access_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(FileAccessError, match=r"nope\.json"):
        load_locomo(missing)
    with pytest.raises(FileAccessError, match="Cannot read the LoCoMo file"):
        load_locomo(tmp_path)


def test_truncated_json_is_an_invalid_message_error_naming_the_file(tmp_path: Path) -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    path = tmp_path / "truncated.json"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(InvalidMessageError, match=r"truncated\.json: not valid JSON") as caught:
        load_locomo(path)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_utf8_is_an_invalid_message_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"sample_id": "café"}]'.encode("latin-1"))
    with pytest.raises(InvalidMessageError, match=r"latin1\.json: not UTF-8"):
        load_locomo(path)


def test_a_sample_without_conversation_is_named_in_the_error(tmp_path: Path) -> None:
    data = raw_sample()
    del data[0]["conversation"]
    path = write(tmp_path, data)
    with pytest.raises(InvalidMessageError) as caught:
        load_locomo(path)
    assert type(caught.value) is InvalidMessageError
    message = str(caught.value)
    assert str(path) in message
    assert "sample 0 (conv-26) has no 'conversation' key" in message


def _drop(keys: tuple[str, ...]) -> Callable[[list[dict[str, Any]]], None]:
    def edit(data: list[dict[str, Any]]) -> None:
        target: Any = data[0]
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        del target[keys[-1]]

    return edit


def _set(keys: tuple[str, ...], value: object) -> Callable[[list[dict[str, Any]]], None]:
    def edit(data: list[dict[str, Any]]) -> None:
        target: Any = data[0]
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_drop(("qa",)), "(conv-26) has no 'qa' key"),
        (_drop(("conversation", "speaker_b")), "(conv-26) has no 'speaker_b' key"),
        (_drop(("conversation", "session_2_date_time")), "(conv-26) has no 'session_2_date_time' key"),
        (_set(("conversation", "session_3_date_time"), "yesterday"), "session_3_date_time 'yesterday' is not"),
        (_drop(("conversation", "session_1", "4", "dia_id")), "(conv-26) session_1 turn 4 has no 'dia_id' key"),
        (_set(("conversation", "session_2"), "hello"), "(conv-26): 'session_2' is a str"),
        (_drop(("qa", "7", "question")), "(conv-26) question 7 has no 'question' key"),
        (_set(("qa", "2", "category"), 9), "(conv-26) question 2: category 9 is none of LoCoMo's"),
        (_set(("qa", "2", "evidence"), 3), "(conv-26) question 2: 'evidence' is a int"),
        (_drop(("sample_id",)), "sample 0 has no 'sample_id' key"),
    ],
)
def test_every_shape_error_names_the_sample_and_the_key(
    tmp_path: Path, edit: Callable[[list[dict[str, Any]]], None], expected: str
) -> None:
    data = copy.deepcopy(raw_sample())
    edit(data)
    path = write(tmp_path, data)
    with pytest.raises(InvalidMessageError) as caught:
        load_locomo(path)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("data", [{"sample_id": "conv-26"}, [], ["conv-26"]])
def test_json_that_is_not_a_list_of_samples_is_refused(tmp_path: Path, data: object) -> None:
    with pytest.raises(InvalidMessageError, match=r"locomo\.json"):
        load_locomo(write(tmp_path, data))


# -- scoring ----------------------------------------------------------------------------------
def ranked() -> list[Document]:
    """Three retrieved chunks, best first; with the marker they cost 4, 6 and 2 words."""
    return [
        Document("one two three", metadata={"marker": "[S:2023-05-08]", "message_ids": ["D1:1", "D1:2"]}),
        Document("a b c d e", metadata={"marker": "[S:2023-05-08]", "message_ids": ["D1:3"]}),
        Document("x", metadata={"marker": "[S:2023-06-09]", "message_ids": '["D2:1"]'}),  # as a store may return it
    ]


EVIDENCE = {"D1:2", "D2:1", "D3:5"}  # D3:5 is never retrieved


def test_prompt_tokens_count_marker_and_text_or_the_text_only() -> None:
    assert prompt_tokens(ranked(), words) == [4, 6, 2]
    assert prompt_tokens(ranked(), words, with_marker=False) == [3, 5, 1]


def test_score_question_exact_recall_at_k_and_within_budgets() -> None:
    scores = score_question(EVIDENCE, ranked(), words, ks=(1, 2, 3), budgets=(3, 4, 8, 12))
    assert scores == {
        "k1": 1 / 3,  # D1:2
        "k2": 1 / 3,
        "k3": 2 / 3,  # and D2:1
        "t3": 0.0,  # the first chunk (4) does not fit: nothing
        "t4": 1 / 3,
        "t8": 1 / 3,  # 4 + 6 > 8 stops there, although the third chunk (2) would fit: whole chunks in rank order
        "t12": 2 / 3,
    }


def test_score_question_counts_text_only_when_asked() -> None:
    scores = score_question(EVIDENCE, ranked(), words, ks=(1,), budgets=(3, 9), with_markers=False)
    assert scores == {"k1": 1 / 3, "t3": 1 / 3, "t9": 2 / 3}  # text costs 3, 5, 1: the marker is not counted


def test_recall_within_budget_with_text_only_costs() -> None:
    text_costs = prompt_tokens(ranked(), words, with_marker=False)
    assert recall_within_budget(EVIDENCE, ranked(), text_costs, 8) == 1 / 3
    assert recall_within_budget(EVIDENCE, ranked(), text_costs, 9) == 2 / 3


def test_recall_table_is_percent_per_category_in_table_order_and_overall() -> None:
    rows = [
        {"category": "multi", "t": 0.0},
        {"category": "single", "t": 1.0},
        {"category": "single", "t": 0.5},
        {"category": "temporal", "t": 1 / 3},
    ]
    table = recall_table(rows, "t")
    assert table == {"single": 75.0, "multi": 0.0, "temporal": 33.3, "overall": 45.8}
    assert list(table) == ["single", "multi", "temporal", "overall"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: score_question(set(), ranked(), words),
        lambda: score_question(EVIDENCE, ranked(), words, ks=(0,)),
        lambda: score_question(EVIDENCE, ranked(), words, budgets=()),
        lambda: recall_within_budget(EVIDENCE, ranked(), [1, 2], 10),
        lambda: recall_table([], "t5"),
        lambda: recall_table([{"category": "single"}], "t5"),
    ],
)
def test_scoring_refuses_what_it_cannot_score(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidArgumentError):
        call()


# -- the evaluation ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory, real_embeddings: Any) -> Run:
    calls: list[tuple[int, int]] = []
    folder = tmp_path_factory.mktemp("locomo-stores")
    report = evaluate_locomo(
        load_locomo(SAMPLE),
        path=folder,
        embeddings=real_embeddings,
        progress=lambda done, total: calls.append((done, total)),
        source=SAMPLE.name,
    )
    return report, calls, folder


def test_the_sample_run_reports_every_question_with_evidence(sample_run: Run) -> None:
    report, calls, _ = sample_run
    with_evidence = sum(1 for qa in raw_sample()[0]["qa"] if qa.get("evidence"))
    assert report.questions == with_evidence == 50
    assert report.conversations == ["conv-26"]
    assert report.data == "locomo_sample.json (conv-26; 76 turns, 50 questions with evidence)"
    assert calls == [(n, with_evidence) for n in range(1, with_evidence + 1)]
    assert report.chunks > 0
    assert report.mean_chunk_tokens > 0


def test_the_sample_run_tables_hold_sane_recall(sample_run: Run) -> None:
    report, _, _ = sample_run
    assert list(report.recall_at_k) == [1, 5, 10, 25]
    assert list(report.recall_at_tokens) == [256, 512, 1024]
    for table in (*report.recall_at_k.values(), *report.recall_at_tokens.values()):
        assert set(table) == {*CATEGORIES.values(), "overall"}  # the sample has questions of every category
        assert all(0 <= value <= 100 for value in table.values())
        assert all(value == round(value, 1) for value in table.values())
    overall_k = [report.recall_at_k[k]["overall"] for k in (1, 5, 10, 25)]
    assert overall_k == sorted(overall_k)  # more chunks never cover less
    assert report.recall_at_tokens[1024]["overall"] >= report.recall_at_tokens[256]["overall"]
    # The ids of retrieved chunks are the dia_ids: a broken mapping would score near 0.
    assert report.recall_at_tokens[1024]["overall"] >= 50


def test_the_report_is_json_data_and_the_stores_are_removed(sample_run: Run) -> None:
    report, _, folder = sample_run
    data = report.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["recall_at_tokens"]["512"] == report.recall_at_tokens[512]
    assert list(folder.iterdir()) == []


def small_conversation(sample_id: str = "conv-1") -> LocomoConversation:
    messages = [
        {"role": "user", "name": "Ann", "id": "D1:1", "content": "I adopted a greyhound called Pixel."},
        {"role": "assistant", "name": "Bob", "id": "D1:2", "content": "Lovely! How old is Pixel?"},
        {"role": "user", "name": "Ann", "id": "D1:3", "content": "Three. We run by the river every morning."},
        {"role": "assistant", "name": "Bob", "id": "D1:4", "content": "I should start running too."},
    ]
    sessions = [
        LocomoSession(session_id="session_1", date=datetime(2024, 3, 2, 9, 5, tzinfo=timezone.utc), messages=messages)
    ]
    questions = [
        LocomoQuestion("What is the name of Ann's dog?", "single", ("D1:1",)),
        LocomoQuestion("Where does Ann run?", "single", ("D1:3",)),
        LocomoQuestion("No evidence?", "adv", ()),
    ]
    return LocomoConversation(sample_id, ("Ann", "Bob"), sessions, questions)


def test_memory_options_configure_the_memory(tmp_path: Path, real_embeddings: Any) -> None:
    default = evaluate_locomo([small_conversation()], path=tmp_path, embeddings=real_embeddings)
    per_exchange = evaluate_locomo(
        [small_conversation()],
        path=tmp_path,
        embeddings=real_embeddings,
        memory_options={"chunking": "exchange", "chunker": ExchangeChunker(min_tokens=0)},
    )
    assert default.chunks == 1  # two short exchanges: merged
    assert per_exchange.chunks == 2  # one chunk per exchange, none merged
    assert default.questions == per_exchange.questions == 2  # the question without evidence is not scored


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"memory_options": {"chunk_size": 3}}, UnknownOptionError, "chunk_size"),
        ({"memory_options": {"user_id": "x"}}, InvalidArgumentError, "user_id"),
        ({"ks": (5, -1)}, InvalidArgumentError, "ks"),
        ({"conversations": [small_conversation(), small_conversation()]}, InvalidArgumentError, "sample id"),
        ({"conversations": []}, InvalidArgumentError, "No question with evidence"),
    ],
)
def test_evaluate_refuses_bad_arguments_before_any_work(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    kwargs.setdefault("conversations", [small_conversation()])
    with pytest.raises(error, match=match):
        evaluate_locomo(path=tmp_path / "stores", **kwargs)
    assert not (tmp_path / "stores").exists()
