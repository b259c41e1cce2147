"""Graph state and run context of the session-RAG graph."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from langchain_session_rag.errors import InvalidArgumentError, InvalidRequestError
from langchain_session_rag.identity import RunIdentity, run_identity


class SessionContext(TypedDict):
    """Run-scoped ids (``context=`` of ``invoke``, or ``config["configurable"]``), never stored in the state."""

    user_id: str
    session_id: str


class SessionRAGState(TypedDict, total=False):
    """State of one conversation thread.

    Only ``messages`` (a bounded recent window) and ``summary`` persist across turns; the other keys are
    overwritten every turn.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    """The recent window of the conversation; older turns live in the vector memory and the summary."""
    summary: str | None
    """Running summary of turns that left the window (when a summary model is configured)."""
    core_memory: str
    """The user's pinned core memory this turn (its blocks as ``memory.core.render()`` gives them)."""
    memories: list[Document]
    memory_mode: str
    """How this turn's memories were chosen: ``"top_k"`` or ``"all"`` (the long-context shortcut)."""
    relations: list[str]
    """Relation lines of the entities the question names, with markers (the prompt's ``relations`` section)."""
    documents: list[Document]
    prompt: list[dict[str, Any]] | None
    """The messages sent to the model this turn, as ``messages_to_dict`` gives them (``messages_from_dict``
    turns them back); dropped at the end of the turn unless the graph was built with ``keep_prompt=True``.
    Dicts, not message objects, so that ``stream_mode="messages"`` does not stream them."""
    budget_report: dict[str, Any]
    cache: dict[str, Any]
    """This turn's cache decision: ``{"hit": bool, "reason": str}``."""
    llm_calls: int
    """Model calls made this turn (answer and summary)."""


def run_ids(runtime: Runtime[Any]) -> tuple[str, str]:
    """The turn's ``(user_id, session_id)``, from the run's context or its ``configurable`` values.

    Raises:
        IdentityConflictError: The context and the configurable values name different users or sessions.
        InvalidRequestError: A missing or unfit id (the one class of a graph's input; see ``check_user_id`` and
            ``check_session_id`` for what is fit).
    """
    try:
        identity = run_identity(context=runtime.context)
    except InvalidArgumentError as exc:  # an unfit id of a graph run: the graph's one input error
        raise InvalidRequestError(str(exc)) from None
    return run_ids_of(identity)


def run_ids_of(identity: RunIdentity) -> tuple[str, str]:
    """``(user_id, session_id)`` of a run's identity, or an ``InvalidRequestError`` naming the missing one."""
    if identity.user_id is None or identity.session_id is None:
        missing = "user_id" if identity.user_id is None else "session_id"
        msg = (
            f"The run names no {missing!r}: invoke(..., context={{'user_id': ..., 'session_id': ...}}) "
            "or config={'configurable': {'user_id': ..., 'session_id': ...}}."
        )
        raise InvalidRequestError(msg)
    return identity.user_id, identity.session_id
