"""The Sessions pages: the user's sessions with readable titles (filtered by text and time); one session's chunks."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from langchain_core.documents import Document

from langchain_session_rag._time import utcnow
from langchain_session_rag.errors import InvalidArgumentError, InvalidTimestampError
from langchain_session_rag.memory.admin import user_store
from langchain_session_rag.memory.documents import stored_document
from langchain_session_rag.memory.listing import SessionInfo, listing_where, sessions_of
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.memory.timewindow import EXAMPLE_PHRASES, resolve_time_phrase
from langchain_session_rag.server.ui.html import esc, field, notice, session_url, table, url, when
from langchain_session_rag.stores.base import Record

UNTITLED = "(untitled)"


def period(text: str) -> tuple[datetime, datetime] | None:
    """The span a "When" filter names ("last month", "2026-03", "in March"); ``None`` for an empty filter.

    Raises:
        InvalidArgumentError: Text that names no time (its message says what would).
    """
    if not text.strip():
        return None
    try:
        window = resolve_time_phrase(text, now=utcnow())
    except InvalidTimestampError as exc:
        raise InvalidArgumentError(str(exc)) from exc
    if window is None:
        msg = f"{text!r} names no time: try a date (2026-03-05), a month (2026-03) or {', '.join(EXAMPLE_PHRASES)}."
        raise InvalidArgumentError(msg)
    return window.start, window.end - timedelta(microseconds=1)


async def all_memories(mine: SessionVectorMemory, **where: Any) -> list[Document]:
    """Every memory of the user matching ``where`` (``session_id``, ``since``, ``until``), in one read of the store."""
    return [stored_document(r, with_marker=True) for r in await _records(mine, **where)]


async def _records(mine: SessionVectorMemory, **where: Any) -> list[Record]:
    store = user_store(mine)
    found = await asyncio.to_thread(store.records, listing_where(**where))
    return [r for r in found if r.metadata.get("user_id") == store.user_id]  # fail closed, whatever the store did


def title_of(info: SessionInfo) -> str:
    """A session's title for people: its imported title or first question, else its id."""
    return info.title or (UNTITLED if not info.session_id else info.session_id)


def _matches(info: SessionInfo, words: list[str], texts: dict[str, str]) -> bool:
    haystack = f"{info.title}\n{info.session_id}\n{texts.get(info.session_id, '')}".casefold()
    return all(word in haystack for word in words)


async def filtered_sessions(mine: SessionVectorMemory, text: str, when_text: str) -> list[SessionInfo]:
    """The user's sessions with a chunk in the span ``when_text`` names whose title or text has every word of ``text``.

    Raises:
        InvalidArgumentError: ``when_text`` names no time.
    """
    span = period(when_text)
    since, until = span or (None, None)
    records = await _records(mine, since=since, until=until)  # one read: the list and the text filter
    found = sessions_of(records, user_id=user_store(mine).user_id)
    words = text.casefold().split()
    if words:
        texts: dict[str, str] = {}
        for record in records:
            session = str(record.metadata.get("session_id") or "")
            texts[session] = texts.get(session, "") + "\n" + record.text
        found = [s for s in found if _matches(s, words, texts)]
    return found


def span_text(when_text: str) -> str:
    """The span a "When" filter names, as dates: `` between 2026-03-01 and 2026-03-31`` (``""``: none)."""
    span = period(when_text)
    if span is None:
        return ""
    start, end = (d.strftime("%Y-%m-%d") for d in span)
    return f" on {start}" if start == end else f" between {start} and {end}"


def _summary(count: int, text: str, when_text: str) -> str:
    sessions = f"{count:,} session{'s' if count != 1 else ''}"
    if not (text.strip() or when_text.strip()):
        return f"{sessions}."
    words = f" with “{text.strip()}”" if text.strip() else ""
    verb = "matches" if count == 1 else "match"
    return f"{sessions} {verb} the filter{words}{span_text(when_text)}."


async def sessions_body(mine: SessionVectorMemory, text: str, when_text: str) -> str:
    """The sessions list with its filter form; a filter that names no time is said, not an error page."""
    problem, typed = "", when_text
    try:
        found = await filtered_sessions(mine, text, when_text)
    except InvalidArgumentError as exc:  # said above the list; the list is filtered by the text alone
        problem, when_text = notice(str(exc), kind="error"), ""
        found = await filtered_sessions(mine, text, "")
    filtered = bool(text.strip() or when_text.strip())
    form = (
        f'<form method="get" action="{url("sessions")}" role="search" aria-label="Filter sessions" class="filters">'
        + field("q", "Text", value=text, kind="search", hint="Words in the title or anywhere in the conversation.")
        + field("when", "When", value=typed, hint="A date (2026-03-05), a month (2026-03), or 'last month'.")
        + '<button type="submit">Filter</button></form>'
    )
    rows = [
        [
            f'<a href="{session_url(s.session_id)}">{esc(title_of(s))}</a>',
            when(s.started),
            when(s.last_active),
            str(s.chunks),
            str(s.messages),
            f"{s.tokens:,}",
        ]
        for s in found
    ]
    bulk = ""
    if found and filtered:
        label = "Forget this session…" if len(found) == 1 else f"Forget these {len(found):,} sessions…"
        target = url("forget/confirm", q=text, when=when_text, filtered="1")
        bulk = f'<p><a class="button danger" href="{target}">{label}</a></p>'
    summary = f'<p role="status">{esc(_summary(len(found), text, when_text))}</p>'
    empty = "No session matches the filter." if filtered else "No sessions stored yet: import a chat history."
    heads = ["Title", "Started", "Last active", "Chunks", "Messages", "Tokens"]
    return problem + form + summary + table("Sessions, most recently active first", heads, rows, empty=empty) + bulk


