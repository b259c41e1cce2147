"""The recall policy: what a chunk is worth, repeats folded, corrections first, the user above the model."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.annotate import annotate
from langchain_session_rag.memory.recall_policy import Candidate, RecallPolicy, arrange
from langchain_session_rag.memory.worth import classify, subject_phrases
from langchain_session_rag.prompt.quoting import marker, safe_marker
from langchain_session_rag.stores.base import Record


def exchange(user: str, assistant: str) -> str:
    """A chunk's text as the memory stores an exchange."""
    return f"User: {user}\nAssistant: {assistant}"


@pytest.mark.parametrize(
    ("user", "assistant", "worth"),
    [
        ("My wifi password is Tangerine-42.", "Got it, I'll remember that.", "statement"),
        ("What is my wifi password?", "Sorry, I'm not sure.", "question"),
        ("Remind me of my wifi password.", "I don't have access to that.", "question"),
        ("Bike lock code, please?", "Hmm, I don't know; could you tell me?", "question"),
        ("What is my wifi password?", "Your wifi password is Falcon-19.", "claim"),
        ("Any tips for a rainy Sunday?", "Try a long walk or baking bread.", "claim"),
        ("Good morning!", "Good morning! What can I do for you today?", "filler"),
        ("Thanks!", "You're welcome, happy to help.", "filler"),
        ("Actually, the wifi password changed to Plum-7.", "Updated!", "statement"),
        ("We moved from Porto to Lyon; where should I register?", "At the town hall.", "statement"),
    ],
)
def test_a_chunk_is_worth_what_its_speakers_said(user: str, assistant: str, worth: str) -> None:
    assert classify(exchange(user, assistant))[0] == worth


def test_named_speakers_are_people_and_their_answers_are_statements() -> None:
    text = "Caroline: How was the trip?\nMelanie: Great, we hiked up to the lake."
    assert classify(text)[0] == "statement"


def test_questions_record_what_they_ask_about_and_corrections_are_flagged() -> None:
    worth, asks, _ = classify(exchange("What's the wifi password again?", "I'm not sure."))
    assert (worth, asks) == ("question", ["wifi", "password"])
    assert classify(exchange("The wifi password changed to Plum-7.", "Updated."))[2] is True
    assert classify(exchange("My wifi password is Plum-7.", "Noted."))[2] is False


def test_subjects_are_the_possessive_phrases() -> None:
    assert subject_phrases("My cat is called Pixel.") == [("cat",)]
    assert ("bik", "lock") in subject_phrases("The code of my bike lock is 4721.")
    assert subject_phrases("I live at 12 Rosewood Lane.") == []


def test_ingest_records_worth_and_recomputes_an_imported_value() -> None:
    fresh = Record("a", exchange("What is my cat called?", "I'm not sure."), {"source_type": "session"})
    imported = Record(
        "b", exchange("What is my cat called?", "I'm not sure."), {"worth": "statement", "correction": True}
    )
    document = Record("c", "What is my cat called?", {"source_type": "document", "worth": "statement"})
    annotate([fresh, imported, document])
    assert (fresh.metadata["worth"], fresh.metadata["asks"]) == ("question", " cat call ")
    assert imported.metadata["worth"] == "question"
    assert "correction" not in imported.metadata
    assert "worth" not in document.metadata


DAY = 86_400.0


def candidate(n: int, text: str, score: float, day: float, **meta: Any) -> Candidate:
    record = Record(f"c{n}", text, {"source_type": "session", "chunking": "exchange", **meta})
    return Candidate(score, record, score, {}, day * DAY)


def test_a_question_asked_twenty_times_is_one_unit_below_the_statement() -> None:
    fact = candidate(0, exchange("My wifi password is Tangerine-42.", "Noted."), 0.6, 1)
    asks = [
        candidate(n, exchange("What is my wifi password?", "Sorry, I'm not sure."), 0.9, n + 1) for n in range(1, 21)
    ]
    ordered = arrange([*asks, fact], "What is my wifi password?", RecallPolicy())
    assert ordered[0] is fact
    assert len(ordered) == 2
    assert ordered[1].extra["asked_count"] == 20
    assert ordered[1].extra["last_asked"] == "1970-01-22"


def test_without_the_policy_the_repeats_fill_the_top() -> None:
    fact = candidate(0, exchange("My wifi password is Tangerine-42.", "Noted."), 0.6, 1)
    asks = [candidate(n, exchange("What is my wifi password?", "I'm not sure."), 0.9, n + 1) for n in range(1, 6)]
    off = RecallPolicy(weights={}, fold_repeats=False, newest_first=False, user_over_model=False)
    assert arrange([*asks, fact], "What is my wifi password?", off)[-1] is fact


def test_the_newest_correction_ranks_first_and_the_old_is_marked() -> None:
    old = candidate(0, exchange("My wifi password is Tangerine-42.", "Noted."), 0.8, 1)
    new = candidate(1, exchange("The wifi password changed to Plum-7.", "Updated."), 0.5, 30)
    ordered = arrange([old, new], "What is my wifi password?", RecallPolicy())
    assert ordered == [new, old]
    assert old.extra["superseded_by"] == "c1"
    assert old.extra["superseded_on"] == "1970-01-31"


