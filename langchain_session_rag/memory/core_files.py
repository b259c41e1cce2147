"""Core memory as markdown files: ``NOW.md`` and ``MEMORY.md``, written out and read back."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from langchain_session_rag.errors import CoreMemoryFullError, FileAccessError
from langchain_session_rag.memory.core_text import normal

if TYPE_CHECKING:
    from langchain_session_rag.memory.core import CoreMemory
    from langchain_session_rag.memory.core_text import CoreVersion


def export_markdown(core: CoreMemory, folder: str | Path) -> list[Path]:
    """Write each block to ``FOLDER/NAME.md`` (``NOW.md``, ``MEMORY.md``); return the files written."""
    target = Path(folder)
    try:
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for block, text in core.blocks().items():
            path = target / f"{block.upper()}.md"
            path.write_text(text + "\n" if text else "", encoding="utf-8")
            written.append(path)
    except OSError as exc:
        msg = f"Cannot write core memory files into {folder!s}: {exc}"
        raise FileAccessError(msg) from exc
    return written


def import_markdown(core: CoreMemory, folder: str | Path, author: str) -> list[CoreVersion]:
    """Load ``FOLDER/NAME.md`` files into their blocks (a new version each; absent files are skipped).

    Every file is read and checked against its limit before any block changes.

    Raises:
        CoreMemoryFullError: A file is over its block's limit (nothing is changed).
        FileAccessError: A file cannot be read.
    """
    if not Path(folder).is_dir():
        msg = f"No core memory folder at {folder!s} (expected NOW.md / MEMORY.md files in it)."
        raise FileAccessError(msg)
    texts: dict[str, str] = {}
    for block in core.limits:
        path = Path(folder) / f"{block.upper()}.md"
        if path.is_file():
            try:
                texts[block] = normal(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                msg = f"Cannot read core memory file {path}: {exc}"
                raise FileAccessError(msg) from exc
    for block, text in texts.items():
        if core.count(text) > core.limits[block]:
            msg = f"{block.upper()}.md holds {core.count(text)} tokens, over the limit of {core.limits[block]}."
            raise CoreMemoryFullError(msg)
    return [core.write(b, t, author=author, action="import") for b, t in texts.items() if t != core.read(b)]
