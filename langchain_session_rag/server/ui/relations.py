"""The Relations page: what the memory says about a project, tool, person or place, since when, and where."""

from __future__ import annotations

from datetime import datetime

from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.relations.graph import EntityInfo, Relation, Source
from langchain_session_rag.server.schemas import RETRYABLE
from langchain_session_rag.server.ui.html import esc, field, notice, session_url, table, url

MOST_ENTITIES = 60
"""The most entities the page lists when none is asked for (the most mentioned first)."""


def _day(value: datetime | None, unknown: str) -> str:
    return value.date().isoformat() if value is not None else unknown


def _held(rel: Relation) -> str:
    spans = [f"{_day(start, 'unknown')} → {_day(end, 'now')}" for start, end in rel.intervals]
    return esc("; ".join(spans) or "unknown")


def _said(sources: list[Source]) -> str:
    links = [
        f'<a href="{session_url(s.session_id)}" aria-label="{esc(s.marker)}: open its session">{esc(s.marker)}</a>'
        if s.session_id
        else esc(s.marker)
        for s in sources
    ]
    return " ".join(links)


def _relation_row(rel: Relation) -> list[str]:
    other = f'<a href="{url("relations", entity=rel.object)}">{esc(rel.object)}</a>'
    subject = f'<a href="{url("relations", entity=rel.subject)}">{esc(rel.subject)}</a>'
    return [
        f"{subject} — {esc(rel.predicate.replace('_', ' '))} → {other}",
        "yes" if rel.current else "no",
        _held(rel),
        esc(rel.replaced_by or ""),
        _said(list(dict.fromkeys(rel.sources + ([rel.closed_by] if rel.closed_by is not None else [])))),
    ]


def _entity_row(info: EntityInfo) -> list[str]:
    return [
        f'<a href="{url("relations", entity=info.name)}">{esc(info.name)}</a>',
        esc(info.type),
        esc(", ".join(info.aliases)),
        str(len(info.chunk_ids)),
    ]


async def relations_body(mine: SessionVectorMemory, entity: str, as_of: str) -> str:
    """The form and, for an entity, its relations (current and past); without one, the entities known."""
    form = (
        f'<form method="get" action="{url("relations")}" role="search" aria-label="Find relations" class="filters">'
        + field("entity", "Entity", value=entity, kind="search", hint="A project, tool, person, place or pet.")
        + field(
            "as_of",
            "As of",
            value=as_of,
            hint="A date (YYYY-MM-DD, its start in UTC): only what held then. Empty: all, current and past.",
        )
        + '<button type="submit">Show</button></form>'
    )
    try:
        if not entity.strip():
            known = await mine.aentities()
            rows = [_entity_row(info) for info in known[:MOST_ENTITIES]]
            shown = f"the {MOST_ENTITIES} most mentioned of {len(known):,}" if len(known) > MOST_ENTITIES else "all"
            return form + table(
                f"Entities in your memory ({shown}, the most mentioned first)",
                ["Entity", "Type", "Also called", "Chunks"],
                rows,
                empty="No entity found in your memory yet.",
            )
        found = await mine.arelations(entity, as_of or None)
    except RETRYABLE:
        raise  # the store does not answer: 503 with Retry-After, the API's rule
    except SessionRAGError as exc:
        return form + notice(str(exc), kind="error")
    when = f" as of {as_of}" if as_of else ""
    rows = [_relation_row(rel) for rel in found]
    summary = f'<p role="status">{len(found)} relation(s) of “{esc(entity)}”{esc(when)}.</p>'
    return (
        summary
        + form
        + table(
            f"Relations of “{entity}”{when}",
            ["Relation", "Holds now", "Held", "Replaced by", "Said in"],
            rows,
            empty="Your memory holds no relation of this entity.",
        )
    )
