"""The nodes of the session-RAG graph, each with a sync and an async body, and the routing function."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langgraph.graph import END
from langgraph.runtime import Runtime

from langchain_session_rag._checks import check_int
from langchain_session_rag._time import utcnow
from langchain_session_rag.cache.erasure import SESSION_KEY
from langchain_session_rag.cache.scope import cache_scope
from langchain_session_rag.cache.semantic import SemanticCache
from langchain_session_rag.cache.sources import memory_source_check
from langchain_session_rag.errors import (
    InvalidArgumentError,
)
from langchain_session_rag.graph import pinned as tiers
from langchain_session_rag.graph.cache_keys import judge_hit, model_key, run_configurable
from langchain_session_rag.graph.model_window import budget_for, check_question
from langchain_session_rag.graph.names import RETRIEVE_DOCUMENTS, RETRIEVE_MEMORIES
from langchain_session_rag.graph.state import SessionContext, SessionRAGState, run_ids
from langchain_session_rag.graph.turn import (
    asked_message,
    check_turn,
    last_human_index,
    prompt_messages,
)
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.privacy.redaction import redact_message
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.prompt.history import SummaryBuffer, split_turns


@dataclass
class SessionRAGNodes:
    """The components the nodes use; one instance serves every user (each call is scoped by its context)."""

    model: BaseChatModel | None
    """The chat model of ``call_model`` (``None`` when an agent answers instead)."""
    memory: SessionVectorMemory
    documents: BaseRetriever | None = None
    cache: SemanticCache | None = None
    budget: TokenBudget | None = None
    window_turns: int = 6
    """Turns kept in the state; older ones are removed (they are in the vector memory already)."""
    summary: SummaryBuffer | None = None
    """Folds turns leaving the window into ``summary`` (one model call) when they hold ≥ ``summary_min_tokens``."""
    summary_min_tokens: int = 200
    memory_k: int = 4
    score_threshold: float | None = None
    """Minimum cosine similarity of a retrieved memory; ``None`` uses the memory's own ``score_threshold``, else
    ``DEFAULT_SCORE_THRESHOLD`` (0.1, as the CLI); ``-1`` keeps every candidate."""
    llm_string: str = ""
    """The model configuration in the cache key; by default the model's class and its public settings."""
    background_writes: bool | None = None
    """Hand the new exchange to the memory's writer thread instead of waiting for the store. ``None``: when the
    store is this process's alone (embedded); a store other processes read (a Chroma server) is written through,
    so every process sees a turn's exchange by the time its run ends."""
    long_context: bool = False
    """Send the user's whole memory, in time order, when it fits the budget's ``memories`` allocation (the
    long-context shortcut); top-``memory_k`` retrieval otherwise. ``budget_report["memory_mode"]`` says which ran."""
    core_memory: bool = True
    """Load the user's pinned core memory (``memory.core``) into every prompt (when the store keeps one)."""
    keep_prompt: bool = False
    """Keep the turn's prompt in the state after the turn (for debugging); by default it is dropped at the end of
    the turn, so checkpoints do not carry it."""

    def __post_init__(self) -> None:
        """Check the settings; default budget: the model's window (8K when the model does not say it)."""
        self._check()
        self.budget = budget_for(self.model, self.budget)
        if not self.llm_string and self.model is not None:
            self.llm_string = model_key(self.model)
        if self.cache is not None:  # forgetting memories deletes the answers derived from them; compact() covers it
            self.cache.link_memory(self.memory)

    def _check(self) -> None:
        """Refuse settings that would fail (or lose messages) only at the first turn."""
        kinds: tuple[tuple[str, object, tuple[type, ...]], ...] = (
            ("memory", self.memory, (SessionVectorMemory,)),
            ("model", self.model, (Runnable, type(None))),
            ("documents", self.documents, (BaseRetriever, type(None))),
            ("cache", self.cache, (SemanticCache, type(None))),
            ("budget", self.budget, (TokenBudget, type(None))),
            ("summary", self.summary, (SummaryBuffer, type(None))),
        )
        for name, value, kind in kinds:
            if not isinstance(value, kind):
                wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kind)
                msg = f"{name} must be a {wanted}, got {type(value).__name__}."
                raise InvalidArgumentError(msg)
        check_int("window_turns", self.window_turns, 1)
        check_int("memory_k", self.memory_k, 1)  # k: the one check of every path
        check_int("summary_min_tokens", self.summary_min_tokens, 0)

    def _cache_for(self, user_id: str) -> SemanticCache:
        """The caller's cache as seen by ``user_id``.

        Its stats and lock are the caller's object's, so ``cache.stats`` counts the graph's traffic; a per-user
        cache checks the memories behind its answers.
        """
        view = cast("SemanticCache", self.cache).for_user(user_id, share_stats=True)  # callers check it is set
        if not view.shared and view.source_check is None:
            view.source_check = memory_source_check(self.memory)
        return view

    @property
    def _write_through(self) -> bool:
        if self.background_writes is None:
            return not self.memory.service.backend.single_process
        return not self.background_writes

    @property
    def _budget(self) -> TokenBudget:
        return cast("TokenBudget", self.budget)  # set by the validator

    # -- validate ------------------------------------------------------------------------------
    def validate(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Refuse a turn that cannot be answered before any retrieval or model call."""
        check_turn(state.get("messages") or [])
        run_ids(runtime)
        check_question(self._budget, asked_message(state).text)
        return {"llm_calls": 0, "memories": [], "documents": [], "cache": {"hit": False, "reason": "off"}}

    def load_core(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Check the turn (:meth:`validate`), then load the user's core memory for this turn's prompt."""
        return {
            **self.validate(state, runtime),
            "core_memory": tiers.pinned_text(self.memory, run_ids(runtime)[0], self.core_memory),
        }

    async def aload_core(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`load_core` (the checks and the store read run in a worker thread: counting a question
        with a model's own tokenizer may read its file first).
        """  # noqa: D205
        return await asyncio.to_thread(self.load_core, state, runtime)

    # -- cache ---------------------------------------------------------------------------------
    def _cache_result(self, decision: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"cache": {"hit": decision.hit, "reason": decision.reason}}
        if decision.hit:  # the turn ends here: with the answer, and without the pinned core memory in the state
            out["messages"], out["core_memory"] = (
                [AIMessage(decision.answer or "", response_metadata={"cache_hit": True})],
                "",
            )
        return out

    def _cache_key(self, state: SessionRAGState, documents: Sequence[Document] | None = None) -> str:
        """The exact part of the cache key: the model configuration and a digest of the rest of the prompt.

        That is the instructions, summary, earlier turns of the window, the reference documents and the run's
        configurable values; the user's memories are checked separately on a hit (``cache_keys.judge_hit``).
        """
        budget = self._budget
        parts = {
            "llm": self.llm_string,
            "system": budget.system_prompt,
            "instructions": budget.memory_instructions,
            "summary": state.get("summary") or "",
            "core": state.get("core_memory") or "",
            "history": [[m.type, m.text] for m in state["messages"][: last_human_index(state["messages"])]],
            "documents": [
                [d.id or "", str(d.metadata.get("source", "")), d.page_content]
                for d in (state.get("documents", []) if documents is None else documents)
            ],
            "configurable": run_configurable(),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def _cacheable(self, state: SessionRAGState) -> bool:
        """A cache is configured and the question is text only (an image is not part of any key)."""
        messages = state["messages"]
        content = messages[last_human_index(messages)].content
        return self.cache is not None and (
            isinstance(content, str) or all(isinstance(b, dict) and b.get("type") == "text" for b in content)
        )

    def _fetch_documents(self, state: SessionRAGState) -> list[Document]:
        return [] if self.documents is None else self.documents.invoke(asked_message(state).text)

    async def _afetch_documents(self, state: SessionRAGState) -> list[Document]:
        return [] if self.documents is None else await self.documents.ainvoke(asked_message(state).text)

    def cache_lookup(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Answer from the user's semantic cache when it has really seen the question.

        The reference documents are retrieved first (they are part of the key); a hit is then checked against
        the user's memories (``cache_keys.judge_hit``).
        """
        if self.cache is None or not self._cacheable(state):
            return {}
        documents = self._fetch_documents(state)
        cache, question = self._cache_for(run_ids(runtime)[0]), asked_message(state).text
        decision = cache.decide(
            question, history=self._history_before_question(state), llm_string=self._cache_key(state, documents)
        )
        if decision.hit:
            memory = self.memory.for_user(run_ids(runtime)[0])
            memories = memory.invoke(question, **self._options(memory))
            decision = judge_hit(decision, memories, question=question, shared=cache.shared)
        return {**self._cache_result(decision), "documents": documents}

    async def acache_lookup(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`cache_lookup`."""
        if self.cache is None or not self._cacheable(state):
            return {}
        documents = await self._afetch_documents(state)
        cache, question = self._cache_for(run_ids(runtime)[0]), asked_message(state).text
        decision = await cache.adecide(
            question, history=self._history_before_question(state), llm_string=self._cache_key(state, documents)
        )
        if decision.hit:
            memory = self.memory.for_user(run_ids(runtime)[0])
            memories = await memory.ainvoke(question, **self._options(memory))
            decision = judge_hit(decision, memories, question=question, shared=cache.shared)
        return {**self._cache_result(decision), "documents": documents}

    # -- retrieval -----------------------------------------------------------------------------
    def _not_inwindow(self, state: SessionRAGState, docs: list[Document]) -> list[Document]:
        return [d for d in docs if not set(d.metadata.get("message_ids") or ["-"]) <= {m.id for m in state["messages"]}]

    def _options(self, memory: SessionVectorMemory, state: Any = None, *, whole: bool = True) -> dict[str, Any]:
        threshold = self.score_threshold if self.score_threshold is not None else memory.score_threshold
        threshold = DEFAULT_SCORE_THRESHOLD if threshold is None else threshold
        options: dict[str, Any] = {"k": self.memory_k, "source_type": ["session", "note"], "score_threshold": threshold}
        if self.long_context and whole:
            options["all_if_fits"] = tiers.memory_allowance(self._budget)
        # With the turn's state, turns in the window neither take a top-k slot nor count toward the whole memory.
        options["exclude_message_ids"] = None if state is None else [m.id for m in state["messages"] if m.id]
        return options

    def retrieve_memories(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Past exchanges and saved notes of this user, queried with the current user message only."""
        memory = self.memory.for_user(run_ids(runtime)[0])
        docs = memory.invoke(asked_message(state).text, **self._options(memory, state))
        relations = tiers.relations_for(memory, asked_message(state).text)
        return {"memories": self._not_inwindow(state, docs), "memory_mode": tiers.memory_mode(docs),
                "relations": relations}  # fmt: skip

    async def aretrieve_memories(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`retrieve_memories`."""
        memory = self.memory.for_user(run_ids(runtime)[0])
        docs = await memory.ainvoke(asked_message(state).text, **self._options(memory, state))
        relations = await asyncio.to_thread(tiers.relations_for, memory, asked_message(state).text)
        return {"memories": self._not_inwindow(state, docs), "memory_mode": tiers.memory_mode(docs),
                "relations": relations}  # fmt: skip

    def retrieve_documents(self, state: SessionRAGState) -> dict[str, Any]:
        """Reference documents from the configured retriever (reused when the cache lookup fetched them)."""
        if state.get("documents"):
            return {}
        return {"documents": self._fetch_documents(state)}

    async def aretrieve_documents(self, state: SessionRAGState) -> dict[str, Any]:
        """Async :meth:`retrieve_documents`."""
        if state.get("documents"):
            return {}
        return {"documents": await self._afetch_documents(state)}

    # -- prompt and model ----------------------------------------------------------------------
    def build_prompt(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Lay the turn out in the budget; a whole memory the budget cannot keep falls back to top-``memory_k``."""
        prompt = tiers.assemble(self._budget, state, state.get("memories", []))
        out: dict[str, Any] = {}
        if state.get("memory_mode") == "all" and tiers.memories_cut(prompt.report):
            memory = self.memory.for_user(run_ids(runtime)[0])
            docs = memory.invoke(asked_message(state).text, **self._options(memory, state, whole=False))
            out = {"memories": self._not_inwindow(state, docs), "memory_mode": "top_k"}
            prompt = tiers.assemble(self._budget, state, out["memories"])
        return {
            **out,
            **tiers.finished(prompt.report, out.get("memory_mode") or state.get("memory_mode"), prompt.messages),
        }

    async def abuild_prompt(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`build_prompt` (the fallback retrieval, if any, runs in a worker thread)."""
        return await asyncio.to_thread(self.build_prompt, state, runtime)

    @property
    def _model(self) -> BaseChatModel:
        if self.model is None:
            msg = "No chat model configured for call_model: pass a model to create_session_rag_graph."
            raise InvalidArgumentError(msg)
        return self.model

    def call_model(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Ask the model (token streaming works with ``stream_mode="messages"``).

        A process-wide LLM cache (``set_llm_cache(SemanticLLMCache(...))``) is scoped to this turn's user.
        """
        user = run_ids(runtime)[0]
        with cache_scope(user, private=bool(self.user_specific(state)), redact=self.memory.redact_secrets):
            answer = self._model.with_config(metadata={"user_id": user}).invoke(prompt_messages(state))
        return {"messages": [self._kept(answer)], "llm_calls": state.get("llm_calls", 0) + 1}

    async def acall_model(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`call_model`."""
        user = run_ids(runtime)[0]
        with cache_scope(user, private=bool(self.user_specific(state)), redact=self.memory.redact_secrets):
            answer = await self._model.with_config(metadata={"user_id": user}).ainvoke(prompt_messages(state))
        return {"messages": [self._kept(answer)], "llm_calls": state.get("llm_calls", 0) + 1}

    def _kept(self, answer: BaseMessage) -> BaseMessage:
        """The answer as the state keeps it: with its secrets replaced when the memory redacts (no checkpoint holds
        one; ``stream_mode="messages"`` streams the model's tokens before this).
        """  # noqa: D205
        return redact_message(answer) if self.memory.redact_secrets else answer

    # -- store ---------------------------------------------------------------------------------
    def _exchange(self, state: SessionRAGState) -> list[dict[str, Any]]:
        messages = state["messages"]
        start = last_human_index(messages)
        now = utcnow().isoformat()
        return [
            {"role": "user" if m.type == "human" else "assistant", "content": m.text, "id": m.id, "timestamp": now}
            for m in messages[start:]
            if m.type in {"human", "ai"} and m.text
        ]

    @staticmethod
    def user_specific(state: SessionRAGState) -> list[str]:
        """What in this turn's prompt belongs to the user.

        Memories, documents carrying a ``user_id``, the summary, earlier turns: an answer built on any of it
        is never written to a shared cache.
        """
        held = {
            "core_memory": bool(state.get("core_memory")),
            "memories": bool(state.get("memories")),
            "documents": any("user_id" in d.metadata for d in state.get("documents", [])),
            "summary": bool(state.get("summary")),
            "history": last_human_index(state["messages"]) > 0,
        }
        return [name for name, present in held.items() if present]

    def _store_plan(self, state: SessionRAGState) -> dict[str, Any]:
        """Arguments of this turn's writes; ``cache`` is None when the answer must not be cached."""
        plan: dict[str, Any] = {"exchange": self._exchange(state), "cache": None}
        if self.cache is None or state.get("cache", {}).get("hit") or not self._cacheable(state):
            return plan
        if self.cache.shared and self.user_specific(state):
            self.cache.note_skipped("private")
            return plan
        plan["cache"] = {
            "question": state["messages"][last_human_index(state["messages"])].text,
            "answer": state["messages"][-1].text,
            "history": self._history_before_question(state),
            "llm_string": self._cache_key(state),
            "sources": [] if self.cache.shared else state.get("memories", []),
        }
        return plan

    def _trim_plan(self, state: SessionRAGState) -> tuple[dict[str, Any], list[BaseMessage] | None]:
        """The window update, and the turns to fold into the summary (``None``: no summary call)."""
        turns = split_turns(state["messages"])
        old = [m for turn in turns[: max(len(turns) - self.window_turns, 0)] for m in turn]
        needed = self.summary is not None and sum(self._budget.count(m.text) for m in old) >= self.summary_min_tokens
        out: dict[str, Any] = {"messages": [RemoveMessage(id=m.id) for m in old if m.id]}
        if not self.keep_prompt:  # nor the pinned core memory: forget_all must leave no copy in checkpoints
            out["prompt"], out["core_memory"] = None, ""
        return out, old if old and needed else None

    @staticmethod
    def _with_summary(out: dict[str, Any], state: SessionRAGState, window: Any) -> dict[str, Any]:
        return {**out, "summary": window.summary, "llm_calls": state.get("llm_calls", 0) + window.llm_calls}

    def summarise_and_store(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Store the new exchange (retrievable on the next turn), cache the answer, keep the window bounded.

        The turn's prompt is dropped from the state here, so checkpoints do not carry it.
        """
        (user, session), plan = run_ids(runtime), self._store_plan(state)
        self.memory.for_user(user).add_messages(
            plan["exchange"], session_id=session, chunking="exchange", wait=self._write_through
        )
        if plan["cache"] is not None and self.cache is not None:
            self._cache_for(user).update(**plan["cache"], metadata={SESSION_KEY: session})
        out, fold = self._trim_plan(state)
        if fold is None or self.summary is None:
            return out
        return self._with_summary(out, state, self.summary.fold(fold, state.get("summary")))

    async def asummarise_and_store(self, state: SessionRAGState, runtime: Runtime[SessionContext]) -> dict[str, Any]:
        """Async :meth:`summarise_and_store`."""
        (user, session), plan = run_ids(runtime), self._store_plan(state)
        await self.memory.for_user(user).aadd_messages(
            plan["exchange"], session_id=session, chunking="exchange", wait=self._write_through
        )
        if plan["cache"] is not None and self.cache is not None:
            await self._cache_for(user).aupdate(**plan["cache"], metadata={SESSION_KEY: session})
        out, fold = self._trim_plan(state)
        if fold is None or self.summary is None:
            return out
        return self._with_summary(out, state, await self.summary.afold(fold, state.get("summary")))

    @staticmethod
    def _history_before_question(state: SessionRAGState) -> list[str]:
        messages = state["messages"]
        return [m.text for m in messages[: last_human_index(messages)] if m.type in {"human", "ai"}]


def route_after_cache(state: SessionRAGState) -> list[str] | str:
    """End the turn on a cache hit; otherwise retrieve memories and documents in parallel."""
    if state.get("cache", {}).get("hit"):
        return END
    return [RETRIEVE_MEMORIES, RETRIEVE_DOCUMENTS]
