"""Conversation input: messages (LangChain messages or plain dicts) validated as a whole into turns.

Nothing of an invalid batch is stored; no message is ever dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_session_rag._checks import check_session_id, first_surrogate, one_line
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.errors import (
    DuplicateMessageIdError,
    EmptyConversationError,
    InvalidMessageError,
    MessageTooLargeError,
)
from langchain_session_rag.stores.limits import MAX_NAME_CHARS

Role = Literal["user", "assistant", "system", "tool"]
MessageLike = BaseMessage | Mapping[str, Any] | tuple[str, Any] | str

_ROLE_ALIASES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
_LABELS: dict[Role, str] = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}
_ROLE_LABELS = frozenset(_LABELS.values())
_ROLE_NAMES = frozenset({*_ROLE_ALIASES, "me", "you", "customer"})
"""Names that say a role, not who someone is: another role's message may not take them ("Human", "me")."""
_TEXT_BLOCK_TYPES = {"text", "input_text", "output_text"}
LABEL_ESCAPE = "\u200b"
"""Put before a line of a message that looks like a speaker's line (``User: ...``, ``Alice: ...``) in chunk text.

A zero-width space: invisible to a reader, dropped by the embedding model's tokenizer, and never the start of a
label (a name is folded to printable text), so no text in a message can open a turn of its own in the chunk.
"""
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character Python's ``str.splitlines()`` ends a line at."""
_LABEL_LIKE = re.compile(rf"(?<=[{LINE_BREAKS}])(?!{LABEL_ESCAPE})(?=[^:{LINE_BREAKS}]{{1,64}}: )")
"""The start of a line (after any line break) that reads as a speaker's line of chunk text."""


def escape_labels(text: str, *, first: bool = False) -> str:
    """``text`` with :data:`LABEL_ESCAPE` before every line that starts like ``Label: `` (after any line break).

    The first line follows the message's own label in the chunk, so it cannot start a line of its own; ``first``
    escapes it too (a piece of a message that the chunker puts on a line of its own).
    """
    return _LABEL_LIKE.sub(LABEL_ESCAPE, f"\n{text}")[1:] if first else _LABEL_LIKE.sub(LABEL_ESCAPE, text)


@dataclass(frozen=True)
class Turn:
    """One validated message."""

    role: Role
    text: str
    id: str
    name: str | None = None
    timestamp: datetime | None = None
    skipped_blocks: int = 0

    @property
    def label(self) -> str:
        """The speaker label used in chunk text: the message ``name`` on one line, else the role.

        A name holding a line break cannot start a line of its own in the chunk (and forge a speaker there), a name
        is read without the spaces around it, and a name that is another role's label or says a role (an assistant
        message named ``User``, ``Human``, ``me`` or ``customer``) gives way to the message's role.
        """
        name = self.name
        if name and not name.isprintable():  # a printable name is kept as it was (chunk ids stay)
            name = one_line(name)
        name = (name or "").strip()
        role_like = self.role != "user" and name.lower() in _ROLE_NAMES - {self.role}
        if not name or role_like or (name in _ROLE_LABELS and name != _LABELS[self.role]):
            return _LABELS[self.role]
        return name

    @property
    def shown(self) -> str:
        """The message's text as chunk text shows it: a line that looks like a speaker's is escaped."""
        return escape_labels(self.text)

    @property
    def line(self) -> str:
        """The message as a line of chunk text: ``Label: text`` (see :attr:`label` and :attr:`shown`)."""
        return f"{self.label}: {self.shown}"


def _message_role(message: BaseMessage) -> Role:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return "tool"
    role = _ROLE_ALIASES.get(str(message.type))
    if role is None:
        msg = (
            f"Unsupported message type {type(message).__name__} (type={message.type!r}); "
            "use Human/AI/System/ToolMessage."
        )
        raise InvalidMessageError(msg)
    return role


def _content_text(content: Any, where: str) -> tuple[str, int]:
    """Return the text of a message content and the number of non-text blocks skipped."""
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        texts: list[str] = []
        skipped = 0
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif (
                isinstance(block, Mapping)
                and block.get("type") in _TEXT_BLOCK_TYPES
                and isinstance(block.get("text"), str)
            ):
                texts.append(block["text"])
            elif (
                isinstance(block, Mapping) and block.get("type") == "refusal" and isinstance(block.get("refusal"), str)
            ):
                texts.append(f"[refused: {block['refusal']}]")  # OpenAI's refusal part: what the person saw
            else:
                skipped += 1
        return "\n".join(t for t in texts if t), skipped
    msg = (
        f"{where}: content must be a string or a list of content blocks, "
        f"got {type(content).__name__} ({content!r:.60})."
    )
    raise InvalidMessageError(msg)


