"""OpenAI-format chats: JSON Lines of ``{"messages": [...]}`` (one conversation a line), or JSON.

A line (or a JSON file) holds one conversation in the Chat Completions shape: messages with a ``role``
(``developer``, ``system``, ``user``, ``assistant``, ``tool``, ``function``), ``content`` (text, a list of parts,
or null beside ``tool_calls``), and ``name`` / ``tool_calls`` / ``tool_call_id``. A JSON file may also hold a list
of such conversations, or a bare list of messages; a JSON Lines file whose every line is a message is one
conversation. System and developer prompts are not
stored (instructions to the model, often the same long text in every conversation). A conversation's session id is
its ``id`` (``conversation_id``, ``session_id``, ``metadata.session_id``) when it has one, else derived from its
opening messages (so a conversation that went on keeps its session; see ``ImportedConversation``, which also says
what becomes of an id unfit to store).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_session_rag.errors import ImportFormatError
from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, Skipped, derived_ids

_INSTRUCTIONS = {"system", "developer"}
_KEYS = ("role", "content", "name", "tool_calls", "function_call", "id", "timestamp", "created_at", "create_time")


def is_export_jsonl(item: Any) -> bool:
    """Whether a JSON Lines item is a chunk of ``SessionVectorMemory.export_jsonl`` (``session-rag export``)."""
    return isinstance(item, Mapping) and {"id", "text", "metadata"} <= item.keys() and "role" not in item


def _explicit_id(item: Mapping[str, Any]) -> str | None:
    meta = item.get("metadata")
    for value in (
        item.get("session_id"),
        item.get("conversation_id"),
        item.get("id"),
        meta.get("session_id") if isinstance(meta, Mapping) else None,
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def _messages(raw: Any) -> list[dict[str, Any]]:
    """The messages to store: system and developer prompts are instructions to the model, not conversation."""
    if not isinstance(raw, list):
        msg = f"'messages' must be a list, got {type(raw).__name__}"
        raise ImportFormatError(msg)
    return [
        {k: m[k] for k in _KEYS if k in m} if isinstance(m, Mapping) else m
        for m in raw
        if not (isinstance(m, Mapping) and str(m.get("role")).lower() in _INSTRUCTIONS)
    ]


def _conversation(item: Mapping[str, Any], source: str, where: str = "") -> ImportedConversation:
    try:
        messages = _messages(item.get("messages"))
    except ImportFormatError as exc:
        msg = f"{source}{f' {where}' if where else ''}: {exc}"
        raise ImportFormatError(msg) from exc
    title = str(item.get("title") or "")
    explicit = _explicit_id(item)
    opening, whole = derived_ids("openai", messages)
    return ImportedConversation(
        session_id=explicit or opening,
        messages=messages,
        title=title,
        source=source,
        where=where,
        fallback_session_id=None if explicit else whole,
    )


def _add(batch: ImportBatch, item: Mapping[str, Any], label: str, source: str) -> None:
    try:
        batch.conversations.append(_conversation(item, source, label))
    except ImportFormatError as exc:
        batch.skipped.append(Skipped(source, label, str(exc)))


def parse_openai_jsonl(lines: list[str], source: str) -> ImportBatch:
    """Conversations of a JSON Lines file; a line that is not JSON rejects the file (nothing is stored)."""
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            msg = f"{source}:{number}: not valid JSON ({exc.msg}: column {exc.colno}); nothing was imported."
            raise ImportFormatError(msg) from exc
    if items and all(is_export_jsonl(item) for _, item in items):
        msg = f"{source} is a session-rag export (chunks with embeddings): import it with `session-rag import`."
        raise ImportFormatError(msg)
    batch = ImportBatch()
    if items and all(isinstance(item, Mapping) and "role" in item for _, item in items):
        batch.conversations.append(_conversation({"messages": [item for _, item in items]}, source))
        return batch
    for number, item in items:
        if not isinstance(item, Mapping) or "messages" not in item:
            batch.skipped.append(Skipped(source, f"line {number}", "not a conversation (no 'messages' list)"))
            continue
        _add(batch, item, f"line {number}", source)
    return batch


def parse_openai_json(data: Any, source: str) -> ImportBatch:
    """Conversations of a JSON file: one conversation, a list of them, or a bare list of messages."""
    batch = ImportBatch()
    if isinstance(data, Mapping) and "messages" in data:
        batch.conversations.append(_conversation(data, source))
    elif isinstance(data, list) and data and all(isinstance(m, Mapping) and "role" in m for m in data):
        batch.conversations.append(_conversation({"messages": data}, source))
    elif isinstance(data, list) and data and all(isinstance(c, Mapping) and "messages" in c for c in data):
        for n, item in enumerate(data):
            _add(batch, item, f"conversation {n}", source)
    else:
        msg = f"{source}: not an OpenAI-format chat (a 'messages' list, or a list of messages with roles)."
        raise ImportFormatError(msg)
    return batch
