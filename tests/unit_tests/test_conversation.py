from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_session_rag.chunking import ExchangeChunker
from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.errors import (
    DuplicateMessageIdError,
    EmptyConversationError,
    InvalidMessageError,
    InvalidTimestampError,
)

LEN = ExchangeChunker(token_counter=len, min_tokens=0, max_tokens=200)


def test_accepts_langchain_messages_and_dict_aliases() -> None:
    turns = normalize_messages(
        [
            SystemMessage("Be brief.", id="s"),
            HumanMessage("hi", id="h"),
            AIMessage("hello", id="a", name="Bot"),
            ToolMessage("42", tool_call_id="t1", id="t"),
            {"role": "human", "content": "again"},
            {"role": "ai", "content": "sure", "name": "Bot"},
        ],
        session_id="s1",
    )
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert turns[2].label == "Bot"
    assert turns[4].id.startswith("m-")


def test_generated_ids_are_deterministic() -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert [t.id for t in normalize_messages(msgs, session_id="s")] == [
        t.id for t in normalize_messages(msgs, session_id="s")
    ]
    assert normalize_messages(msgs, session_id="s")[0].id != normalize_messages(msgs, session_id="t")[0].id


def test_content_blocks_keep_text_and_count_the_rest() -> None:
    (turn,) = normalize_messages(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": "x"}, "here"],
            }
        ],
        session_id="s",
    )
    assert turn.text == "look\nhere"
    assert turn.skipped_blocks == 1


def test_tool_calls_are_rendered() -> None:
    msg = AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}])
    (turn,) = normalize_messages([msg], session_id="s")
    assert turn.text == '[called weather({"city": "Paris"})]'