def _call_parts(call: Any, where: str) -> tuple[str, Any]:
    """A tool call's name and arguments: LangChain's ``{"name", "args"}`` or OpenAI's ``{"function": {...}}``."""
    if not isinstance(call, Mapping):
        msg = f"{where}: a tool call must be an object with a name, got {type(call).__name__} ({call!r:.60})."
        raise InvalidMessageError(msg)
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    name = source.get("name")
    if not isinstance(name, str) or not name:
        msg = f"{where}: a tool call has no name ({dict(call)!r:.80})."
        raise InvalidMessageError(msg)
    args = source.get("args", source.get("arguments", {}))
    if isinstance(args, str):  # OpenAI sends arguments as JSON text
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return name, args  # kept as the model wrote it
    return name, args


def _json_args(args: Any, where: str) -> str:
    """A tool call's arguments as JSON text; arguments nested too deep (or unsortable keys) are refused."""
    try:
        return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    except (RecursionError, TypeError, ValueError) as exc:
        msg = f"{where}: a tool call's arguments cannot be written as JSON ({type(exc).__name__}: {exc!s:.80})."
        raise InvalidMessageError(msg) from exc


def _tool_calls_text(tool_calls: Any, where: str) -> str:
    if tool_calls is None:
        return ""
    if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, str | bytes):
        msg = f"{where}: tool_calls must be a list, got {type(tool_calls).__name__}."
        raise InvalidMessageError(msg)
    parts = []
    for call in tool_calls:
        name, args = _call_parts(call, where)
        shown = args if isinstance(args, str) else _json_args(args, where)
        parts.append(f"[called {name}({shown})]")
    return " ".join(parts)


def _shorthand(message: Any, where: str) -> Any:
    """LangChain's message shorthands, as chat models take them: ``"text"`` (the user's) and ``(role, text)``."""
    if isinstance(message, str):
        return {"role": "user", "content": message}
    if isinstance(message, tuple):
        if len(message) != 2 or not isinstance(message[0], str):  # noqa: PLR2004
            msg = f"{where}: a tuple message must be (role, content), got {message!r:.80}."
            raise InvalidMessageError(msg)
        return {"role": message[0], "content": message[1]}
    return message


def _generated_id(session_id: str, index: int, role: str, text: str) -> str:
    digest = hashlib.sha256(f"{session_id}\x1f{index}\x1f{role}\x1f{text}".encode()).hexdigest()
    return f"m-{digest[:16]}"


def _turn_text(content: Any, tool_calls: Any, role: Role, where: str) -> tuple[str, int]:
    """A message's stored text (its text, then its tool calls) and how many non-text blocks it skipped."""
    text, skipped = _content_text("" if content is None else content, where)
    calls = _tool_calls_text(tool_calls, where)
    text = f"{text.strip()}\n{calls}".strip() if calls else text.strip()
    if not text:
        if not skipped:
            msg = f"{where} (role {role!r}) has empty text content; remove it or give it text."
            raise InvalidMessageError(msg)
        text = f"[{skipped} non-text content block{'s' if skipped > 1 else ''}]"
    at = first_surrogate(text)
    if at is not None:  # a lone surrogate ("\ud800"): valid JSON, not storable text
        msg = f"{where} (role {role!r}) holds text that is not valid Unicode at character {at}."
        raise InvalidMessageError(msg)
    return text, skipped