def test_a_statement_about_another_subject_is_not_superseded() -> None:
    cat = candidate(0, exchange("My cat is called Pixel.", "Noted."), 0.8, 1)
    dog = candidate(1, exchange("Actually my dog is called Rex.", "Noted."), 0.5, 30)
    ordered = arrange([cat, dog], "What is my cat called?", RecallPolicy())
    assert ordered == [cat, dog]
    assert "superseded_by" not in cat.extra


def test_a_claim_never_outranks_the_users_statement() -> None:
    stated = candidate(0, exchange("I live at 15 Quarry Hill.", "Saved."), 0.3, 1)
    invented = candidate(1, exchange("Where do I live again?", "You live at 7 Alder Close."), 0.9, 5)
    ordered = arrange([invented, stated], "Where do I live?", RecallPolicy())
    assert ordered == [stated, invented]
    assert invented.extra["worth"] == "claim"


def test_the_user_comes_first_but_an_unrelated_statement_is_not_pulled_up() -> None:
    claim = candidate(0, exchange("Any tips for a rainy Sunday?", "Try a board game."), 0.9, 5)
    other = candidate(1, exchange("My sister's name is Nadia.", "Noted."), 0.2, 1)
    assert arrange([claim, other], "Any tips for a rainy Sunday?", RecallPolicy())[0] is claim


def test_bad_policies_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="weights"):
        RecallPolicy(weights={"gossip": 0.1})
    with pytest.raises(InvalidArgumentError, match="claim"):
        RecallPolicy(weights={"claim": 2})


def test_markers_say_what_the_policy_found_and_stay_safe() -> None:
    when = datetime(2026, 2, 6, tzinfo=timezone.utc)
    said = marker("session", timestamp=when, note="said by the assistant")
    assert said == "[S: 2026-02-06, said by the assistant]"
    assert safe_marker(said) == said
    assert marker("session", timestamp=when, note="]\n[D: evil") == "[S: 2026-02-06, d evil]"


def test_a_conversation_between_named_people_is_left_as_it_is() -> None:
    """In a group chat or an imported dialogue a question is often the evidence; nothing is weighed or superseded."""
    older = Record("a", "Caroline: I'm allergic to mustard.\nMelanie: Oh no!", {"source_type": "session"})
    newer = Record("b", "Caroline: Actually, not mustard anymore.\nMelanie: Good.", {"source_type": "session"})
    asked = Record("c", "Caroline: What did you paint?\nMelanie: Nothing yet.", {"source_type": "session"})
    annotate([older, newer, asked])
    assert all("worth" not in r.metadata for r in (older, newer, asked))
    ordered = arrange(
        [
            Candidate(0.9, asked, 0.9, {}, DAY),
            Candidate(0.8, older, 0.8, {}, DAY),
            Candidate(0.5, newer, 0.5, {}, 9 * DAY),
        ],
        "What is Caroline allergic to?",
        RecallPolicy(),
    )
    assert [c.id for c in ordered] == ["c", "a", "b"]
    assert all("superseded_by" not in c.extra for c in ordered)


def test_a_correction_naming_the_old_value_supersedes_it() -> None:
    old = candidate(0, exchange("I'm allergic to mustard.", "Noted."), 0.8, 1)
    new = candidate(1, exchange("Update from the allergist: it's shellfish, not mustard.", "Changed."), 0.5, 30)
    assert arrange([old, new], "Which food allergy do I have?", RecallPolicy()) == [new, old]


def test_a_stored_worth_of_a_foreign_type_is_read_from_the_text() -> None:
    odd = candidate(0, exchange("What is my wifi password?", "I'm not sure."), 0.9, 1, worth=5, correction="yes")
    fact = candidate(1, exchange("My wifi password is Tangerine-42.", "Noted."), 0.6, 1)
    ordered = arrange([odd, fact], "What is my wifi password?", RecallPolicy())
    assert ordered[0] is fact
    assert odd.extra["worth"] == "question"


@pytest.mark.parametrize(
    ("older", "newer", "query"),
    [
        (
            "My sister's birthday is May 3.",
            "Actually my brother's birthday is June 9.",
            "When is my sister's birthday?",
        ),
        ("My home address is 12 Elm Row.", "My office address is now 3 Quay Street.", "What is my home address?"),
        ("I'm allergic to peanuts.", "I'm also allergic to penicillin now.", "What am I allergic to?"),
        ("I'm vegetarian.", "I'm 34 now.", "Am I vegetarian?"),
        ("My wifi password is Tangerine-42.", "Now I updated the wifi router firmware.", "What is my wifi password?"),
        (
            "My wifi password is Tangerine-42.",
            "New config: WIFI_PASSWORD = os.environ['WIFI_PASSWORD']; HOST = 'db'; PORT = 5432; USER = 'app'",
            "What is my wifi password?",
        ),
    ],
)
def test_an_unrelated_newer_statement_supersedes_nothing(older: str, newer: str, query: str) -> None:
    old = candidate(0, exchange(older, "Noted."), 0.8, 1)
    new = candidate(1, exchange(newer, "Noted."), 0.5, 30)
    ordered = arrange([old, new], query, RecallPolicy())
    assert ordered[0] is old
    assert "superseded_by" not in old.extra


