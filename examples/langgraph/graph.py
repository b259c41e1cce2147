"""The session-RAG graph and its memory, served by LangGraph's server (``langgraph dev``; see langgraph.json).

One memory serves both: ``generate_store`` opens it as the server's store (what ``client.store`` and every run's
``runtime.store`` reach), and ``make_graph`` builds the graph over that same store's memory. Configuration is by
environment variable:

- ``SESSION_RAG_LANGGRAPH_STORE``: folder of the embedded store (default ``.session-rag-langgraph`` in the
  server's working directory). ``SESSION_RAG_LANGGRAPH_CHROMA=host:port`` uses a Chroma server instead.
- ``SESSION_RAG_MASTER_KEY``: with a master key, the memory is encrypted at rest and so are the graph's
  checkpoints (``generate_checkpointer``: a SQLite file, ``SESSION_RAG_LANGGRAPH_CHECKPOINTS``, default
  ``.session-rag-langgraph.checkpoints.sqlite``, written through ``encrypted_serde``). Without one, checkpoints
  stay in ``langgraph dev``'s own files under ``.langgraph_api/``.
- ``SESSION_RAG_LANGGRAPH_MODEL``: the chat model. ``local`` (default): the bundled SmolLM2 in process, offline.
  ``echo``: a stand-in for tests that answers with its own prompt (what the memory retrieved shows in the
  answer). ``package.module:name``: any LangChain chat model (an instance, or a function returning one).

The user of a run is the authenticated one (``auth.py``); the session is the run's ``context["session_id"]``,
else its thread.
"""

# ruff: noqa: INP001, ARG002 - a file langgraph.json loads by path; the chat model interface's unused arguments
from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph_sdk.runtime import ServerRuntime

from langchain_session_rag import SessionMemoryStore, SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph, encrypted_serde
from langchain_session_rag.privacy import MASTER_KEY_ENV

STORE_ENV = "SESSION_RAG_LANGGRAPH_STORE"
CHROMA_ENV = "SESSION_RAG_LANGGRAPH_CHROMA"
MODEL_ENV = "SESSION_RAG_LANGGRAPH_MODEL"
CHECKPOINTS_ENV = "SESSION_RAG_LANGGRAPH_CHECKPOINTS"
DEFAULT_STORE = ".session-rag-langgraph"
DEFAULT_CHECKPOINTS = ".session-rag-langgraph.checkpoints.sqlite"
NAMESPACE = ("memories", "{user_id}")
"""The store's namespaces: ``("memories", user_id, ...)``; auth.py keeps each user inside their own."""


class EchoChatModel(BaseChatModel):
    """A chat model for tests: answers with what its prompt recalled, word by word (no weights, instant).

    The answer is ``"Recalled: "`` and the user lines of the retrieved records (``> User: ...``), or
    ``"Recalled nothing."``: which memories a turn retrieved shows in the answer.
    """

    @property
    def _llm_type(self) -> str:
        return "session-rag-echo"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(_echo(messages)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for word in _echo(messages).split(" "):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
            if run_manager is not None:
                run_manager.on_llm_new_token(word + " ", chunk=chunk)
            yield chunk


def _echo(messages: list[BaseMessage]) -> str:
    said = [
        line.removeprefix("> User: ") for m in messages for line in m.text.splitlines() if line.startswith("> User: ")
    ]
    return "Recalled: " + " / ".join(said) if said else "Recalled nothing."


@functools.cache
def generate_store() -> SessionMemoryStore:
    """The server's store: the session memory, one per process (the server may ask for it more than once)."""
    chroma = os.environ.get(CHROMA_ENV)
    if chroma:
        host, _, port = chroma.rpartition(":")
        memory = SessionVectorMemory.server(host or "127.0.0.1", int(port), user_id="server")
    else:
        memory = SessionVectorMemory.local(path=os.environ.get(STORE_ENV) or DEFAULT_STORE, user_id="server")
    return SessionMemoryStore(memory, namespace=NAMESPACE)


@contextlib.asynccontextmanager
async def generate_checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The server's checkpointer: encrypted with the master key when one is set, else ``langgraph dev``'s own.

    A checkpoint holds a turn's question, the memories it recalled and the prompt. With ``SESSION_RAG_MASTER_KEY``
    they go to a SQLite file through ``encrypted_serde`` (AES-256-GCM under a key derived from the master key); a
    user's threads are erased from it with ``apurge_threads``. The server enters this once per event loop.
    """
    if not os.environ.get(MASTER_KEY_ENV):
        from langgraph_runtime_inmem.checkpoint import Checkpointer  # noqa: PLC0415 - the dev server's own

        yield Checkpointer()
        return
    import aiosqlite  # noqa: PLC0415 - only with a key
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: PLC0415

    async with aiosqlite.connect(os.environ.get(CHECKPOINTS_ENV) or DEFAULT_CHECKPOINTS) as conn:
        saver = AsyncSqliteSaver(conn, serde=encrypted_serde())
        await saver.setup()
        yield saver


def _chat_model() -> BaseChatModel:
    name = os.environ.get(MODEL_ENV) or "local"
    if name == "echo":
        return EchoChatModel()
    if name == "local":
        from langchain_session_rag.models.local_llm import LocalChatModel  # noqa: PLC0415 - loads llama.cpp

        return LocalChatModel()
    module, _, attribute = name.partition(":")
    if not attribute:
        msg = f"{MODEL_ENV}={name!r}: use 'local', 'echo' or 'package.module:name' (a LangChain chat model)."
        raise ValueError(msg)
    found = getattr(importlib.import_module(module), attribute)
    model = found if isinstance(found, BaseChatModel) else found()
    if not isinstance(model, BaseChatModel):
        msg = f"{MODEL_ENV}={name!r} gave {type(model).__name__}, not a LangChain chat model."
        raise TypeError(msg)
    return model


@functools.cache
def _compiled(store: SessionMemoryStore) -> Any:
    # The prompt's budget comes from the model (LocalChatModel's n_ctx, ChatOllama's num_ctx, ...).
    return create_session_rag_graph(_chat_model(), store.memory).compile()


def make_graph(runtime: ServerRuntime[Any]) -> Any:
    """The graph over the server's store (built once per process; the server adds its checkpointer and store)."""
    store = runtime.store
    if not isinstance(store, SessionMemoryStore):
        msg = (
            f"The server's store is {type(store).__name__}, not the session memory: langgraph.json needs "
            '"store": {"path": "./examples/langgraph/graph.py:generate_store"}.'
        )
        raise TypeError(msg)
    return _compiled(store)
