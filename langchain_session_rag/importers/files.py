"""Reading files to import: the format of each (by its name and content), parsed into one batch."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from langchain_session_rag.errors import FileAccessError, ImportFormatError, ImportLimitError, InvalidArgumentError
from langchain_session_rag.importers.chatgpt import is_chatgpt_export, parse_chatgpt
from langchain_session_rag.importers.langchain_dump import is_langchain_dump, parse_langchain
from langchain_session_rag.importers.markdown import parse_daily_log, parse_notes
from langchain_session_rag.importers.openai_chat import parse_openai_json, parse_openai_jsonl
from langchain_session_rag.importers.types import FORMAT_NAMES, ImportBatch, Skipped
from langchain_session_rag.memory.daily_log import is_daily_log
from langchain_session_rag.memory.reading import (
    MAX_LINE_BYTES,
    check_json_depth,
    file_limit,
    load_json,
    read_bounded,
    read_zip_member,
)

FORMATS = FORMAT_NAMES
_SUFFIXES = {".json", ".jsonl", ".ndjson", ".zip", ".md", ".markdown"}
PathLike = str | os.PathLike[str]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (links followed) is a regular file inside ``folder`` (links followed)."""
    try:
        return path.resolve(strict=True).is_relative_to(folder.resolve(strict=True))
    except (OSError, RuntimeError):  # a broken link, a loop
        return False


def _expand(paths: PathLike | Sequence[PathLike]) -> tuple[list[tuple[Path, bool]], list[Skipped]]:
    """The files to read, and the links found in folders that lead out of them (not read)."""
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    files: list[tuple[Path, bool]] = []
    outside: list[Skipped] = []
    for raw in given:
        if not str(raw).strip():
            msg = "An empty path: name a file or folder to import."
            raise FileAccessError(msg)
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")  # links to folders are not walked into
                if p.is_file()
                and p.suffix.lower() in _SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            kept = [p for p in found if _inside(p, path)]
            outside += [
                Skipped(str(p), p.name, f"not imported: a link to a file outside {path}")
                for p in found
                if p not in kept
            ]
            if not kept:
                msg = f"{path} holds no file to import ({', '.join(sorted(_SUFFIXES))})."
                raise FileAccessError(msg)
            files += [(p, False) for p in kept]
        elif path.exists():  # a file named itself (a link to one is followed); devices and FIFOs are refused on read
            files.append((path, True))
        else:
            msg = f"No file or folder at {str(raw)!r}."
            raise FileAccessError(msg)
    return files, outside


def _text(data: bytes, source: str) -> str:
    if not data.strip():
        msg = f"{source} is empty; nothing was imported."
        raise ImportFormatError(msg)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{source} is not UTF-8 text (byte {exc.start}); nothing was imported."
        raise ImportFormatError(msg) from exc


def _json(text: str, source: str) -> Any:
    def error(exc: json.JSONDecodeError) -> ImportFormatError:
        msg = f"{source}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); nothing was imported."
        return ImportFormatError(msg)

    return load_json(text, source, error)


def _zip_conversations(path: Path, source: str, max_bytes: int) -> str:
    found = read_zip_member(path, "conversations.json", max_bytes=max_bytes)
    if found is None:
        msg = f"{source} is a zip without conversations.json: not a ChatGPT data export."
        raise ImportFormatError(msg)
    name, data = found
    return _text(data, f"{source}:{name}")


def _jsonl_lines(item: _Input) -> list[str]:
    """The lines of a JSON Lines file, each checked for its length and nesting before it is parsed."""
    lines = item.text.splitlines()
    for number, line in enumerate(lines, start=1):
        where = f"{item.source}:{number}"
        if len(line) > MAX_LINE_BYTES and len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
            msg = f"{where}: the line is longer than the limit of {MAX_LINE_BYTES:,} bytes; nothing was imported."
            raise ImportLimitError(msg, path=item.source, limit=MAX_LINE_BYTES, seen=len(line.encode()))
        check_json_depth(line, where)
    return lines


@dataclass
class _Input:
    """A file's text, and its JSON parsed once on first use."""

    path: Path
    text: str
    source: str

    @cached_property
    def data(self) -> Any:
        return _json(self.text, self.source)


def _guess(item: _Input) -> str:
    suffix = item.path.suffix.lower()
    if suffix == ".zip":
        return "chatgpt-zip"
    if suffix in (".jsonl", ".ndjson"):
        return "openai-jsonl"
    if suffix in (".md", ".markdown"):
        return "daily-log" if is_daily_log(item.text) else "markdown"
    if suffix == ".json":
        if item.data == []:
            msg = f"{item.source} holds no conversation (an empty list)."
            raise ImportFormatError(msg)
        if is_chatgpt_export(item.data):
            return "chatgpt"
        return "langchain" if is_langchain_dump(item.data) else "openai-json"
    msg = (
        f"Cannot tell the format of {item.source} from its name; give it (--format, or file_format=): "
        f"one of {', '.join(FORMATS)}."
    )
    raise ImportFormatError(msg)


