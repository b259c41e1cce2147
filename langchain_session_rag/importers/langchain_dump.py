"""LangChain message dumps: ``messages_to_dict`` output and ``dumpd`` output, read as data (nothing is revived).

A file holds one conversation (a list of messages) or several (an object mapping session ids to lists, as a chat
history store keeps them). System messages are not stored (instructions to the model). Nothing in the file is
instantiated: a dump from an untrusted source cannot run code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, Skipped, derived_ids

_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}
_CLASSES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "tool",
}


def _fields(item: Any) -> tuple[str | None, Mapping[str, Any]]:
    """A dumped message's role and fields, in either dump shape; ``(None, {})`` when it is neither."""
    if not isinstance(item, Mapping):
        return None, {}
    if item.get("lc") == 1 and isinstance(item.get("id"), list) and isinstance(item.get("kwargs"), Mapping):
        return _CLASSES.get(str(item["id"][-1]) if item["id"] else ""), item["kwargs"]
    data = item.get("data")
    if isinstance(item.get("type"), str) and isinstance(data, Mapping):
        kind = item["type"].removesuffix("Chunk").lower().removesuffix("message") or item["type"]
        role = data.get("role") if kind == "chat" else _TYPES.get(kind)
        return (str(role) if role else None), data
    return None, {}


def is_langchain_dump(data: Any) -> bool:
    """Whether parsed JSON is a list of dumped messages, or an object of such lists."""
    lists = list(data.values()) if isinstance(data, Mapping) else [data]
    return bool(lists) and all(isinstance(v, list) and v and all(_fields(m)[0] is not None for m in v) for v in lists)


def _message(role: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": fields.get("content")}
    for key in ("id", "name", "tool_calls"):
        if fields.get(key):
            out[key] = fields[key]
    extra = fields.get("additional_kwargs")
    if isinstance(extra, Mapping) and extra.get("timestamp") is not None:
        out["timestamp"] = extra["timestamp"]
    return out


def parse_langchain(data: Any, source: str) -> ImportBatch:
    """The conversations of a dump (see :func:`is_langchain_dump`)."""
    sessions = dict(data) if isinstance(data, Mapping) else {None: data}
    batch = ImportBatch()
    for session, items in sessions.items():
        messages = []
        for n, item in enumerate(items):
            role, fields = _fields(item)
            if role is None:
                batch.skipped.append(Skipped(source, f"message {n}", "not a LangChain message dump"))
            elif role != "system":  # instructions to the model, not conversation
                messages.append(_message(role, fields))
        if messages:
            named = str(session) if session else None
            opening, whole = derived_ids("langchain", messages)
            batch.conversations.append(
                ImportedConversation(
                    session_id=named or opening,
                    messages=messages,
                    source=source,
                    fallback_session_id=None if named else whole,
                )
            )
    return batch
