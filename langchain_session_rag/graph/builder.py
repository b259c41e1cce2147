"""``create_session_rag_graph``: cache → memory + document retrieval → budgeted prompt → model → store."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph

from langchain_session_rag.cache.semantic import SemanticCache
from langchain_session_rag.graph.input_check import CheckedStateGraph
from langchain_session_rag.graph.names import (
    AGENT,
    BUILD_PROMPT,
    CACHE_LOOKUP,
    CALL_MODEL,
    RETRIEVE_DOCUMENTS,
    RETRIEVE_MEMORIES,
    SUMMARISE_AND_STORE,
    VALIDATE,
)
from langchain_session_rag.graph.nodes import SessionRAGNodes, route_after_cache
from langchain_session_rag.graph.runnables import agent_node, graph_node
from langchain_session_rag.graph.state import SessionContext, SessionRAGState
from langchain_session_rag.memory.consolidation import Consolidation
from langchain_session_rag.memory.retriever import SessionVectorMemory, check_memory
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.prompt.history import SummaryBuffer


def create_session_rag_graph(
    model: BaseChatModel,
    memory: SessionVectorMemory,
    *,
    documents: BaseRetriever | None = None,
    cache: SemanticCache | None = None,
    budget: TokenBudget | None = None,
    window_turns: int = 6,
    summary: SummaryBuffer | None = None,
    memory_k: int = 4,
    score_threshold: float | None = None,
    background_writes: bool | None = None,
    keep_prompt: bool = False,
    core_memory: bool = True,
    long_context: bool = False,
) -> StateGraph[SessionRAGState, SessionContext, Any, Any]:
    """Build the session-RAG graph, uncompiled, so you bring your own checkpointer and store.

    Nodes: ``validate`` → ``cache_lookup`` → (hit: end) → ``retrieve_memories`` ‖ ``retrieve_documents`` →
    ``build_prompt`` → ``call_model`` → ``summarise_and_store``. Every node has a sync and an async body.
    The memory, cache and budget serve many users: each call is scoped by ``context["user_id"]``.

    ``background_writes``: with ``True`` ``summarise_and_store`` hands the new exchange to the memory's
    writer thread instead of waiting for the store: the turn ends at once, this process retrieves the
    exchange on the next turn, and other processes see it milliseconds later (``memory.flush()`` waits; a
    failed write is raised by the next turn's store). ``False`` waits for the store. ``None`` (the default)
    chooses: background writes on an embedded store (only this process reads it), write-through on a Chroma
    server, so that a turn's exchange is visible to every worker of a deployment by the time its run ends.

    ``score_threshold``: the least cosine similarity of a recalled memory; ``None`` (the default) uses the memory's
    own ``score_threshold``, else 0.1 (``DEFAULT_SCORE_THRESHOLD``, calibrated for the bundled model); ``-1`` keeps
    every memory. Memories are ranked by the memory's recall policy (see ``docs/long-use.md``).

    The prompt budget defaults to the model's own context window when the model says it
    (``LocalChatModel.n_ctx``, ``ChatOllama.num_ctx``, a model profile's ``max_input_tokens``; 8K otherwise); a
    ``budget`` larger than that window is refused. A question too long for the budget is refused with
    :class:`~langchain_session_rag.errors.QuestionTooLongError` before the run starts.

    With ``stream_mode="messages"`` clients receive the answer only (``call_model``'s tokens, or a cache
    hit): the prompt (instructions and retrieved memories) is kept as message dicts, which the stream does
    not emit, and the internal nodes are tagged no-stream, so the summary model's tokens are not
    streamed either. The prompt leaves the state at the end of the turn (``keep_prompt=True`` keeps it, for
    debugging); ``budget_report`` stays. For the smallest checkpoints invoke with ``durability="exit"``
    (one checkpoint per turn).

    Example:
        .. code-block:: python

            import tempfile
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.messages import AIMessage
            from langchain_session_rag import SessionVectorMemory
            from langchain_session_rag.graph import create_session_rag_graph

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="anyone")
            model = GenericFakeChatModel(messages=iter([AIMessage("Hello!")]))
            graph = create_session_rag_graph(model, memory).compile()
            out = graph.invoke({"messages": [("user", "Hi there")]},
                               context={"user_id": "alice", "session_id": "s1"})
            assert out["messages"][-1].text == "Hello!"
    """
    nodes = SessionRAGNodes(
        model=model,
        memory=memory,
        documents=documents,
        cache=cache,
        budget=budget,
        window_turns=window_turns,
        summary=summary,
        memory_k=memory_k,
        score_threshold=score_threshold,
        background_writes=background_writes,
        keep_prompt=keep_prompt,
        core_memory=core_memory,
        long_context=long_context,
    )
    graph = CheckedStateGraph(SessionRAGState, context_schema=SessionContext)  # refuses a bad input before a run
    graph.budget = nodes.budget
    graph.redact = memory.redact_secrets
    for name, sync, asyn in (
        (VALIDATE, nodes.load_core, nodes.aload_core),
        (CACHE_LOOKUP, nodes.cache_lookup, nodes.acache_lookup),
        (RETRIEVE_MEMORIES, nodes.retrieve_memories, nodes.aretrieve_memories),
        (RETRIEVE_DOCUMENTS, nodes.retrieve_documents, nodes.aretrieve_documents),
        (BUILD_PROMPT, nodes.build_prompt, nodes.abuild_prompt),
        (CALL_MODEL, nodes.call_model, nodes.acall_model),
        (SUMMARISE_AND_STORE, nodes.summarise_and_store, nodes.asummarise_and_store),
    ):
        graph.add_node(name, graph_node(name, sync, asyn))
    graph.add_edge(START, VALIDATE)
    graph.add_edge(VALIDATE, CACHE_LOOKUP)
    graph.add_conditional_edges(CACHE_LOOKUP, route_after_cache, [RETRIEVE_MEMORIES, RETRIEVE_DOCUMENTS, END])
    graph.add_edge([RETRIEVE_MEMORIES, RETRIEVE_DOCUMENTS], BUILD_PROMPT)
    graph.add_edge(BUILD_PROMPT, CALL_MODEL)
    graph.add_edge(CALL_MODEL, SUMMARISE_AND_STORE)
    graph.add_edge(SUMMARISE_AND_STORE, END)
    return graph


def create_memory_agent_graph(
    agent: Runnable[Any, Any],
    memory: SessionVectorMemory,
    *,
    budget: TokenBudget | None = None,
    window_turns: int = 6,
    memory_k: int = 4,
    background_writes: bool | None = None,
    keep_prompt: bool = False,
    core_memory: bool = True,
) -> StateGraph[SessionRAGState, SessionContext, Any, Any]:
    """Wrap an existing agent (e.g. a tool-calling ``langchain.agents.create_agent``) with long-term memory.

    ``validate`` → ``retrieve_memories`` → ``build_prompt`` → ``agent`` → ``summarise_and_store``: the agent
    receives the budgeted prompt (instructions, history, retrieved memories, question), and the final
    exchange is stored for later sessions (``background_writes`` as in :func:`create_session_rag_graph`).
    Uncompiled; scoped by ``context["user_id"]``.

    Example:
        .. code-block:: python

            import tempfile
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.messages import AIMessage
            from langchain_core.runnables import RunnableLambda
            from langchain_session_rag import SessionVectorMemory
            from langchain_session_rag.graph import create_memory_agent_graph

            model = GenericFakeChatModel(messages=iter([AIMessage("Done.")]))
            agent = RunnableLambda(lambda s: {"messages": [*s["messages"], model.invoke(s["messages"])]})
            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="anyone")
            graph = create_memory_agent_graph(agent, memory).compile()
            out = graph.invoke({"messages": [("user", "Book a table")]},
                               context={"user_id": "alice", "session_id": "s1"})
            assert out["messages"][-1].text == "Done."
    """
    nodes = SessionRAGNodes(
        model=None,
        memory=memory,
        budget=budget,
        window_turns=window_turns,
        memory_k=memory_k,
        background_writes=background_writes,
        keep_prompt=keep_prompt,
        core_memory=core_memory,
    )
    graph = CheckedStateGraph(SessionRAGState, context_schema=SessionContext)  # refuses a bad input before a run
    graph.budget = nodes.budget
    graph.redact = memory.redact_secrets
    run, arun = agent_node(agent, redact=memory.redact_secrets)
    steps = (
        (VALIDATE, nodes.load_core, nodes.aload_core),
        (RETRIEVE_MEMORIES, nodes.retrieve_memories, nodes.aretrieve_memories),
        (BUILD_PROMPT, nodes.build_prompt, nodes.abuild_prompt),
        (AGENT, run, arun),
        (SUMMARISE_AND_STORE, nodes.summarise_and_store, nodes.asummarise_and_store),
    )
    graph.add_sequence([(name, graph_node(name, sync, asyn)) for name, sync, asyn in steps])  # each edge to the next
    graph.add_edge(START, VALIDATE)
    graph.add_edge(SUMMARISE_AND_STORE, END)
    return graph


def end_session(memory: SessionVectorMemory, *, user_id: str, session_id: str) -> Consolidation:
    """Consolidate a finished session into topic segments (call it where a session ends).

    Call it when a chat session ends (or from a scheduled job); it is idempotent and crash-safe.

    Raises:
        InvalidArgumentError: ``memory`` is not a :class:`SessionVectorMemory`, or an unfit id.
    """
    return check_memory(memory).for_user(user_id).consolidate(session_id)


async def aend_session(memory: SessionVectorMemory, *, user_id: str, session_id: str) -> Consolidation:
    """Async :func:`end_session`."""
    return await check_memory(memory).for_user(user_id).aconsolidate(session_id)
