"""The graph's budget comes from the model, a too-long question is refused before any work, and a turn's write
goes through to a store other processes read (issue 28)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ollama import ChatOllama
from langgraph.checkpoint.memory import InMemorySaver

from langchain_session_rag import LocalChatModel, SessionVectorMemory, TokenBudget
from langchain_session_rag.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    InvalidRequestError,
    QuestionTooLongError,
)
from langchain_session_rag.graph import create_memory_agent_graph, create_session_rag_graph
from langchain_session_rag.graph.model_window import model_window
from langchain_session_rag.graph.nodes import SessionRAGNodes
from langchain_session_rag.memory import RuntimeSettings

CTX = {"user_id": "alice", "session_id": "s1"}


class CountingRetriever(BaseRetriever):
    """Documents retriever that counts its calls (retrieval must not run for a refused question)."""

    calls: int = 0

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.calls += 1
        return []


def fake_model(*answers: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers or ("ok",)]))


@pytest.fixture
def memory(tmp_path: Path, fake_embeddings: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=tmp_path / "m", user_id="nobody", embeddings=fake_embeddings)


def budget_of(graph: Any) -> TokenBudget:
    return graph.budget


def test_budget_is_the_local_models_window(memory: SessionVectorMemory) -> None:
    graph = create_session_rag_graph(LocalChatModel(n_ctx=2048, max_tokens=256), memory)
    assert (budget_of(graph).context_window, budget_of(graph).reserve_for_answer) == (2048, 256)


def test_budget_is_ollamas_num_ctx_when_set(memory: SessionVectorMemory) -> None:
    graph = create_session_rag_graph(ChatOllama(model="llama3.2", num_ctx=4096, num_predict=300), memory)
    assert (budget_of(graph).context_window, budget_of(graph).reserve_for_answer) == (4096, 300)
    bound = ChatOllama(model="llama3.2", num_ctx=4096).bind(stop=["\n"])
    assert model_window(bound) is not None, "a bound model is looked through"
    assert budget_of(create_session_rag_graph(ChatOllama(model="llama3.2"), memory)).context_window == 4096, (
        "Ollama's own default window when num_ctx is not set"
    )


def test_budget_from_a_model_profile(memory: SessionVectorMemory) -> None:
    model = fake_model()
    model.profile = {"max_input_tokens": 3000}
    assert budget_of(create_session_rag_graph(model, memory)).limit == 3000


def test_a_budget_larger_than_the_models_window_is_refused(memory: SessionVectorMemory) -> None:
    with pytest.raises(InvalidArgumentError, match=r"context_window \(8192\) is larger than the model's \(2048"):
        create_session_rag_graph(LocalChatModel(n_ctx=2048), memory, budget=TokenBudget(context_window=8192))
    smaller = TokenBudget(context_window=1536, reserve_for_answer=512)
    assert create_session_rag_graph(LocalChatModel(n_ctx=2048), memory, budget=smaller).budget is smaller


def test_a_question_too_long_is_refused_before_the_run(memory: SessionVectorMemory) -> None:
    documents = CountingRetriever()
    model = fake_model()
    saver = InMemorySaver()
    graph = create_session_rag_graph(model, memory, documents=documents, budget=TokenBudget(context_window=2048))
    graph = graph.compile(checkpointer=saver)
    question = "word " * 400_000  # 2 MB
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(QuestionTooLongError, match="too long") as refused:
        graph.stream({"messages": [HumanMessage(question)]}, config, context=CTX, stream_mode="messages")
    assert isinstance(refused.value, BudgetExceededError), "still a BudgetExceededError for old handlers"
    assert documents.calls == 0
    assert saver.get_tuple(config) is None, "nothing checkpointed"
    assert memory.for_user("alice").backend.all_ids("alice") == [], "nothing stored"


async def test_a_question_too_long_is_refused_before_an_async_stream(memory: SessionVectorMemory) -> None:
    graph = create_session_rag_graph(
        fake_model(), memory, budget=TokenBudget(context_window=1536, reserve_for_answer=512)
    ).compile()
    saver = InMemorySaver()
    graph = create_session_rag_graph(
        fake_model(), memory, budget=TokenBudget(context_window=1536, reserve_for_answer=512)
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    streamed = graph.astream({"messages": [("user", "x " * 5000)]}, config, context=CTX)  # checked off the loop
    parts: list[object] = []
    with pytest.raises(QuestionTooLongError):
        parts.extend([part async for part in streamed])
    assert parts == [], "nothing streamed for a refused question"
    assert saver.get_tuple(config) is None, "nothing checkpointed"
    with pytest.raises(QuestionTooLongError):
        await graph.ainvoke({"messages": [("user", "x " * 5000)]}, config, context=CTX)
    with pytest.raises(InvalidRequestError):  # the ids and the messages are still checked at the call
        graph.astream({"messages": [("user", "x")]}, config, context={"user_id": "alice"})


def test_the_first_node_checks_the_question_too(memory: SessionVectorMemory) -> None:
    """A run that reaches the graph another way (LangGraph's server, a subgraph) is refused by ``validate``."""
    nodes = SessionRAGNodes(
        model=fake_model(), memory=memory, budget=TokenBudget(context_window=1536, reserve_for_answer=512)
    )

    class Runtime:
        context = CTX

    with pytest.raises(QuestionTooLongError):
        nodes.validate({"messages": [HumanMessage("x " * 5000)]}, Runtime())  # type: ignore[arg-type]
    assert nodes.validate({"messages": [HumanMessage("short")]}, Runtime())["llm_calls"] == 0  # type: ignore[arg-type]


def test_the_agent_graph_checks_the_question(memory: SessionVectorMemory) -> None:
    from langchain_core.runnables import RunnableLambda

    agent = RunnableLambda(lambda s: {"messages": [*s["messages"], AIMessage("done")]})
    graph = create_memory_agent_graph(
        agent, memory, budget=TokenBudget(context_window=1536, reserve_for_answer=512)
    ).compile()
    with pytest.raises(QuestionTooLongError):
        graph.invoke({"messages": [("user", "x " * 5000)]}, context=CTX)
    assert graph.invoke({"messages": [("user", "hi")]}, context=CTX)["messages"][-1].text == "done"


def test_a_shared_store_is_written_through_by_default(tmp_path: Path) -> None:
    """A store other processes read gets the turn's exchange before the run ends; an embedded one in background."""
    lingering = RuntimeSettings(write_linger=30)  # a background write would wait far longer than this test
    embedded = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="nobody", embeddings=DeterministicFakeEmbedding(size=16), runtime=lingering
    )
    create_session_rag_graph(fake_model(), embedded).compile().invoke(
        {"messages": [("user", "I like tea")]}, context=CTX
    )
    assert embedded.backend.all_ids("alice") == [], "embedded: background write (this process reads it from memory)"
    embedded.flush()
    shared = SessionVectorMemory(
        vectorstore=InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16)),
        user_id="nobody",
        runtime=lingering,
    )
    create_session_rag_graph(fake_model(), shared).compile().invoke({"messages": [("user", "I like tea")]}, context=CTX)
    assert len(shared.backend.all_ids("alice")) == 1, "a store others read: written through before the run ends"
    graph = create_session_rag_graph(fake_model(), shared, background_writes=True).compile()
    graph.invoke({"messages": [("user", "I like coffee")]}, context={**CTX, "session_id": "s2"})
    assert len(shared.backend.all_ids("alice")) == 1, "background_writes=True is still honoured"
    shared.flush()


def test_the_local_models_budget_counts_with_its_own_vocabulary(memory: SessionVectorMemory) -> None:
    """SmolLM2 splits every digit: 1,900 digits are ~700 tiktoken tokens but 1,900 of the model's (2,048 window)."""
    model = LocalChatModel(n_ctx=2048, max_tokens=256)
    assert model.get_num_tokens("4471") == 4
    assert model.get_num_tokens("Hello world") == 2
    graph = create_session_rag_graph(model, memory)
    digits = "".join(str(i % 10) for i in range(1900))
    assert TokenBudget(context_window=2048, reserve_for_answer=256).check_question(digits) < 1792, "tiktoken: fits"
    with pytest.raises(QuestionTooLongError, match="1900 tokens"):
        graph.compile().stream({"messages": [("user", digits)]}, context=CTX)
