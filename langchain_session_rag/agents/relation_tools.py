"""A tool for tool-calling agents: what the user's memories say about an entity, how two entities are linked.

Like the other memory tools, the user is never an argument the model fills in: each call serves the user its run
names (see :meth:`SessionVectorMemory.for_run <langchain_session_rag.SessionVectorMemory.for_run>`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field

from langchain_session_rag.agents.tools import structured_tool
from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.memory.retriever import SessionVectorMemory, check_memory
from langchain_session_rag.prompt.quoting import quote_data
from langchain_session_rag.relations.graph import Relation

RELATIONS_DESCRIPTION = (
    "Look up what the user's long-term memory says about an entity (a project, tool, person, place): its relations "
    "('analytics service — uses → ClickHouse'), current and past, each with the marker of the conversation that "
    "said it, such as [S: 2026-03-09]. Give 'other' to see how two entities are linked (up to two steps), "
    "'as_of' (a date) for what held then. Cite the markers; a relation marked 'until' no longer holds."
)


class RelationsInput(BaseModel):
    """The arguments the model fills in."""

    entity: str = Field(description="The entity to look up, as the user names it.", min_length=1, max_length=200)
    other: str | None = Field(default=None, description="A second entity: how are the two linked?", max_length=200)
    as_of: str | None = Field(default=None, description="A date (2026-03-01): only what held then.", max_length=40)
    hops: Literal[1, 2] = Field(default=1, description="1: the entity's own relations; 2: also its neighbours'.")


def _lines(relations: list[Relation]) -> str:
    return "\n".join(quote_data(r.render()) for r in relations)


def _answer(
    view: SessionVectorMemory, entity: str, other: str | None, as_of: str | None, hops: int
) -> tuple[str, list[dict[str, Any]]]:
    if other:
        paths = view.paths(entity, other, as_of=as_of)
        text = "\n\n".join(f"Link {n}:\n{_lines(p)}" for n, p in enumerate(paths, 1))
        found = [r for p in paths for r in p]
        return text or f"No link between {entity!r} and {other!r} in memory.", [asdict(r) for r in found]
    rels = view.neighbours(entity, hops=hops, as_of=as_of) if hops == 2 else view.relations(entity, as_of=as_of)  # noqa: PLR2004
    return _lines(rels) or f"Nothing about {entity!r} in memory.", [asdict(r) for r in rels]


def create_relations_tool(
    memory: SessionVectorMemory, *, name: str = "memory_relations", description: str = RELATIONS_DESCRIPTION
) -> BaseTool:
    """A tool over the run's user's relation graph (sync and async); its artifact is the relations as dicts.

    Example:
        .. code-block:: python

            import tempfile
            from langchain_session_rag import SessionVectorMemory
            from langchain_session_rag.agents import create_relations_tool

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="default", user_from_run=True)
            memory.for_user("alice").add_note("The billing API runs on Fly.io.", timestamp="2026-02-06")
            tool = create_relations_tool(memory)
            text = tool.invoke({"entity": "billing API"}, {"configurable": {"user_id": "alice"}})
            assert text == "> billing API — runs on → Fly.io [S: 2026-02-06]"

    Raises:
        InvalidArgumentError: ``memory`` is not a ``SessionVectorMemory``.
    """
    check_memory(memory)

    def look(entity: str, config: RunnableConfig, other: str | None = None, as_of: str | None = None,
             hops: int = 1) -> tuple[str, list[dict[str, Any]]]:  # fmt: skip
        try:
            return _answer(memory.for_run(config), entity, other, as_of, hops)
        except SessionRAGError as exc:
            raise ToolException(str(exc)) from exc

    return structured_tool(look, None, name, description, RelationsInput, artifact=True)