def _one_turn(message: Any, index: int, session_id: str) -> Turn:
    where = f"message {index}"
    tool_calls: Any = None
    message = _shorthand(message, where)
    if isinstance(message, BaseMessage):
        role = _message_role(message)
        content: Any = message.content
        msg_id = message.id
        name = message.name
        raw_ts = message.additional_kwargs.get("timestamp") or message.response_metadata.get("timestamp")
        tool_calls = getattr(message, "tool_calls", None)
    elif isinstance(message, Mapping):
        raw_role = message.get("role")
        if not isinstance(raw_role, str) or raw_role.lower() not in _ROLE_ALIASES:
            msg = (
                f"{where}: unknown role {raw_role!r}; expected one of user, assistant, system, tool "
                "(or human, ai, developer, function)."
            )
            raise InvalidMessageError(msg)
        role = _ROLE_ALIASES[raw_role.lower()]
        legacy = message.get("function_call")  # OpenAI's older single call
        tool_calls = message.get("tool_calls") or ([legacy] if legacy else None)
        content = message.get("content")
        if content is None and tool_calls is None:  # OpenAI: content null only beside tool calls
            msg = f"{where} (role {raw_role!r}) has no 'content'."
            raise InvalidMessageError(msg)
        msg_id = message.get("id")
        name = message.get("name")
        raw_ts = message.get("timestamp", message.get("created_at", message.get("create_time")))
    else:
        msg = (
            f"{where}: expected a LangChain message or a dict with 'role' and 'content', got {type(message).__name__}."
        )
        raise InvalidMessageError(msg)
    text, skipped = _turn_text(content, tool_calls, role, where)
    if msg_id is not None and (
        not isinstance(msg_id, str) or not msg_id or len(msg_id) > MAX_NAME_CHARS or first_surrogate(msg_id) is not None
    ):
        msg = (
            f"{where}: id must be a non-empty string of valid Unicode text (no lone surrogate such as U+D800) of at "
            f"most {MAX_NAME_CHARS:,} characters, got {msg_id!r:.80}."
        )
        raise InvalidMessageError(msg)
    if name is not None and (
        not isinstance(name, str) or first_surrogate(name) is not None or len(name) > MAX_NAME_CHARS
    ):
        msg = f"{where}: name must be valid Unicode text of {MAX_NAME_CHARS:,} characters or less, got {name!r:.60}."
        raise InvalidMessageError(msg)
    timestamp = None if raw_ts is None else parse_timestamp(raw_ts, what=f"{where} timestamp")
    return Turn(
        role=role,
        text=text,
        id=msg_id or _generated_id(session_id, index, role, text),
        name=name or None,
        timestamp=timestamp,
        skipped_blocks=skipped,
    )


def normalize_messages(messages: Sequence[MessageLike], *, session_id: str, max_chars: int | None = None) -> list[Turn]:
    """Validate a conversation batch and return its turns.

    Messages may be LangChain messages, dicts ``{"role", "content", "id"?, "name"?, "timestamp"?}`` in the
    OpenAI chat format (roles ``developer`` and ``system`` are stored as system, ``function`` as tool; ``content``
    may be null beside ``tool_calls``, which are kept with their name and arguments), or LangChain's shorthands
    ``("user", "text")`` and a plain string (a user message). A dict's timestamp may be ``timestamp``,
    ``created_at`` or ``create_time`` (ISO 8601 or epoch seconds); a LangChain message's is in
    ``additional_kwargs["timestamp"]``. Ids that are not given are generated deterministically from the session,
    position and text.

    Raises:
        EmptyConversationError: No messages.
        InvalidMessageError: Unknown role, missing or non-text content, bad types.
        InvalidTimestampError: A timestamp that does not parse.
        DuplicateMessageIdError: Two messages with the same id.
        MessageTooLargeError: A message longer than ``max_chars`` characters.
        InvalidArgumentError: An unfit ``session_id`` (see ``check_session_id``).
    """
    check_session_id(session_id)
    single_pair = (
        isinstance(messages, tuple) and len(messages) == 2 and str(messages[0]).lower() in _ROLE_ALIASES  # noqa: PLR2004
    )
    if isinstance(messages, str | bytes | Mapping | BaseMessage) or single_pair:
        msg = f"messages must be a list of messages, got a single {type(messages).__name__}; wrap it in a list."
        raise InvalidMessageError(msg)
    if not messages:
        msg = f"Empty conversation for session {session_id!r}: nothing to store."
        raise EmptyConversationError(msg)
    turns = [_one_turn(m, i, session_id) for i, m in enumerate(messages)]
    for i, turn in enumerate(turns):
        if max_chars is not None and len(turn.text) > max_chars:
            msg = (
                f"messages[{i}] (id {turn.id!r}) has {len(turn.text):,} characters, over the limit of "
                f"{max_chars:,} (max_message_chars); split it, or raise the limit."
            )
            raise MessageTooLargeError(msg)
    seen: dict[str, int] = {}
    for i, turn in enumerate(turns):
        if turn.id in seen:
            msg = (
                f"Duplicate message id {turn.id!r} at messages {seen[turn.id]} and {i}; ids must be unique in a batch."
            )
            raise DuplicateMessageIdError(msg)
        seen[turn.id] = i
    return turns
