"""The memory endpoints: search, sessions, relations, forget (with a receipt), export, core memory; each user's own.

Every endpoint acts for the user the request's credentials name; there is no parameter naming a user, so no
request can reach another user's memory.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.relations.graph import Relation, Source
from langchain_session_rag.server.http import parse_body, read_body
from langchain_session_rag.server.schemas import ApiError, unavailable


class ForgetRequest(BaseModel):
    """``POST /v1/memory/forget``: what to forget (every criterion given must match), or ``all``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = None
    before: str | None = None
    """An ISO 8601 time: chunks stamped earlier."""
    ids: list[str] | None = Field(default=None, max_length=10_000)
    all: bool = False
    """Everything of this user, core memory included; alone (with another criterion: refused, nothing forgotten)."""

    @model_validator(mode="after")
    def _all_alone(self) -> ForgetRequest:
        given = {"session_id": self.session_id, "before": self.before, "ids": self.ids}
        others = [name for name, value in given.items() if value is not None]
        if self.all and others:
            msg = (
                f'"all": true forgets everything of this user, core memory included, so it cannot be combined with '
                f'{", ".join(others)}: send {{"all": true}} alone, or drop it to forget only what the other '
                "criteria match"
            )
            raise InvalidArgumentError(msg)  # a ValueError: pydantic reports it, the route answers 422
        return self


class CoreWrite(BaseModel):
    """``PUT /v1/memory/core/{block}``: the block's new text."""

    model_config = ConfigDict(extra="forbid")

    text: str


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _source(source: Source) -> dict[str, Any]:
    return {
        "chunk_id": source.chunk_id,
        "session_id": source.session_id,
        "timestamp": _when(source.timestamp),
        "marker": source.marker,
    }


def relation_json(rel: Relation) -> dict[str, Any]:
    """A relation as the API returns it: its line, validity intervals and the chunks it came from."""
    return {
        "object": "memory.relation",
        "line": rel.render(),
        "subject": rel.subject,
        "predicate": rel.predicate,
        "object_name": rel.object,
        "current": rel.current,
        "valid_from": _when(rel.valid_from),
        "valid_to": _when(rel.valid_to),
        "intervals": [[_when(start), _when(end)] for start, end in rel.intervals],
        "replaced_by": rel.replaced_by,
        "sources": [_source(s) for s in rel.sources],
        "closed_by": _source(rel.closed_by) if rel.closed_by is not None else None,
    }


def _refused(exc: SessionRAGError) -> ApiError:
    """422 for what the memory refuses; 503 for a store that did not answer (retryable, nothing changed)."""
    return unavailable(exc) or ApiError(422, str(exc), code=type(exc).__name__)


def add_memory_routes(
    app: FastAPI, memory: SessionVectorMemory, user_of: Callable[[Request], str], max_body_bytes: int
) -> None:
    """Add ``/v1/memory/...`` to ``app``; ``user_of`` names the request's user (or raises 401)."""

    @app.get("/v1/memory/search")
    async def search(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=10_000)],
        k: Annotated[int, Query(ge=1, le=50)] = 5,
    ) -> dict[str, Any]:
        mine = memory.for_user(user_of(request))
        try:
            docs = await mine.ainvoke(q, k=k)
        except SessionRAGError as exc:
            raise _refused(exc) from exc
        data = [
            {
                "id": d.id,
                "text": d.page_content,
                "session_id": d.metadata.get("session_id"),
                "timestamp": d.metadata.get("timestamp"),
                "marker": d.metadata.get("marker"),
                "similarity": d.metadata.get("similarity"),
                "score": d.metadata.get("score"),
            }
            for d in docs
        ]
        return {"object": "list", "data": data}

    @app.get("/v1/memory/sessions")
    async def sessions(request: Request) -> dict[str, Any]:
        mine = memory.for_user(user_of(request))
        data = [
            {
                "session_id": s.session_id,
                "started": _when(s.started),
                "last_active": _when(s.last_active),
                "chunks": s.chunks,
                "messages": s.messages,
                "title": s.title,
            }
            for s in await mine.alist_sessions()
        ]
        return {"object": "list", "data": data}

    @app.get("/v1/memory/relations")
    async def relations(
        request: Request,
        entity: Annotated[str, Query(min_length=1, max_length=200)],
        to: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        as_of: Annotated[str | None, Query(max_length=64)] = None,
        hops: Annotated[int | None, Query(ge=1, le=2)] = None,
    ) -> dict[str, Any]:
        return await find_relations(memory.for_user(user_of(request)), entity, to, as_of, hops)

    @app.post("/v1/memory/forget")
    async def forget(request: Request) -> dict[str, Any]:
        user = user_of(request)
        asked = parse_body(ForgetRequest, await read_body(request, max_body_bytes))
        return await forget_with_receipt(memory, user, asked)

    @app.get("/v1/memory/export")
    async def export(request: Request) -> Response:
        mine = memory.for_user(user_of(request))
        await memory.aflush()
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "export.jsonl"
            count = await mine.aexport_jsonl(path, encrypt=False)  # the user's own data, to the user: readable
            text = path.read_bytes()
        return Response(text, media_type="application/x-ndjson", headers={"X-Chunks": str(count)})

    @app.get("/v1/memory/core")
    async def core_get(request: Request) -> dict[str, Any]:
        mine = memory.for_user(user_of(request))
        blocks = await asyncio.to_thread(mine.core.blocks)
        return {"object": "memory.core", "blocks": blocks, "limits": mine.core.limits}

    @app.put("/v1/memory/core/{block}")
    async def core_put(block: str, request: Request) -> dict[str, Any]:
        mine = memory.for_user(user_of(request))
        text = parse_body(CoreWrite, await read_body(request, max_body_bytes)).text
        try:
            version = await mine.core.awrite(block, text)
        except SessionRAGError as exc:
            raise _refused(exc) from exc
        return {
            "object": "memory.core_version",
            "block": version.block,
            "version": version.version,
            "text": version.text,
            "at": version.at.isoformat(),
        }


