"""ChatGPT's data export: ``conversations.json`` (or the export zip holding it), one session per conversation.

Each conversation is a tree of messages (``mapping``): an edited question or a regenerated answer starts a new
branch. The importer follows the branch ChatGPT shows, from ``current_node`` back to the root, so abandoned
branches are not imported. It keeps what the person saw: user and assistant text, images as ``[image]``, the
code the assistant ran (``[called python(...)]``) and its output; it skips hidden messages (the system prompt,
custom instructions), web browsing traffic (searches and fetched pages: the answer after them says what was found)
and the model's private reasoning (``thoughts``, ``reasoning_recap``).
Timestamps come from each message's ``create_time`` (a message without one takes the one before it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from langchain_session_rag.importers.types import ImportBatch, ImportedConversation, Skipped, derived_ids

_HIDDEN_TYPES = {"user_editable_context", "model_editable_context", "thoughts", "reasoning_recap", "system_error"}
_BROWSING_TYPES = {"tether_browsing_display", "tether_quote"}
_BROWSERS = ("browser", "web", "web.run", "web.search")
_CITATION = re.compile("\ue200[^\ue201]*\ue201|【[^】]*†[^】]*】")
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def is_chatgpt_export(data: Any) -> bool:
    """Whether parsed JSON looks like ``conversations.json`` (a list holding conversations with a ``mapping``)."""
    return isinstance(data, list) and any(isinstance(c, Mapping) and "mapping" in c for c in data)


def _iso(value: Any) -> str | None:
    """Epoch seconds as ISO 8601 (milliseconds are taken as such); ``None`` for anything that is not a time."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        return None
    seconds = value / 1000 if value > 1e11 else value  # noqa: PLR2004 - after the year 5138 in seconds: milliseconds
    try:
        return datetime.fromtimestamp(float(seconds), tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _part_text(part: Any) -> str:
    """A content part's text; an image or another attachment as a placeholder."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        if isinstance(part.get("text"), str):  # audio transcriptions and the like
            return str(part["text"])
        if "image" in str(part.get("content_type", "")):
            return "[image]"
    return "[attachment]"


def _content_text(content: Mapping[str, Any]) -> str:
    """The text of a message's content (browsing content never gets here: ``_message`` skips it)."""
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return "\n".join(p for p in (_part_text(part) for part in content.get("parts") or []) if p)
    for key in ("text", "result"):
        if isinstance(content.get(key), str):
            return str(content[key])
    parts = content.get("parts")
    return "\n".join(p for p in parts if isinstance(p, str)) if isinstance(parts, list) else ""


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _message(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message of a tree node as ``add_messages`` takes it, or ``None`` when it is not shown to the person."""
    raw = node.get("message")
    if not isinstance(raw, Mapping):
        return None
    author, content, meta = (_object(raw.get(key)) for key in ("author", "content", "metadata"))
    role = _ROLES.get(str(author.get("role")))
    recipient = raw.get("recipient")
    browsing = (  # searches and fetched pages: the answer after them says what was found
        content.get("content_type") in _BROWSING_TYPES
        or (role == "tool" and author.get("name") in _BROWSERS)
        or (role == "assistant" and recipient in _BROWSERS)
    )
    if (
        role in (None, "system")
        or browsing
        or content.get("content_type") in _HIDDEN_TYPES
        or meta.get("is_visually_hidden_from_conversation")
    ):
        return None
    text = _CITATION.sub("", _content_text(content)).strip()
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", "") and text:
        text = f"[called {recipient}({text})]"  # code the assistant sent to a tool, as tool calls are shown
    if not text:
        return None
    out: dict[str, Any] = {"role": role, "content": text}
    if isinstance(raw.get("id"), str) and raw["id"]:
        out["id"] = raw["id"]
    if role == "tool" and isinstance(author.get("name"), str) and author["name"]:
        out["name"] = author["name"]
    stamp = _iso(raw.get("create_time"))
    if stamp:
        out["timestamp"] = stamp
    return out


def _newest_leaf(mapping: Mapping[str, Any]) -> Any:
    """For exports without ``current_node``: the leaf reached by following the newest child from the root."""
    roots = [key for key, n in mapping.items() if isinstance(n, Mapping) and not n.get("parent")]
    key: Any = roots[0] if len(roots) == 1 else None
    for _ in range(len(mapping)):
        node = mapping.get(key)
        children = node.get("children") if isinstance(node, Mapping) else None
        if not isinstance(children, list) or not children or not isinstance(children[-1], str):
            break
        key = children[-1]
    return key


def _branch(mapping: Mapping[str, Any], current: Any) -> list[Mapping[str, Any]] | str:
    """The nodes from the root to ``current`` (the branch shown), or why there is none."""
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    key: Any = current if isinstance(current, str) else _newest_leaf(mapping)
    while key is not None:
        if not isinstance(key, str):
            return f"a parent that is not a node id ({key!r:.40})"
        if key in seen:
            return f"the message tree has a cycle at {key!r}"
        seen.add(key)
        node = mapping.get(key)
        if not isinstance(node, Mapping):
            return f"current_node or a parent ({key!r}) is not in the mapping"
        path.append(node)
        key = node.get("parent")
    return path[::-1] if path else "no current_node and no single root"


def parse_chatgpt(data: Any, source: str) -> ImportBatch:
    """The conversations of a parsed ``conversations.json``; broken conversations are skipped with the reason."""
    batch = ImportBatch()
    for n, conv in enumerate(data):
        if not isinstance(conv, Mapping):
            batch.skipped.append(Skipped(source, f"item {n}", f"not a conversation (a {type(conv).__name__})"))
            continue
        ident = conv.get("conversation_id") or conv.get("id")
        title = str(conv.get("title") or "")
        label = f"{title} ({ident or f'item {n}'})" if title else str(ident or f"item {n}")
        try:
            found = _conversation(conv, f"chatgpt-{ident}" if ident else None, title, source)
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:  # a malformed part
            found = f"malformed: {type(exc).__name__}: {exc}"
        if isinstance(found, str):
            batch.skipped.append(Skipped(source, label, found))
        else:
            batch.conversations.append(found)
    return batch


def _conversation(
    conv: Mapping[str, Any], session_id: str | None, title: str, source: str
) -> ImportedConversation | str:
    """One conversation's shown branch as a session, or why it cannot be imported."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, Mapping):
        return "no message tree ('mapping')"
    branch = _branch(mapping, conv.get("current_node"))
    if isinstance(branch, str):
        return branch
    messages = [m for m in (_message(node) for node in branch) if m is not None]
    last = _iso(conv.get("create_time"))
    for message in messages:  # a message without a time was sent when the one before it was
        if "timestamp" in message:
            last = message["timestamp"]
        elif last:
            message["timestamp"] = last
    if not messages:
        return "no message with text on the shown branch"
    shown = {m.get("id") for m in messages}
    every = (node.get("message") for node in mapping.values() if isinstance(node, Mapping))
    abandoned = frozenset(str(m["id"]) for m in every if isinstance(m, Mapping) and isinstance(m.get("id"), str))
    opening, whole = derived_ids("chatgpt", messages)  # an export without conversation ids: by content
    return ImportedConversation(
        session_id=session_id or opening,
        messages=messages,
        title=title,
        source=source,
        abandoned_ids=abandoned - shown,
        fallback_session_id=None if session_id else whole,
    )
