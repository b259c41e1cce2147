"""``session-rag core``: the pinned core memory from the command line (show, edit, append, undo, history).

The core memory is the short, human-readable part of the memory put in every prompt (``now`` and ``memory`` by
default: the user's profile and standing decisions). Before these commands, nothing outside Python could add to it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, out, printable, store_options


@cli.group()
def core() -> None:
    """The core memory pinned in every prompt: `show`, `edit`, `append`, `undo`, `history`."""


def _memory(store: dict[str, Any], *, create: bool = True) -> Any:
    return StoreOptions.of(store).memory(embeds=False, create=create)


def _text(text: str | None, file: Path | None) -> str:
    """The text given: as an argument, from a file, or from standard input (``-``)."""
    if (text is None) == (file is None):
        msg = "Give the text as an argument, or with --file FILE (--file - reads standard input), not both."
        raise click.UsageError(msg)
    if file is None:
        return text or ""
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"Cannot read {file}: {exc}."
        raise click.UsageError(msg) from exc


@core.command()
@click.argument("block", required=False)
@store_options
def show(block: str | None, **store: Any) -> None:
    """Show the core memory's blocks (or BLOCK), their size against their limit, and edits waiting for you."""
    memory = _memory(store, create=False)
    blocks = memory.core.blocks()
    names = [memory.core.check_block(block)] if block else list(blocks)
    for name in names:
        text = blocks[name]
        used, limit = memory.core.count(text), memory.core.limits[name]
        out.print(printable(f"## {name} ({used} of {limit} tokens)"))
        out.print(printable(text) if text.strip() else "(empty)")
    for proposal in memory.core.pending(block):
        out.print(printable(f"waiting for you: {proposal.id} {proposal.action} {proposal.block}: {proposal.text}"))


def _text_command(what: str) -> Callable[[Callable[..., None]], Any]:
    """A ``core`` command taking BLOCK and its TEXT (or ``--file FILE``, ``-`` for standard input)."""

    def decorate(func: Callable[..., None]) -> Any:
        func = store_options(func)
        func = click.option("--file", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True), default=None,
                            help=f"Read {what} from FILE (- for standard input).")(func)  # fmt: skip
        func = click.argument("text", required=False)(func)
        return core.command()(click.argument("block")(func))

    return decorate


def _saved(memory: Any, block: str, version: Any) -> None:
    out.print(f"{block}: version {version.version} ({memory.core.count(version.text)} tokens).")


@_text_command("the new text")
def edit(block: str, text: str | None, file: Path | None, **store: Any) -> None:
    """Replace BLOCK's text with TEXT (a new version: `core undo BLOCK` brings the old one back)."""
    memory = _memory(store)
    _saved(memory, block, memory.core.write(block, _text(text, file)))


@_text_command("the text to add")
def append(block: str, text: str | None, file: Path | None, **store: Any) -> None:
    """Add TEXT as a new line at the end of BLOCK."""
    memory = _memory(store)
    _saved(memory, block, memory.core.append(block, _text(text, file)))


@core.command()
@click.argument("block")
@store_options
def undo(block: str, **store: Any) -> None:
    """Bring back BLOCK's text before its last edit (itself a new version: undo twice to redo)."""
    memory = _memory(store, create=False)
    version = memory.core.undo(block)
    out.print(f"{block}: back to the text before the last edit, as version {version.version}.")


@core.command()
@click.argument("block")
@store_options
def history(block: str, **store: Any) -> None:
    """Every version of BLOCK, oldest first: when, by whom, what."""
    memory = _memory(store, create=False)
    versions = memory.core.history(block)
    if not versions:
        out.print(f"{block} has never been edited.")
    for version in versions:
        when = f"{version.at:%Y-%m-%d %H:%M}"
        head = f"v{version.version} {when} {version.action} by {version.author}"
        out.print(printable(f"{head}: {version.text}" if version.text else f"{head}: (empty)"))
