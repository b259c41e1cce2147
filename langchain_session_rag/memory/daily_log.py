"""Daily logs: every stored message, raw, in one markdown file per user and day — the lossless tier.

``SessionVectorMemory.local(..., daily_log_dir="./logs")`` appends each new message of ``add_messages`` to
``logs/<user>/<YYYY-MM-DD>.md`` (``<user>`` percent-encoded, dots included). Messages stored again are not logged
again; an edited message is logged again, with its new text. A person can read and grep the files; each message
is a heading, a one-line JSON comment (session, id, role, name, timestamp) and its text in a code fence longer than
any backtick run inside it, so :func:`read_daily_logs` gives back every message exactly, and
:func:`rebuild_from_daily_logs` re-ingests them into a fresh store.

On an encrypted store each entry is one line of ciphertext under the user's data key (the day heading stays):
the files are read through :func:`read_daily_logs` with the store's keyring, and forgetting the user destroys
the key, so an earlier copy of a day file is unreadable too.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_session_rag import _fork
from langchain_session_rag._checks import one_line
from langchain_session_rag._time import utcnow
from langchain_session_rag.chunking.messages import Turn
from langchain_session_rag.errors import EncryptionKeyError, FileAccessError, InvalidMessageError
from langchain_session_rag.privacy.sealing import SEALED_PREFIX, UserCipher, is_sealed

if TYPE_CHECKING:
    from langchain_session_rag.memory.retriever import SessionVectorMemory
    from langchain_session_rag.privacy.keyring import Keyring

LOG_FIELD = "daily-log"

_META = re.compile(r"^<!-- session-rag (\{.*\}) -->$")
_FENCE = re.compile(r"^(`{3,})text$")
LOG_LOCK = _fork.lock()
"""Held while a day file is written (appends and rewrites after forgetting)."""


@dataclass(frozen=True)
class LoggedMessage:
    """One message as a daily log holds it."""

    user_id: str
    session_id: str
    id: str
    role: str
    text: str
    name: str | None
    timestamp: str

    def as_message(self) -> dict[str, Any]:
        """The message as ``add_messages`` takes it."""
        out: dict[str, Any] = {"role": self.role, "content": self.text, "id": self.id, "timestamp": self.timestamp}
        if self.name:
            out["name"] = self.name
        return out


def user_folder(user_id: str) -> str:
    """The folder name of a user: percent-encoded, dots too, so no id can be ``.``, ``..`` or a path."""
    return urllib.parse.quote(user_id, safe="").replace(".", "%2E")


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _entry(m: LoggedMessage, clock: str) -> str:
    """One message as the log writes it: a heading, its one-line JSON comment, its text in a long enough fence."""
    meta = {"session": m.session_id, "id": m.id, "role": m.role, "name": m.name, "at": m.timestamp}
    fence = _fence(m.text)
    return (
        f"### {clock} · {m.session_id} · {one_line(m.name or '') or m.role}\n"
        f"<!-- session-rag {json.dumps(meta, ensure_ascii=False)} -->\n{fence}text\n{m.text}\n{fence}\n\n"
    )


def _sealed(entry: str, cipher: UserCipher | None) -> str:
    """An entry as the file holds it: as it is, or sealed on one line."""
    return entry if cipher is None else cipher.seal(entry, LOG_FIELD) + "\n"


def render_entries(messages: Sequence[LoggedMessage], cipher: UserCipher | None = None) -> str:
    """Logged messages written back as a day file's entries (what a rewrite after forgetting keeps)."""
    return "".join(_sealed(_entry(m, m.timestamp[11:19] or "00:00:00"), cipher) for m in messages)


def opened_text(text: str, cipher: UserCipher | None, where: str) -> str:
    """A day file's text with its sealed entries decrypted (an entry whose key was destroyed is left out).

    Raises:
        EncryptionKeyError: The file holds sealed entries and no ``cipher`` was given.
    """
    if SEALED_PREFIX not in text:
        return text
    if cipher is None:
        msg = f"{where} is encrypted: read it with the store's keyring (read_daily_logs(folder, keyring=...))."
        raise EncryptionKeyError(msg)
    lines: list[str] = []
    for line in text.split("\n"):
        if not is_sealed(line):
            lines.append(line)
        elif (entry := cipher.open(line, LOG_FIELD)) is not None:
            lines.append(entry[:-1])  # the entry's last newline is the line break
    return "\n".join(lines)