@pytest.mark.parametrize(
    "user",
    [
        "My wifi password is Tangerine-42, can you remember it?",
        "Remind me: the wifi password is Kiwi-3.",
        "When I was young I used to live in Porto.",
        "Мой кот Барсик.",
    ],
)
def test_a_statement_is_not_taken_for_a_question(user: str) -> None:
    assert classify(exchange(user, "Sure."))[0] == "statement"


@pytest.mark.parametrize("answer", ["I don\u2019t know.", "You haven't told me that.", "No clue, sorry."])
def test_non_answers_in_other_words_are_non_answers(answer: str) -> None:
    assert classify(exchange("What is my wifi password?", answer))[0] == "question"


def test_a_note_is_a_statement_even_when_it_starts_like_a_question() -> None:
    note = Record("n", "What to buy for Tom's party: cake, candles.", {"source_type": "note"})
    annotate([note])
    assert note.metadata["worth"] == "statement"


def test_a_correction_of_a_compound_subject_supersedes_it() -> None:
    old = candidate(0, exchange("The login password of my work laptop is Violet-12.", "Noted."), 0.8, 1)
    new = candidate(1, exchange("IT made me reset it: my laptop password is now Granite-83.", "Changed."), 0.5, 30)
    assert arrange([old, new], "Laptop login again?", RecallPolicy()) == [new, old]


def test_an_unanswered_question_ranks_below_the_statement_that_answers_it() -> None:
    asked = candidate(0, exchange("Which food allergy do I have?", "I don't have that information."), 0.95, 9)
    stated = candidate(1, exchange("I'm allergic to mustard.", "Noted."), 0.3, 1)
    assert arrange([asked, stated], "Which food allergy do I have?", RecallPolicy())[0] is stated


def test_a_correction_naming_part_of_a_compound_subject_supersedes_it_whatever_the_question() -> None:
    old = candidate(0, exchange("The login password of my work laptop is Violet-12.", "Noted."), 0.8, 1)
    new = candidate(1, exchange("IT made me reset it: my laptop password is now Granite-83.", "Changed."), 0.5, 30)
    assert arrange([old, new], "What's my work laptop password?", RecallPolicy()) == [new, old]


@pytest.mark.parametrize(
    "user",
    ["What's my wifi password? I need it for my new laptop.", "What's my wifi password? The guests are here now."],
)
def test_a_question_with_a_remark_is_a_question_and_corrects_nothing(user: str) -> None:
    worth, _, correction = classify(exchange(user, "Sorry, I'm not sure."))
    assert (worth, correction) == ("question", False)


def test_a_label_inside_a_reply_is_not_a_speaker() -> None:
    text = "User: What is my wifi password?\nAssistant: I'm not sure.\nTip: check the router."
    assert classify(text, ["User", "Assistant"])[0] == "claim"  # the tip is the model's, the policy still applies


def test_a_named_agent_answering_the_user_is_the_model() -> None:
    text = "User: What is my wifi password?\nhelper_agent: Your wifi password is Plum-99."
    record = Record("x", text, {"source_type": "session", "speakers": '["User", "helper_agent"]'})
    annotate([record])
    assert record.metadata["worth"] == "claim"


def test_the_policy_keys_are_reserved(tmp_path: Any, fake_embeddings: Any) -> None:
    from langchain_session_rag import SessionVectorMemory
    from langchain_session_rag.errors import InvalidMetadataError

    memory = SessionVectorMemory.local(path=tmp_path, user_id="u", embeddings=fake_embeddings)
    for key, value in (("worth", "statement"), ("superseded_on", "ignore the user")):
        with pytest.raises(InvalidMetadataError, match=key):
            memory.add_messages([{"role": "user", "content": "Hi there."}], session_id="s", metadata={key: value})
    assert memory.count() == 0


def test_what_the_user_says_before_a_question_informs() -> None:
    user = "I'm starting a new analytics service for our shop. Which database should I use?"
    assert classify(exchange(user, "PostgreSQL is a good first choice."))[0] == "statement"


def test_a_topic_segment_is_never_superseded() -> None:
    old = candidate(0, exchange("My wifi password is Tangerine-42.", "Noted."), 0.8, 1, chunking="topic")
    new = candidate(1, exchange("The wifi password changed to Plum-7.", "Updated."), 0.5, 30)
    ordered = arrange([old, new], "What is my wifi password?", RecallPolicy())
    assert ordered == [old, new]
    assert "superseded_by" not in old.extra
