"""The Core memory page: each block's text to edit, its limit and use, its history with undo, proposals to review."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.datastructures import FormData

from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.schemas import RETRYABLE
from langchain_session_rag.server.ui.context import Pages, see
from langchain_session_rag.server.ui.html import PREFIX, esc, notice, post_form, table, when

HISTORY_SHOWN = 10


def _snippet(text: str, width: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _proposals(core: CoreMemory, block: str, csrf: str) -> str:
    waiting = core.pending(block)
    if not waiting:
        return ""
    rows = []
    for p in waiting:
        buttons = post_form(
            f"core/{block}/proposal",
            csrf,
            f'<input type="hidden" name="id" value="{esc(p.id)}">'
            '<button type="submit" name="decision" value="confirm">Pin it</button> '
            '<button type="submit" name="decision" value="reject">Reject it</button>',
            label=f"Review the proposal by {p.author}",
            css="inline",
        )
        rows.append([esc(p.author), when(p.at), esc(p.action), esc(_snippet(p.text)), buttons])
    heads = ["By", "When", "Edit", "Text", "Decision"]
    return table(f"Edits a model proposed for {block}, waiting for you", heads, rows, empty="")


def _restore(block: str, version: int, csrf: str) -> str:
    fields = f'<input type="hidden" name="version" value="{version}">'
    named = f"Restore version {version} of {esc(block)}"
    button = f'<button type="submit" class="link" aria-label="{named}">Restore</button>'
    return post_form(f"core/{block}/restore", csrf, fields + button, css="inline")


def _block(mine: SessionVectorMemory, block: str, text: str, csrf: str) -> str:
    core, limit = mine.core, mine.core.limits[block]
    used = mine.chunker.count(text) if text else 0
    versions = core.history(block)
    ident = f"core-{block}"
    editor = post_form(
        f"core/{block}",
        csrf,
        f'<label for="{ident}">Text of {esc(block)}</label>'
        f'<textarea id="{ident}" name="text" rows="8" aria-describedby="{ident}-use">{esc(text)}</textarea>'
        f'<p class="hint" id="{ident}-use">{used:,} of {limit:,} tokens used.</p>'
        '<button type="submit">Save</button>',
        label=f"Edit {block}",
    )
    undo = ""
    if versions:
        undo = post_form(f"core/{block}/undo", csrf, '<button type="submit">Undo the last change</button>',
                         label=f"Undo the last change of {block}", css="inline")  # fmt: skip
    rows = [
        [
            str(v.version),
            when(v.at),
            esc(v.action),
            esc(v.author + ("" if v.confirmed else " (unconfirmed)")),
            esc(_snippet(v.text) or "(empty)"),
            "" if v is versions[-1] else _restore(block, v.version, csrf),
        ]
        for v in reversed(versions[-HISTORY_SHOWN:])
    ]
    heads = ["Version", "When", "Edit", "By", "Text after it", "Restore"]
    history = table(f"History of {block}, newest first", heads, rows,
                    empty="Never edited.")  # fmt: skip
    return (
        f'<section aria-labelledby="{ident}-h"><h2 id="{ident}-h">{esc(block.upper())}.md</h2>'
        f"{editor}{undo}{_proposals(core, block, csrf)}{history}</section>"
    )


async def core_body(mine: SessionVectorMemory, csrf: str, draft: dict[str, str] | None = None) -> str:
    """Every block of the user's core memory: pinned into every prompt the graph builds.

    ``draft``: text typed into a block that was refused (shown in its editor instead of the stored text).
    """

    def build() -> str:
        core = mine.core
        blocks = core.blocks()
        intro = (
            "<p>The core memory is pinned into every prompt (each block under a heading, e.g. "
            "<code>## MEMORY.md</code>). Edits take effect on the next turn.</p>"
        )
        parts = [intro]
        typed = draft or {}
        parts += [_block(mine, block, typed.get(block, blocks.get(block, "")), csrf) for block in core.limits]
        return "".join(parts)

    return await asyncio.to_thread(build)


EDITS = ("write", "undo", "restore", "proposal")
DONE = {
    "saved": "Saved {block}: version {version}.",
    "undone": "Undid the last change of {block}: version {version}.",
    "restored": "Restored an earlier text of {block}: version {version}.",
    "pinned": "Pinned the proposal into {block}.",
    "rejected": "Rejected the proposal for {block}.",
}
"""What the Core memory page says after an edit (the edit redirects to the page with one of these keys)."""


async def _edit(mine: SessionVectorMemory, block: str, form: FormData, edit: str) -> tuple[str, int]:
    """Apply one edit of the Core memory page; what was done (a key of :data:`DONE`) and the version it made."""
    core = mine.core
    if edit == "write":
        return "saved", (await core.awrite(block, str(form.get("text", "")).replace("\r\n", "\n"))).version
    if edit == "undo":
        return "undone", (await core.aundo(block)).version
    if edit == "restore":
        wanted = str(form.get("version", ""))
        old = next((v for v in await core.ahistory(block) if str(v.version) == wanted), None)
        if old is None:
            msg = f"{block} has no version {wanted!r}."
            raise InvalidArgumentError(msg)
        return "restored", (await core.awrite(block, old.text)).version
    proposal = str(form.get("id", ""))
    if form.get("decision") == "confirm":
        return "pinned", (await core.aconfirm(proposal)).version
    await core.areject(proposal)
    return "rejected", 0


def said(mine: SessionVectorMemory, done: str, block: str, version: str) -> str:
    """The notice after an edit, from the page's own words only (never text taken from the address)."""
    if done not in DONE or block not in mine.core.limits or not version.isdigit():
        return ""
    return notice(DONE[done].format(block=block, version=int(version)))


def add_core_routes(app: FastAPI, pages: Pages) -> None:
    """Core memory: the page, a block's new text, undo, restoring a version, a proposal's review."""

    @app.get(f"{PREFIX}/core", include_in_schema=False)
    async def core(request: Request, done: str = "", block: str = "", version: str = "0") -> Response:
        seen, mine = pages.viewer(request)
        body = said(mine, done, block, version) + await core_body(mine, seen.csrf)
        return pages.shown("Core memory", body, seen, "core")

    @app.get(PREFIX + "/core/{rest:path}", include_in_schema=False)
    async def core_address(request: Request, rest: str) -> Response:
        del request, rest  # an edit's address, bookmarked or reopened: the page itself
        return see("core")

    @app.post(PREFIX + "/core/{block}", include_in_schema=False)
    @app.post(PREFIX + "/core/{block}/{edit}", include_in_schema=False)
    async def core_edit(request: Request, block: str, edit: str = "write") -> Response:
        seen, mine = pages.viewer(request)
        form = await pages.access.form(request, seen)
        if edit not in EDITS:
            return pages.shown("Core memory", notice("No such edit.", kind="error"), seen, "core", 404)
        try:
            async with pages.writing:
                done, version = await _edit(mine, block, form, edit)
        except RETRYABLE:
            raise  # the store does not answer: 503 with Retry-After, the API's rule
        except SessionRAGError as exc:  # said above the page; the text typed stays in its editor
            draft = {block: str(form.get("text", ""))} if edit == "write" else {}
            body = notice(str(exc), kind="error") + await core_body(mine, seen.csrf, draft)
            return pages.shown("Core memory", body, seen, "core", 400)
        return see(f"core?{urlencode({'done': done, 'block': block, 'version': version})}")