def append_daily_log(
    folder: str | Path,
    user_id: str,
    session_id: str,
    turns: Sequence[Turn],
    *,
    default: datetime | None = None,
    cipher: UserCipher | None = None,
) -> int:
    """Append ``turns`` to the user's day files; return how many.

    A message is filed by its timestamp, else the previous message's, else ``default`` (now).

    Raises:
        FileAccessError: The folder or a file cannot be written.
    """
    when_missing = default or utcnow()
    by_day: dict[str, list[str]] = {}
    last: datetime | None = None
    for turn in turns:  # a message without a timestamp was said when the one before it was
        stamp = turn.timestamp or last or when_missing
        last = stamp
        logged = LoggedMessage(user_id, session_id, turn.id, turn.role, turn.text, turn.name, stamp.isoformat())
        entry = _sealed(_entry(logged, stamp.strftime("%H:%M:%S")), cipher)
        by_day.setdefault(stamp.date().isoformat(), []).append(entry)
    user_dir = Path(folder) / user_folder(user_id)
    try:
        with LOG_LOCK:
            user_dir.mkdir(parents=True, exist_ok=True)
            for day, entries in by_day.items():
                path = user_dir / f"{day}.md"
                with path.open("a", encoding="utf-8", newline="") as handle:  # "\r" in a message stays
                    if handle.tell() == 0:
                        handle.write(f"# {day}\n\n")
                    handle.write("".join(entries))
    except OSError as exc:
        msg = f"Cannot write the daily log in {user_dir}: {exc}"
        raise FileAccessError(msg) from exc
    return len(turns)


def read_day_file(path: Path, user_id: str, cipher: UserCipher | None) -> list[LoggedMessage]:
    """The messages of one of the user's day files, its sealed entries opened with ``cipher``."""
    with path.open(encoding="utf-8", newline="") as handle:  # no newline translation: "\r\n" comes back exactly
        text = opened_text(handle.read(), cipher, str(path))
    return parse_daily_log_text(text, where=str(path), user_id=user_id)


def parse_daily_log_text(text: str, *, where: str, user_id: str) -> list[LoggedMessage]:
    """The messages of a day file's text (``where`` names it in errors).

    Raises:
        InvalidMessageError: A broken fence or comment.
    """
    lines, found, n = text.split("\n"), [], 0
    while n < len(lines):
        meta = _META.match(lines[n])
        if meta is None:
            n += 1
            continue
        fence = _FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
        if fence is None:
            msg = f"{where}:{n + 2}: a logged message must follow its comment in a ```text fence."
            raise InvalidMessageError(msg)
        close = fence.group(1)
        end = next((m for m in range(n + 2, len(lines)) if lines[m] == close), None)
        if end is None:
            msg = f"{where}:{n + 2}: the fence of a logged message is never closed."
            raise InvalidMessageError(msg)
        text = "\n".join(lines[n + 2 : end])
        try:
            data = json.loads(meta.group(1))
            ids = str(data["session"]), str(data["id"]), str(data["role"])
            found.append(LoggedMessage(user_id, *ids, text, data.get("name"), str(data["at"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            msg = f"{where}:{n + 1}: a broken session-rag comment ({exc})."
            raise InvalidMessageError(msg) from exc
        n = end + 1
    return found


def is_daily_log(text: str) -> bool:
    """Whether a markdown text holds messages in the daily log format."""
    return any(_META.match(line) for line in text.split("\n"))


def read_daily_logs(folder: str | Path, *, keyring: Keyring | None = None) -> Iterator[LoggedMessage]:
    """Every logged message of every user, day by day, in the order they were logged.

    ``keyring`` opens the day files of an encrypted store (``memory.backend.keyring``).

    Raises:
        FileAccessError: The folder cannot be read.
        InvalidMessageError: A file that is not a daily log (a broken fence).
        EncryptionKeyError: An encrypted day file and no ``keyring``.
    """
    root = Path(folder)
    if not root.is_dir():
        msg = f"No daily log folder at {folder!s}."
        raise FileAccessError(msg)
    for user_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        user_id = urllib.parse.unquote(user_dir.name)
        cipher = UserCipher(keyring, user_id) if keyring is not None else None
        for path in sorted(user_dir.glob("*.md")):
            yield from read_day_file(path, user_id, cipher)


def rebuild_from_daily_logs(
    folder: str | Path, memory: SessionVectorMemory, *, chunking: str | None = None
) -> dict[str, int]:
    """Re-ingest every logged message into ``memory``'s store, user by user and session by session, in log order.

    A message logged again after an edit is re-ingested with its last text. Returns the number of messages
    re-ingested per user. Use a fresh store: messages already stored are skipped by their ids anyway.
    """
    sessions: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    keyring = memory.service.keyring
    for message in read_daily_logs(folder, keyring=keyring):  # an edited message: its last text, in its first place
        sessions.setdefault((message.user_id, message.session_id), {})[message.id] = message.as_message()
    counts: dict[str, int] = {}
    for (user_id, session_id), by_id in sessions.items():
        view, messages = memory.for_user(user_id), list(by_id.values())
        view.add_messages(messages, session_id=session_id, chunking=chunking or view.chunking)  # type: ignore[arg-type]
        counts[user_id] = counts.get(user_id, 0) + len(messages)
    return counts