def test_openai_chat_format_is_taken_whole() -> None:
    turns = normalize_messages(
        [
            {"role": "developer", "content": "Answer in one line."},
            ("user", "Weather in Oslo?"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "4 °C, rain"},
            {"role": "function", "name": "get_weather", "content": "4 °C"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "f", "arguments": "not json"}}],
            },
            "and tomorrow?",
            {"role": "user", "content": "when?", "create_time": 1700000000.5},
        ],
        session_id="s",
    )
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "tool", "assistant", "user", "user"]
    assert turns[2].text == '[called get_weather({"city": "Oslo"})]'
    assert turns[4].label == "get_weather"
    assert turns[5].text == "[called f(not json)]"  # kept as the model wrote it
    assert turns[6].text == "and tomorrow?"
    assert turns[7].timestamp == datetime.fromtimestamp(1700000000.5, tz=timezone.utc)


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        (("user", "hi"), "single tuple"),
        ([("user", "hi", "extra")], "(role, content)"),
        ([{"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}], "has no name"),
        ([{"role": "assistant", "content": None, "tool_calls": "call"}], "must be a list"),
        ([{"role": "assistant", "content": None, "tool_calls": []}], "no 'content'"),
    ],
)
def test_openai_shapes_that_cannot_be_read_are_refused(messages: object, fragment: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        normalize_messages(messages, session_id="s")  # type: ignore[arg-type]
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("messages", "error", "fragment"),
    [
        ([], EmptyConversationError, "Empty conversation"),
        ([{"role": "robot", "content": "x"}], InvalidMessageError, "unknown role 'robot'"),
        ([{"role": "user"}], InvalidMessageError, "no 'content'"),
        ([{"role": "user", "content": 42}], InvalidMessageError, "got int"),
        ([{"role": "user", "content": "  "}], InvalidMessageError, "empty text"),
        ([{"role": "user", "content": "x", "timestamp": "yesterday"}], InvalidTimestampError, "'yesterday'"),
        (
            [{"role": "user", "content": "x", "id": "1"}, {"role": "assistant", "content": "y", "id": "1"}],
            DuplicateMessageIdError,
            "'1'",
        ),
        ([42], InvalidMessageError, "got int"),
    ],
)
def test_invalid_input_raises_typed_errors(messages: list, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        normalize_messages(messages, session_id="s")


def test_a_single_message_instead_of_a_list_is_refused() -> None:
    with pytest.raises(InvalidMessageError, match="wrap it in a list"):
        normalize_messages({"role": "user", "content": "x"}, session_id="s")  # type: ignore[arg-type]


def test_exchange_grouping_covers_every_message() -> None:
    turns = normalize_messages(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "q1"},
            {"role": "user", "content": "q1 again"},
            {"role": "assistant", "content": "a1"},
            {"role": "tool", "content": "t1"},
            {"role": "assistant", "content": "a1b"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"},
            {"role": "user", "content": "trailing"},
        ],
        session_id="s",
    )
    groups = LEN.group(turns)
    assert [[t.text for t in g] for g in groups] == [
        ["sys", "q1", "q1 again", "a1", "t1", "a1b"],
        ["q2", "a2"],
        ["trailing"],
    ]
    chunks = LEN.chunk(turns)
    assert [m for c in chunks for m in c.message_ids] == [t.id for t in turns]


def test_system_messages_are_left_out_only_on_request() -> None:
    turns = normalize_messages([{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}], session_id="s")
    chunker = ExchangeChunker(token_counter=len, min_tokens=0, max_tokens=200, include_system=False)
    (chunk,) = chunker.chunk(turns)
    assert chunk.text == "User: q"


def test_names_replace_roles_in_chunk_text() -> None:
    turns = normalize_messages(
        [{"role": "user", "content": "hi", "name": "Caroline"}, {"role": "assistant", "content": "hey", "name": "Mel"}],
        session_id="s",
    )
    assert LEN.chunk(turns)[0].text == "Caroline: hi\nMel: hey"


def test_short_exchanges_merge_with_a_neighbour() -> None:
    chunker = ExchangeChunker(token_counter=len, min_tokens=40, max_tokens=200)
    turns = normalize_messages(
        [
            {"role": "user", "content": "How do I persist a Chroma collection across restarts?"},
            {"role": "assistant", "content": "Use PersistentClient with a path."},
            {"role": "user", "content": "Thanks!"},
            {"role": "assistant", "content": "Welcome"},
        ],
        session_id="s",
    )
    chunks = chunker.chunk(turns)
    assert len(chunks) == 1
    assert chunks[0].text.endswith("User: Thanks!\nAssistant: Welcome")


def test_long_exchange_splits_at_logical_breaks_and_repeats_the_question() -> None:
    code = "```python\nimport chromadb\nclient = chromadb.PersistentClient(path='db')\n```"
    steps = "\n".join(f"{i}. Step number {i} does something useful here." for i in range(1, 7))
    reply = f"First, install it.\n\n{code}\n\nThen:\n{steps}\n\nThat is all."
    turns = normalize_messages(
        [
            {"role": "user", "content": "How to set up Chroma?", "id": "q"},
            {"role": "assistant", "content": reply, "id": "r"},
        ],
        session_id="s",
    )
    chunker = ExchangeChunker(token_counter=len, min_tokens=0, max_tokens=160)
    chunks = chunker.chunk(turns)
    assert len(chunks) > 1
    assert all(len(c.text) <= 160 for c in chunks)
    assert all(c.text.startswith("User: How to set up Chroma?") for c in chunks)
    assert any(code in c.text for c in chunks), "the fenced code block stays whole"
    assert all(c.message_ids == ["q", "r"] for c in chunks)
    assert [c.part for c in chunks] == list(range(len(chunks)))
    body = "".join(c.text for c in chunks)
    for i in range(1, 7):
        assert f"Step number {i} does" in body


def test_chunk_timestamps_use_the_first_message_then_inherit() -> None:
    turns = normalize_messages(
        [
            {"role": "user", "content": "a" * 40, "timestamp": "2026-02-06T10:00:00"},
            {"role": "assistant", "content": "b" * 40},
            {"role": "user", "content": "c" * 40},
            {"role": "assistant", "content": "d" * 40},
        ],
        session_id="s",
    )
    ingest = datetime(2030, 1, 1, tzinfo=timezone.utc)
    chunks = LEN.chunk(turns, default_timestamp=ingest)
    assert [c.timestamp.isoformat() for c in chunks] == ["2026-02-06T10:00:00+00:00"] * 2
    (lone,) = LEN.chunk(
        normalize_messages([{"role": "user", "content": "x"}], session_id="s"), default_timestamp=ingest
    )
    assert lone.timestamp == ingest


def test_invalid_chunker_limits_raise() -> None:
    with pytest.raises(ValueError, match=r"min_tokens \(300\) must be smaller than max_tokens \(256\)"):
        ExchangeChunker(min_tokens=300)


_role = st.sampled_from(["user", "assistant", "system", "tool"])
_text = st.text(alphabet=st.sampled_from(list("abc xyz\n`1.")), min_size=1, max_size=400).filter(lambda s: s.strip())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_role, _text), min_size=1, max_size=12), st.integers(0, 40), st.integers(64, 300))
def test_no_message_is_ever_dropped(msgs: list[tuple[str, str]], min_tokens: int, max_tokens: int) -> None:
    turns = normalize_messages([{"role": r, "content": t} for r, t in msgs], session_id="s")
    chunker = ExchangeChunker(token_counter=len, min_tokens=min_tokens, max_tokens=max_tokens)
    chunks = chunker.chunk(turns)
    covered = {m for c in chunks for m in c.message_ids}
    assert covered == {t.id for t in turns}
    assert all(len(c.text) <= max_tokens for c in chunks)
    # Every word of every message survives somewhere in the chunk texts.
    joined = "\n".join(c.text for c in chunks)
    for t in turns:
        for word in t.text.split():
            assert word in joined
