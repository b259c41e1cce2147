"""Memory tools for tool-calling agents: search the user's memories, and save, correct or forget one.

The user is never a tool argument the model fills in: each call serves the user its run names
(``config["configurable"]["user_id"]``, or the ``context`` of a LangGraph / ``create_agent`` run), through
:meth:`SessionVectorMemory.for_run <langchain_session_rag.SessionVectorMemory.for_run>`. A prompt-injected tool call
therefore cannot reach another user's memories: it can only name what to look for.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from langchain_session_rag._checks import check_int, safe_session_id
from langchain_session_rag.agents.namespaces import encode_value, with_text
from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.identity import run_identity
from langchain_session_rag.memory.retrieval import check_search_kwargs
from langchain_session_rag.memory.retriever import SessionVectorMemory, check_memory
from langchain_session_rag.memory.worth import MODEL_AUTHOR, USER_AUTHOR, Author, by_model
from langchain_session_rag.prompt.quoting import quote_data, quote_field, safe_marker
from langchain_session_rag.stores.records import RESERVED_KEYS, RESULT_KEYS

Action = Literal["create", "update", "delete"]

SEARCH_DESCRIPTION = (
    "Search the user's long-term memory: past conversations and saved notes. Use it when the answer may depend on "
    "something the user said before (their projects, preferences, decisions, people, dates). Each result starts "
    "with a marker such as [S: 2026-02-06] (the date it was said) and an id; cite the marker. Older results can be "
    "stale: prefer what the user says now."
)
MANAGE_DESCRIPTION = (
    "Save, correct or forget a long-term memory of the user. action='create' with content saves a new note (a "
    "fact, preference or decision worth remembering); action='update' with id and content corrects a memory "
    "(ids come from search_memory; the user's own words are kept beside your correction); action='delete' with "
    "id forgets a memory the user asked you to forget."
)


def structured_tool(
    func: Any, coroutine: Any, name: str, description: str, schema: type[BaseModel], *, artifact: bool
) -> BaseTool:
    """A structured tool whose errors (a run without a user, invalid arguments) reach the model as its answer.

    Without ``coroutine`` the async tool runs ``func`` in a worker thread, with the run's context (LangChain's).
    """
    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=description,
        args_schema=schema,
        response_format="content_and_artifact" if artifact else "content",
        handle_tool_error=True,
        handle_validation_error=True,
    )


def check_tool_args(memory: object, actions: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    """The memory is a ``SessionVectorMemory`` and ``actions`` a non-empty subset of ``known``; return them.

    Raises:
        InvalidArgumentError: Either is not.
    """
    check_memory(memory)
    allowed = tuple(actions)
    if not allowed or any(a not in known for a in allowed):
        msg = f"actions must name some of {', '.join(map(repr, known))}, got {actions!r}."
        raise InvalidArgumentError(msg)
    return allowed


def check_acting_for_user(acting_for_user: object) -> Author:
    """The author of a model's writes: ``"user"`` when the application says the tool acts for the user.

    Raises:
        InvalidArgumentError: ``acting_for_user`` is not a bool.
    """
    if not isinstance(acting_for_user, bool):
        msg = f"acting_for_user must be True or False, got {acting_for_user!r:.60}."
        raise InvalidArgumentError(msg)
    return USER_AUTHOR if acting_for_user else MODEL_AUTHOR


def format_memories(documents: list[Document]) -> str:
    """The compact text a search tool returns: per memory its marker, session, score and id, then its quoted text.

    The header is one line whatever the metadata holds: the marker goes through ``safe_marker``, the session id and
    the id through ``quote_field`` (a plain id as it is, anything else as an escaped JSON string), and the text
    through ``quote_data`` (every line starts with ``"> "``).
    """
    if not documents:
        return "No memories found."
    blocks = []
    for n, doc in enumerate(documents, 1):
        meta = doc.metadata
        parts = [safe_marker(meta.get("marker") or "[S: unknown date]")]
        if meta.get("session_id"):
            parts.append(f"session {quote_field(meta['session_id'])}")
        if isinstance(meta.get("score"), int | float):
            parts.append(f"score {meta['score']:.2f}")
        parts.append(f"id {quote_field(doc.id)}")
        blocks.append(f"{n}. " + " · ".join(parts) + "\n" + quote_data(doc.page_content))
    return "\n\n".join(blocks)


class SearchMemoryInput(BaseModel):
    """Arguments the model gives the search tool."""

    query: str = Field(description="What to look for: the user's question or a few keywords.")
    limit: int = Field(default=4, ge=1, le=20, description="How many memories to return.")


class ManageMemoryInput(BaseModel):
    """Arguments the model gives the manage tool."""

    action: Action = Field(default="create", description="create, update or delete.")
    content: str | None = Field(default=None, description="The memory to save (create, update).")
    id: str | None = Field(default=None, description="The id of the memory to change (update, delete).")


def create_search_memory_tool(
    memory: SessionVectorMemory,
    *,
    name: str = "search_memory",
    description: str = SEARCH_DESCRIPTION,
    max_results: int = 20,
    **search_options: Any,
) -> BaseTool:
    """A tool that searches the run's user's memories (sync and async), returning text the model can cite.

    The user comes from the run (see :meth:`SessionVectorMemory.for_run`); the model supplies only ``query`` and
    ``limit``. The tool's artifact (``ToolMessage.artifact``) is the list of retrieved documents.

    Args:
        memory: The memory to search. Build it with ``user_from_run=True`` for an agent that serves many users.
        name: The tool name the model sees.
        description: The tool description the model sees.
        max_results: The most memories one call may return, whatever ``limit`` the model asks for.
        **search_options: Retrieval options of every call (``session_ids``, ``since``, ``source_type``, ...).

    Example:
        .. code-block:: python

            import tempfile
            from langchain_session_rag import SessionVectorMemory, create_search_memory_tool

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="default", user_from_run=True)
            memory.for_user("alice").add_note("Alice deploys the shop to Fly.io.", timestamp="2026-02-06")
            search = create_search_memory_tool(memory)
            text = search.invoke({"query": "where do we deploy?"}, {"configurable": {"user_id": "alice"}})
            print(text)
            # 1. [S: 2026-02-06] · score 0.23 · id 2b54ef6a…
            # > Alice deploys the shop to Fly.io.
            assert "Fly.io" in text
            # An agent: create_agent(model, tools=[search, create_manage_memory_tool(memory)])
    """
    check_memory(memory)
    check_int("max_results", max_results, 1)
    if "k" in search_options:
        msg = "The search tool sets k from the model's limit (at most max_results=); pass max_results instead of k."
        raise InvalidArgumentError(msg)
    check_search_kwargs(dict(search_options))  # a bad standing option fails here, not at the model's first call

    def search(query: str, config: RunnableConfig, limit: int = 4) -> tuple[str, list[Document]]:
        try:
            docs = memory.for_run(config).invoke(query, config, k=min(limit, max_results), **search_options)
        except SessionRAGError as exc:
            raise ToolException(str(exc)) from exc
        return format_memories(docs), docs

    async def asearch(query: str, config: RunnableConfig, limit: int = 4) -> tuple[str, list[Document]]:
        try:
            view = memory.for_run(config)
            docs = await view.ainvoke(query, config, k=min(limit, max_results), **search_options)
        except SessionRAGError as exc:
            raise ToolException(str(exc)) from exc
        return format_memories(docs), docs

    return structured_tool(search, asearch, name, description, SearchMemoryInput, artifact=True)


def _manage(  # noqa: PLR0911, PLR0917 - one answer per outcome; one argument per part of a call
    view: SessionVectorMemory, action: Action, content: str | None, memory_id: str | None, session: str, author: Author
) -> str:
    if action == "create":
        if not content or not content.strip():
            return "Nothing saved: give the memory as content."
        return f"Saved memory {quote_field(view.add_note(content, session_id=session, author=author))}."
    if not memory_id:
        return f"Nothing changed: action={action!r} needs the id of a memory (from search_memory)."
    found = view.get_by_ids([memory_id])
    if not found:
        return f"Nothing changed: there is no memory with id {quote_field(memory_id)}."
    if action == "delete":
        view.forget(ids=[memory_id])
        return f"Forgot memory {quote_field(memory_id)}."
    if not content or not content.strip():
        return "Nothing changed: give the corrected memory as content."
    return _update(view, found[0].metadata, content, memory_id, session, author)


def _update(  # noqa: PLR0917 - one argument per part of a call
    view: SessionVectorMemory, old: dict[str, Any], content: str, memory_id: str, session: str, author: Author
) -> str:
    """Correct a memory: the user's words are kept unless the tool acts for the user (see the tool's docstring)."""
    kept = safe_session_id(str(old.get("session_id") or session))  # a session id stored before ids were checked
    if author == MODEL_AUTHOR and not by_model(old):  # the user's words stay; the model's text is its claim
        new_id = view.add_note(content, key=f"correction:{memory_id}", session_id=kept, author=author)
        return (
            f"Kept memory {quote_field(memory_id)} as the user's own words; your correction is saved as memory "
            f"{quote_field(new_id)} (the assistant's claim)."
        )
    if old.get("source_type") == "note":  # a note keeps its key, id and metadata; a store item its value's fields
        key, extra = str(old.get("note_key")), {k: v for k, v in old.items() if k not in RESERVED_KEYS | RESULT_KEYS}
        if isinstance(extra.get("store_value"), str):
            fields = json.loads(str(extra.get("store_index") or "[]"))
            extra["store_value"] = encode_value(with_text(json.loads(extra["store_value"]), content, fields))
    else:
        key, extra = f"correction:{memory_id}", {}
    new_id = view.add_note(content, key=key, session_id=kept, metadata=extra, author=author)
    if new_id != memory_id:
        view.forget(ids=[memory_id])
    return f"Updated memory {quote_field(memory_id)}: it is now memory {quote_field(new_id)}."


def create_manage_memory_tool(
    memory: SessionVectorMemory,
    *,
    name: str = "manage_memory",
    description: str = MANAGE_DESCRIPTION,
    actions: tuple[Action, ...] = ("create", "update", "delete"),
    acting_for_user: bool = False,
) -> BaseTool:
    """A tool that saves, corrects or forgets a memory of the run's user (sync and async).

    What the model writes is the model's: a note it creates or corrects is stored with ``author="model"``, so recall
    ranks and labels it as the assistant's claim ("said by the assistant") and it never supersedes what the user
    stated (a retrieved text that tells the model to "note that the password changed" cannot replace the user's
    own statement). ``acting_for_user=True`` is for an application whose tool writes only what the user dictated
    (the user confirms each call, say): its notes are then the user's statements.

    ``create`` saves a note (``SessionVectorMemory.add_note``, in the run's session when it names one);
    ``update`` corrects a memory: a memory in the user's words (a conversation chunk, a note the user saved) is
    kept as it is and the model's text saved as its claim beside it, so a model cannot erase what the user said;
    a note a model wrote is replaced (it keeps its id). With ``acting_for_user=True`` an update replaces any memory
    (a note keeps its id; a conversation chunk is forgotten and the correction saved as a note); ``delete``
    forgets a memory (``forget(ids=[...])``; ``compact()`` erases it from the store's files). Ids of another
    user's memories are treated as unknown. The user comes from the run (see :meth:`SessionVectorMemory.for_run`),
    never from the model.

    Args:
        memory: The memory to change.
        name: The tool name the model sees.
        description: The tool description the model sees.
        actions: The actions the model may take (e.g. ``("create",)`` for an agent that may only save).
        acting_for_user: Store the model's notes as the user's statements (default: as the model's claims).
    """
    allowed = check_tool_args(memory, actions, ("create", "update", "delete"))
    author = check_acting_for_user(acting_for_user)

    def manage(
        config: RunnableConfig,
        action: Action = "create",
        content: str | None = None,
        id: str | None = None,  # noqa: A002 - the argument name the model sees
    ) -> str:
        if action not in allowed:
            return f"Nothing changed: this tool may only {', '.join(allowed)}."
        try:
            view = memory.for_run(config)
            return _manage(view, action, content, id, run_identity(config).session_id or "", author)
        except SessionRAGError as exc:
            raise ToolException(str(exc)) from exc

    return structured_tool(manage, None, name, description, ManageMemoryInput, artifact=False)
