"""The local model's budget counts tokens as llama.cpp does, so a question that passes the first node fits.

Before, the budget counted with tiktoken: a Chinese, hex or digit-heavy question passed the first node and
retrieval, then overflowed SmolLM2's window in the model (``BudgetExceededError`` mid-run).
"""

from __future__ import annotations

import random

import pytest

from langchain_session_rag import LocalChatModel, SessionVectorMemory
from langchain_session_rag.errors import QuestionTooLongError
from langchain_session_rag.graph import create_session_rag_graph

RANDOM = random.Random(7)  # noqa: S311 - test texts, not secrets
CHINESE = "我喜欢在周末和朋友一起去公园散步，然后喝一杯绿茶。"
TEXTS = [  # each kind of text tiktoken miscounted, a sentence or so of each (the kind matters, not the length)
    CHINESE,
    " ".join(f"{RANDOM.getrandbits(128):032x}" for _ in range(2)),
    "".join(RANDOM.choice("0123456789") for _ in range(50)),
    "Hello world, my cat is called Pixel. Ünïcödé — ok?  Two  spaces\n\nnew lines, it's we're they'll",
    "café naïve 😀 emoji \t tabs",
]


def test_counts_equal_llama_cpps() -> None:
    model = LocalChatModel(max_tokens=1)  # the default window: loaded once per process
    base = model.invoke([("user", "a")]).usage_metadata["input_tokens"] - model.get_num_tokens("a")
    for text in TEXTS:
        counted = model.invoke([("user", text)]).usage_metadata["input_tokens"] - base
        assert model.get_num_tokens(text) == counted, text[:40]


@pytest.mark.parametrize("text", [CHINESE * 50, "".join(str(i % 10) for i in range(2500))])
def test_a_question_over_the_local_window_is_refused_before_the_run(memory: SessionVectorMemory, text: str) -> None:
    graph = create_session_rag_graph(LocalChatModel(), memory).compile()
    with pytest.raises(QuestionTooLongError):
        graph.invoke({"messages": [("user", text)]}, context={"user_id": "too-long", "session_id": "s"})
    assert memory.for_user("too-long").count() == 0


def test_a_long_question_that_passes_the_check_fits_the_model(memory: SessionVectorMemory) -> None:
    """Near the window: with memories retrieved, the budget's prompt still fits llama.cpp's window.

    A window of 448 tokens (less than a quarter of the default: less prompt for llama.cpp to read) and a question of
    about 220, half the window: the prompt comes within about 30 tokens of the window's room.
    """
    told = [(("user", f"第 {i} 件事：我的柜子密码是 {1000 + 37 * i}。"), ("assistant", "记住了。")) for i in range(10)]
    memory.for_user("near").add_messages([m for pair in told for m in pair], session_id="old")
    model = LocalChatModel(max_tokens=16, n_ctx=448)
    graph = create_session_rag_graph(model, memory).compile()
    question = "我的柜子密码是多少？" + "请仔细回答。" * 20  # about 220 of the model's tokens
    assert 180 < model.get_num_tokens(question) < 300
    out = graph.invoke({"messages": [("user", question)]}, context={"user_id": "near", "session_id": "new"})
    assert out["memories"], "memories were retrieved into the prompt"
    assert out["messages"][-1].type == "ai"
    assert out["budget_report"]["total"] <= 448 - 16
