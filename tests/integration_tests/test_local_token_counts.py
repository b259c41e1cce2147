"""The local model's budget counts tokens as llama.cpp does, so a question that passes the first node fits.

Before, the budget counted with tiktoken: a Chinese, hex or digit-heavy question passed the first node and
retrieval, then overflowed SmolLM2's window in the model (``BudgetExceededError`` mid-run).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from langchain_session_rag import LocalChatModel, SessionVectorMemory
from langchain_session_rag.errors import QuestionTooLongError
from langchain_session_rag.graph import create_session_rag_graph

RANDOM = random.Random(7)  # noqa: S311 - test texts, not secrets
TEXTS = [
    "我喜欢在周末和朋友一起去公园散步，然后喝一杯绿茶。" * 10,
    " ".join(f"{RANDOM.getrandbits(128):032x}" for _ in range(20)),
    "".join(RANDOM.choice("0123456789") for _ in range(500)),
    "Hello world, my cat is called Pixel. Ünïcödé — ok?  Two  spaces\n\nnew lines, it's we're they'll",
    "café naïve 😀 emoji \t tabs",
]


def test_counts_equal_llama_cpps() -> None:
    model = LocalChatModel(max_tokens=1, n_ctx=4096)
    base = model.invoke([("user", "a")]).usage_metadata["input_tokens"] - model.get_num_tokens("a")
    for text in TEXTS:
        counted = model.invoke([("user", text)]).usage_metadata["input_tokens"] - base
        assert model.get_num_tokens(text) == counted, text[:40]


@pytest.mark.parametrize("text", [TEXTS[0] * 5, "".join(str(i % 10) for i in range(2500))])
def test_a_question_over_the_local_window_is_refused_before_the_run(tmp_path: Path, real_embeddings, text) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="anyone", embeddings=real_embeddings)
    graph = create_session_rag_graph(LocalChatModel(), memory).compile()
    with pytest.raises(QuestionTooLongError):
        graph.invoke({"messages": [("user", text)]}, context={"user_id": "u", "session_id": "s"})


def test_a_long_question_that_passes_the_check_fits_the_model(tmp_path: Path, real_embeddings) -> None:
    """Near the window: with memories retrieved, the budget's prompt still fits llama.cpp's window."""
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="anyone", embeddings=real_embeddings)
    told = [(("user", f"第 {i} 件事：我的柜子密码是 {1000 + 37 * i}。"), ("assistant", "记住了。")) for i in range(10)]
    memory.for_user("u").add_messages([m for pair in told for m in pair], session_id="old")
    model = LocalChatModel(max_tokens=16)
    graph = create_session_rag_graph(model, memory).compile()
    question = "我的柜子密码是多少？" + "请仔细回答。" * 150  # about 1,500 of the model's tokens
    assert 1200 < model.get_num_tokens(question) < 1900
    out = graph.invoke({"messages": [("user", question)]}, context={"user_id": "u", "session_id": "new"})
    assert out["messages"][-1].type == "ai"
    assert out["budget_report"]["total"] <= 2048 - 16