async def find_relations(
    mine: SessionVectorMemory, entity: str, to: str | None, as_of: str | None, hops: int | None
) -> dict[str, Any]:
    """``entity``'s relations (``hops=2``: and its neighbours'), or the chains linking it to ``to``.

    Chains are at most ``hops`` relations long (2 by default). ``as_of``: only what held then (an ISO 8601 date or
    time; a date is its start, 00:00 UTC).

    Raises:
        ApiError: 422 for what the memory refuses, 503 for a store that did not answer.
    """
    try:
        if to is not None:
            chains = await mine.apaths(entity, to, max_hops=hops or 2, as_of=as_of)
            paths = [{"object": "memory.path", "relations": [relation_json(r) for r in chain]} for chain in chains]
            return {"object": "list", "data": paths}
        many = hops is not None and hops > 1
        found = await (mine.aneighbours(entity, hops=2, as_of=as_of) if many else mine.arelations(entity, as_of))
    except SessionRAGError as exc:
        raise _refused(exc) from exc
    return {"object": "list", "data": [relation_json(r) for r in found]}


async def forget_with_receipt(memory: SessionVectorMemory, user: str, asked: ForgetRequest) -> dict[str, Any]:
    """Forget what ``asked`` names of ``user``'s memory; the receipt says what went and what is left.

    Raises:
        ApiError: 422 for criteria the memory refuses (none given, a malformed time).
    """
    mine = memory.for_user(user)
    await memory.aflush()  # a write still on its way must not come back after the forget
    before = {s.session_id: s.chunks for s in await mine.alist_sessions()}
    keys: tuple[str, ...] = ()
    removed: int
    try:
        if asked.all:
            receipt = await mine.aforget_all()
            removed, keys = int(receipt), receipt.key_ids
        else:
            removed = await mine.aforget(session_id=asked.session_id, before=asked.before, ids=asked.ids)
    except SessionRAGError as exc:
        raise _refused(exc) from exc
    after = {s.session_id: s.chunks for s in await mine.alist_sessions()}
    return {
        "object": "memory.forget_receipt",
        "user_id": user,
        "criteria": asked.model_dump(exclude_none=True, exclude_defaults=True) or {"all": True},
        "removed_chunks": removed,
        "sessions_removed": sorted(set(before) - set(after)),
        "sessions_changed": sorted(s for s in after if after[s] != before.get(s)),
        "remaining_chunks": sum(after.values()),
        "keys_destroyed": list(keys),
        "erased_from_files": False,
        "note": (
            "Removed from retrieval on every worker at once. The user's data key was destroyed: every copy of their "
            "encrypted data (free pages, backups, exports) is unreadable now; the ciphertext leaves the store's "
            "files at the next compaction (session-rag stats --compact)."
            if keys
            else "Removed from retrieval on every worker at once; the text leaves the store's files at the next "
            "compaction (session-rag stats --compact)."
        ),
    }