def _chunk_kind(meta: dict[str, Any]) -> str:
    return str(meta.get("chunking") or meta.get("source_type") or "chunk")


def _facts(doc: Document, segment_of: dict[str, int]) -> str:
    meta = doc.metadata
    topics = ", ".join(str(t) for t in meta.get("topics") or []) or "-"
    items = [
        ("Marker", esc(meta.get("marker", ""))),
        ("Kind", esc(_chunk_kind(meta))),
        ("Importance", esc(f"{float(meta['importance']):.2f}") if "importance" in meta else "-"),
        ("Topics", esc(topics)),
        ("Tokens", esc(meta.get("token_count", "-"))),
        ("Messages", esc(len(meta.get("message_ids") or []))),
    ]
    if meta.get("exchange_count") is not None:
        items.append(("Exchanges", esc(meta["exchange_count"])))
    if isinstance(meta.get("boundary_similarity"), float):
        items.append(("Similarity at its start", esc(f"{meta['boundary_similarity']:.2f}")))
    if doc.id in segment_of:
        items.append(("Topic segment", esc(segment_of[doc.id])))
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def _segments(exchanges: list[Document], segments: list[Document]) -> tuple[str, dict[str, int]]:
    """Where the topic segments fall: each segment's exchanges (by number), and each exchange's segment."""
    number = {m: i for i, d in enumerate(exchanges, 1) for m in d.metadata.get("message_ids") or []}
    segment_of: dict[str, int] = {}
    rows = []
    for index, seg in enumerate(segments, 1):
        covered = sorted({number[m] for m in seg.metadata.get("message_ids") or [] if m in number})
        for doc in exchanges:
            if number.get(next(iter(doc.metadata.get("message_ids") or []), ""), 0) in covered and doc.id:
                segment_of[doc.id] = index
        span = f"{covered[0]}–{covered[-1]}" if len(covered) > 1 else (str(covered[0]) if covered else "-")
        topics = ", ".join(str(t) for t in seg.metadata.get("topics") or []) or "-"
        rows.append([str(index), esc(span), esc(topics), esc(seg.metadata.get("token_count", "-"))])
    heads = ["Segment", "Exchanges", "Topics", "Tokens"]
    return table("Topic segments: the exchanges each one groups", heads, rows, empty="No topic segments."), segment_of


_KINDS = {"topic": "topic segment", "exchange": "exchange", "turn": "turn", "note": "note", "document": "document part"}


def _chunk(doc: Document, title: str, segment_of: dict[str, int]) -> str:
    named = f'aria-label="Forget {esc(title.split(":", maxsplit=1)[0].lower())}…"'
    forget = f'<a class="button danger" href="{url("forget/confirm", chunk=doc.id)}" {named}>Forget this chunk…</a>'
    return (
        f'<article class="chunk" aria-labelledby="c-{esc(doc.id)}"><h3 id="c-{esc(doc.id)}">{esc(title)}</h3>'
        f'{_facts(doc, segment_of)}<pre class="text">{esc(doc.page_content)}</pre>{forget}</article>'
    )


def _position(doc: Document) -> tuple[float, int, str]:
    meta = doc.metadata
    return (float(meta.get("timestamp_epoch") or 0.0), int(meta.get("chunk_index") or 0), doc.id or "")


async def session_body(mine: SessionVectorMemory, session_id: str) -> tuple[str, str] | None:
    """One session's page (title, body): its chunks in order, where its topic segments fall; ``None``: not found."""
    try:
        records = await _records(mine, session_id=session_id)
    except InvalidArgumentError:  # not a session id that could be stored (too long, a control character)
        return None
    infos = sessions_of(records, user_id=user_store(mine).user_id)
    if not infos:
        return None
    info = infos[0]
    docs = sorted((stored_document(r, with_marker=True) for r in records), key=_position)
    segments = [d for d in docs if _chunk_kind(d.metadata) == "topic"]
    exchanges = [d for d in docs if d not in segments]
    head = (
        f'<dl class="facts"><dt>Session id</dt><dd><code>{esc(session_id)}</code></dd><dt>Started</dt>'
        f"<dd>{when(info.started)}</dd><dt>Last active</dt><dd>{when(info.last_active)}</dd><dt>Size</dt>"
        f"<dd>{info.chunks} chunks, {info.messages} messages, {info.tokens:,} tokens</dd></dl>"
        f'<p><a class="button danger" href="{url("forget/confirm", session=session_id)}">Forget this session…</a></p>'
    )
    parts = [head]
    segment_of: dict[str, int] = {}
    if segments and exchanges:
        seg_table, segment_of = _segments(exchanges, segments)
        parts += ["<h2>Topic segments</h2>", seg_table]
    parts.append(f"<h2>Chunks as stored ({len(docs)})</h2>")
    parts += [_chunk(d, f"Chunk {i}: {_KINDS.get(_chunk_kind(d.metadata), _chunk_kind(d.metadata))}", segment_of)
              for i, d in enumerate(docs, 1)]  # fmt: skip
    return title_of(info), "".join(parts)