def _parse_chatgpt(item: _Input) -> ImportBatch:
    if not is_chatgpt_export(item.data):
        msg = f"{item.source}: not a ChatGPT conversations.json (a list of conversations with a 'mapping')."
        raise ImportFormatError(msg)
    return parse_chatgpt(item.data, item.source)


def _parse_langchain(item: _Input) -> ImportBatch:
    if not is_langchain_dump(item.data):
        msg = f"{item.source}: not a LangChain message dump (messages_to_dict or dumpd output)."
        raise ImportFormatError(msg)
    return parse_langchain(item.data, item.source)


_PARSERS: dict[str, Callable[[_Input], ImportBatch]] = {
    "chatgpt": _parse_chatgpt,
    "chatgpt-zip": _parse_chatgpt,
    "openai-jsonl": lambda item: parse_openai_jsonl(_jsonl_lines(item), item.source),
    "openai-json": lambda item: parse_openai_json(item.data, item.source),
    "langchain": _parse_langchain,
    "daily-log": lambda item: parse_daily_log(item.path, item.text, item.source),
    "markdown": lambda item: parse_notes(item.path, item.text, item.source),
}


def read_file(path: Path, file_format: str = "auto", *, max_bytes: int | None = None) -> ImportBatch:
    """One file's conversations (not validated against a memory yet); see :func:`read_conversations`."""
    source = str(path)
    if file_format != "auto" and file_format not in FORMATS:
        msg = f"Unknown import format {file_format!r}; use 'auto' or one of {', '.join(FORMATS)}."
        raise InvalidArgumentError(msg)
    limit = file_limit(max_bytes)
    zipped = file_format == "chatgpt-zip" or (file_format == "auto" and path.suffix.lower() == ".zip")
    text = _zip_conversations(path, source, limit) if zipped else _text(read_bounded(path, max_bytes=limit), source)
    item = _Input(path, text, source)
    chosen = _guess(item) if file_format == "auto" else file_format
    batch = _PARSERS[chosen](item)
    batch.formats[source] = chosen
    return batch


def read_conversations(
    paths: PathLike | Sequence[PathLike], *, file_format: str = "auto", max_bytes: int | None = None
) -> ImportBatch:
    """Read every file (folders: the importable files under them) into one batch; nothing is written.

    Args:
        paths: Files or folders: a ChatGPT ``conversations.json`` or export zip, OpenAI-format ``.jsonl`` /
            ``.json``, a LangChain message dump (``.json``), daily logs and markdown notes (``.md``).
        file_format: ``"auto"`` (by name and content) or one of :data:`FORMATS` for every file.
        max_bytes: The most bytes read from one file (a zip's ``conversations.json`` decompressed); default 256 MiB,
            or the ``SESSION_RAG_MAX_FILE_BYTES`` environment variable.

    A file found in a folder that is not in a format read here (a ChatGPT export's ``user.json``, a settings file)
    is skipped and reported, and so is a link in a folder to a file outside it; a file named itself that cannot be
    read refuses the import. Only regular files are read (a device, FIFO or socket is refused at once); a zip
    member that expands more than 100:1 is refused as a zip bomb, JSON nested more than 256 levels too, a JSON
    Lines line over 16 MiB too (limits in :mod:`langchain_session_rag.memory.reading`).

    Raises:
        FileAccessError: A path that does not exist or cannot be read, or is not a regular file.
        ImportFormatError: A file named that is not in the format (not JSON, not UTF-8, empty, an unknown shape).
        ImportLimitError: A file named that goes over a limit (its ``path``, ``limit`` and ``seen`` bytes).
    """
    limit = file_limit(max_bytes)
    files, outside = _expand(paths)
    batch = ImportBatch(skipped=list(outside))
    for path, named in files:
        batch.extend(_read_one(path, file_format, limit, named=named))
    return batch


def _read_one(path: Path, file_format: str, max_bytes: int, *, named: bool) -> ImportBatch:
    """A file named itself that cannot be read refuses the import; one found in a folder is skipped, reported."""
    try:
        return read_file(path, file_format, max_bytes=max_bytes)
    except ImportFormatError as exc:
        if named:
            raise
        return ImportBatch(skipped=[Skipped(str(path), path.name, f"not imported: {exc}")])
