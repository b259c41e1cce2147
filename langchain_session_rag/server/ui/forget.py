"""The Forget pages: what a forget would remove (a chunk, sessions, a time range, everything), then the receipt.

Every forget is confirmed on a page that says what goes, and answered with a receipt that says what went, what is
left and whether the text left the store's files too: with "Erase from the store's files now" ticked (the default)
the memory is compacted right after (``SessionVectorMemory.compact``), as ``session-rag stats --compact`` does.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime

from langchain_core.documents import Document
from starlette.datastructures import FormData, QueryParams

from langchain_session_rag._time import utcnow
from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.html import esc, hidden, notice, post_form, session_url, table, url, when
from langchain_session_rag.server.ui.html import field as input_field
from langchain_session_rag.server.ui.sessions import all_memories, filtered_sessions, period, span_text, title_of
from langchain_session_rag.stores.base import COMPACTION

LATER = (
    "no: the text leaves the store's files at its next compaction (session-rag stats --compact, run while nothing "
    "else writes to the store: a compaction copies the store, and a write landing meanwhile would be lost; on a "
    "Chroma server add --server HOST:PORT, then run chroma vacuum on its host)"
)
LISTED = 50
"""The most session titles a confirmation lists."""


@dataclass(frozen=True)
class Target:
    """What a forget names: sessions, one chunk, a time range, or everything."""

    sessions: tuple[str, ...] = ()
    chunk: str = ""
    since_text: str = ""
    until_text: str = ""
    everything: bool = False
    since: datetime | None = field(default=None, compare=False)
    until: datetime | None = field(default=None, compare=False)
    filtered: bool = False
    """The sessions a filter of the Sessions page shows (``match_text``, ``match_when``), found again to forget."""
    match_text: str = ""
    match_when: str = ""

    @classmethod
    def of(cls, values: QueryParams | FormData) -> Target:
        """The target a query or form names.

        Raises:
            InvalidArgumentError: Nothing named, more than one kind at once, or a time that names no time.
        """
        sessions = tuple(str(s) for s in values.getlist("session") if str(s))
        chunk, since_text, until_text = (str(values.get(k, "")).strip() for k in ("chunk", "since", "until"))
        everything, filtered = values.get("all") == "1", values.get("filtered") == "1"
        match_text, match_when = (str(values.get(k, "")).strip() for k in ("q", "when"))
        kinds = [bool(sessions), bool(chunk), bool(since_text or until_text), everything, filtered]
        if sum(kinds) != 1:
            msg = "Name one thing to forget: a session, a chunk, a time range (From / To), or everything."
            raise InvalidArgumentError(msg)
        since = span[0] if (span := period(since_text)) else None
        until = span[1] if (span := period(until_text)) else None
        if since is not None and until is not None and until < since:
            msg = f"The range ends ({until_text}) before it starts ({since_text})."
            raise InvalidArgumentError(msg)
        if filtered and not (match_text or match_when):
            msg = "Forgetting the sessions a filter shows needs a filter (Text or When)."
            raise InvalidArgumentError(msg)
        period(match_when)  # a filter that names no time is refused here, not after a confirmation
        return cls(sessions, chunk, since_text, until_text, everything, since, until, filtered, match_text, match_when)

    async def session_ids(self, mine: SessionVectorMemory) -> tuple[str, ...]:
        """The sessions named: those given, or those the filter shows now."""
        if not self.filtered:
            return self.sessions
        return tuple(s.session_id for s in await filtered_sessions(mine, self.match_text, self.match_when))

    def fields(self) -> str:
        """The target as hidden form fields."""
        return hidden(
            session=list(self.sessions),
            chunk=self.chunk or None,
            since=self.since_text or None,
            until=self.until_text or None,
            all="1" if self.everything else None,
            filtered="1" if self.filtered else None,
            q=self.match_text or None,
            when=self.match_when or None,
        )


def start_body() -> str:
    """The Forget page: a time range or everything; sessions and chunks are forgotten from their own pages."""
    range_form = (
        f'<form method="get" action="{url("forget/confirm")}" aria-labelledby="range-h" class="filters">'
        '<h2 id="range-h">A time range</h2>'
        + input_field(
            "since", "From", hint="A date (2026-03-05), a month (2026-03), or 'last month'; empty: the start."
        )
        + input_field("until", "To", hint="The same; its whole day, month or year is included; empty: now.")
        + '<button type="submit">Review what goes…</button></form>'
    )
    everything = (
        '<h2 id="all-h">Everything</h2><p>Every memory, the core memory, the daily logs and cached answers.</p>'
        f'<p><a class="button danger" href="{url("forget/confirm", all="1")}">Review forgetting everything…</a></p>'
    )
    one = (
        f'<h2>A session or a chunk</h2><p>Open it from <a href="{url("sessions")}">Sessions</a> (filter by text or '
        "time to forget several sessions at once).</p>"
    )
    return one + range_form + everything


def digest(session_ids: tuple[str, ...]) -> str:
    """A digest of the sessions a filter showed: the forget refuses when the filter shows others since."""
    return hashlib.sha256("\0".join(sorted(session_ids)).encode()).hexdigest()[:32]


def can_compact(mine: SessionVectorMemory, allowed: bool) -> bool:
    """Whether the page may compact now: ``allowed``, and an embedded store only this process writes.

    ``allowed``: every write of the store goes through these pages (``session-rag ui``). A store that chat turns
    also write (``session-rag serve``), or a Chroma server's collections, is not rebuilt under its other writers:
    their writes would be lost.
    """
    return allowed and COMPACTION in mine.backend.capabilities and mine.backend.single_process


@dataclass(frozen=True)
class _Doomed:
    """What a forget would remove: how many chunks, from which sessions; the chunk itself, the sessions named."""

    count: int
    titles: list[str]
    chunks: list[Document]
    session_ids: tuple[str, ...] = ()


async def _doomed(mine: SessionVectorMemory, target: Target) -> _Doomed:
    """What the target names now (one read of the sessions, and of the chunks a chunk or a range names)."""
    sessions = {s.session_id: s for s in await mine.alist_sessions()}
    if target.everything:
        return _Doomed(sum(s.chunks for s in sessions.values()), [title_of(s) for s in sessions.values()], [])
    if target.sessions or target.filtered:
        ids = await target.session_ids(mine)
        named = [sessions[s] for s in ids if s in sessions]
        return _Doomed(sum(s.chunks for s in named), [title_of(s) for s in named], [], ids)
    if target.chunk:
        docs = [d for d in await mine.aget_by_ids([target.chunk]) if d.metadata.get("user_id") == mine.user_id]
    else:
        docs = await all_memories(mine, since=target.since, until=target.until)
    touched = {str(d.metadata.get("session_id") or "") for d in docs}
    return _Doomed(len(docs), [title_of(sessions[s]) for s in sorted(touched) if s in sessions], docs)


async def confirm_body(mine: SessionVectorMemory, target: Target, csrf: str, *, compaction: bool) -> str:
    """What the forget would remove, and the button that does it."""
    doomed = await _doomed(mine, target)
    count, titles = doomed.count, doomed.titles
    if not count and not target.everything:
        return notice("Nothing stored matches: nothing to forget.") + f'<p><a href="{url("sessions")}">Sessions</a></p>'
    what = "everything of this user: every memory, the core memory, the daily logs and cached answers" if \
        target.everything else f"{count:,} chunk{'s' if count != 1 else ''}{_described(target)}"  # fmt: skip
    shown = "".join(f'<pre class="text">{esc(d.page_content)}</pre>' for d in doomed.chunks if target.chunk)
    listed = "".join(f"<li>{esc(t)}</li>" for t in titles[:LISTED]) + ("<li>…</li>" if len(titles) > LISTED else "")
    erase = (
        '<div class="field"><input type="checkbox" id="f-compact" name="compact" value="1" checked>'
        '<label for="f-compact">Erase from the store\'s files now (compaction: copies the store; slower)</label></div>'
        if can_compact(mine, compaction)
        else f'<p class="hint">Removed from search at once; {esc(LATER[4:])}.</p>'
    )
    sure = (
        '<div class="field"><input type="checkbox" id="f-sure" name="sure" value="1" required>'
        '<label for="f-sure">Yes, forget everything, core memory included</label></div>'
        if target.everything
        else ""
    )
    seen = hidden(seen=digest(doomed.session_ids)) if target.filtered else ""
    inner = target.fields() + seen + sure + erase + '<button type="submit" class="danger">Forget</button>'
    return (
        f"<p>This removes <strong>{esc(what)}</strong>"
        + (f" from these sessions:</p><ul>{listed}</ul>" if titles else ".</p>")
        + shown
        + "<p>It cannot be undone.</p>"
        + post_form("forget", csrf, inner, label="Confirm forgetting")
        + f'<p><a href="{_back(target)}">Cancel</a></p>'
    )


def _described(target: Target) -> str:
    """The span of a time range, as dates; the filter of a filtered list."""
    if target.since or target.until:
        start = target.since.strftime("%Y-%m-%d") if target.since else "the first memory"
        end = target.until.strftime("%Y-%m-%d") if target.until else "now"
        return f", stamped from {start} to {end} (included)"
    if target.filtered:
        words = f" with “{target.match_text}”" if target.match_text else ""
        return f" of the sessions{words}{span_text(target.match_when)}"
    return ""


def _back(target: Target) -> str:
    """Where Cancel goes: the session the target came from, else the Forget or Sessions page."""
    if len(target.sessions) == 1:
        return session_url(target.sessions[0])
    if target.filtered:
        return url("sessions", q=target.match_text, when=target.match_when)
    return url("forget" if (target.since or target.until or target.everything) else "sessions")


async def _forget(mine: SessionVectorMemory, target: Target) -> tuple[int, tuple[str, ...]]:
    if target.everything:
        receipt = await mine.aforget_all()
        return int(receipt), receipt.key_ids
    if target.sessions or target.filtered:
        return sum([await mine.aforget(session_id=s) for s in await target.session_ids(mine)]), ()
    if target.chunk:
        return await mine.aforget(ids=[target.chunk]), ()
    ids = [d.id for d in await all_memories(mine, since=target.since, until=target.until) if d.id]
    return (await mine.aforget(ids=ids) if ids else 0), ()


async def forget_receipt(
    mine: SessionVectorMemory,
    target: Target,
    *,
    compact: bool,
    compaction: bool,
    exclusive: AbstractAsyncContextManager[None] | None = None,
) -> str:
    """Forget what the target names; the receipt: what went, what is left, whether the files were erased.

    ``exclusive``: held while the store is compacted (no page reads it meanwhile).

    Raises:
        SessionRAGError: The memory refused (the receipt is not shown; the page says why).
    """
    await mine.aflush()  # a write on its way must not come back after the forget
    before = {s.session_id: s for s in await mine.alist_sessions()}
    removed, keys = await _forget(mine, target)
    erased = LATER
    if not removed and not target.everything:
        erased = "nothing to erase: nothing was removed"
    elif compact and can_compact(mine, compaction):
        try:
            async with exclusive or nullcontext():
                await mine.acompact()
            erased = "yes: the store was compacted; a scan of its files finds none of the forgotten text"
        except SessionRAGError as exc:
            erased = f"no: {exc}"
    after = {s.session_id: s for s in await mine.alist_sessions()}
    gone = [title_of(before[s]) for s in before if s not in after]
    changed = [title_of(after[s]) for s in after if s in before and after[s].chunks != before[s].chunks]
    rows = [
        ["Chunks removed", str(removed)],
        ["Sessions removed", esc("; ".join(gone) or "none")],
        ["Sessions with chunks removed", esc("; ".join(changed) or "none")],
        ["Chunks left", str(sum(s.chunks for s in after.values()))],
        ["Erased from the store's files", esc(erased)],
    ]
    if target.everything:
        rows.append(["Core memory and daily logs", "deleted"])
        rows.append(["Data keys destroyed", esc(", ".join(keys) or "none (the store is not encrypted)")])
    stamp = when(utcnow())
    return (
        notice(f"Forgotten: {removed:,} chunk{'s' if removed != 1 else ''}.")
        + table("Receipt", ["What", "Result"], rows, empty="")
        + f"<p>Done at {stamp}. Removed from search at once, in every worker.</p>"
        + f'<p><a href="{url("sessions")}">Back to the sessions</a></p>'
    )
