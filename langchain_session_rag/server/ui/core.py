"""The Core memory page: each block's text to edit, its limit and use, its history with undo, proposals to review."""

from __future__ import annotations

import asyncio

from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.html import esc, post_form, table, when

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
        ]
        for v in reversed(versions[-HISTORY_SHOWN:])
    ]
    history = table(f"History of {block}, newest first", ["Version", "When", "Edit", "By", "Text after it"], rows,
                    empty="Never edited.")  # fmt: skip
    return (
        f'<section aria-labelledby="{ident}-h"><h2 id="{ident}-h">{esc(block.upper())}.md</h2>'
        f"{editor}{undo}{_proposals(core, block, csrf)}{history}</section>"
    )


async def core_body(mine: SessionVectorMemory, csrf: str) -> str:
    """Every block of the user's core memory: pinned into every prompt the graph builds."""

    def build() -> str:
        core = mine.core
        blocks = core.blocks()
        intro = (
            "<p>The core memory is pinned into every prompt (each block under a heading, e.g. "
            "<code>## MEMORY.md</code>). Edits take effect on the next turn.</p>"
        )
        parts = [intro]
        parts += [_block(mine, block, blocks.get(block, ""), csrf) for block in core.limits]
        return "".join(parts)

    return await asyncio.to_thread(build)
