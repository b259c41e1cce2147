"""Naming a session on the command line: its id, the start of its id, or words of its title."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from langchain_session_rag.cli.options import printable

MIN_PREFIX = 4
"""The shortest start of an id that names a session (shorter ones name too many)."""


def resolve_sessions(memory: Any, names: Sequence[str], *, refused: str = "nothing was done") -> tuple[str, ...]:
    """The session ids ``names`` name: an id as it is, a unique start of an id, or words of one session's title.

    Raises:
        click.UsageError: A name matching no session of the user, or several (they are listed): nothing is done.
    """
    sessions = memory.list_sessions()
    ids = [s.session_id for s in sessions]
    chosen: list[str] = []
    for name in names:
        if name in ids:
            chosen.append(name)
            continue
        prefixed = [i for i in ids if len(name) >= MIN_PREFIX and i.startswith(name)]
        titled = [s.session_id for s in sessions if name.strip() and name.casefold() in (s.title or "").casefold()]
        found = prefixed or titled
        if len(found) == 1:
            chosen.append(found[0])
            continue
        if not found:
            msg = (
                f"{memory.user_id!r} has no session {name!r} (an id, the start of one, or words of a title; "
                f"`session-rag sessions` lists them); {refused}."
            )
            raise click.UsageError(printable(msg))
        shown = "; ".join(f"{s.session_id} ({s.title or 'untitled'})" for s in sessions if s.session_id in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""  # noqa: PLR2004
        msg = f"{name!r} names {len(found)} sessions: {shown}{more}. Give more of the id or title; {refused}."
        raise click.UsageError(printable(msg))
    return tuple(dict.fromkeys(chosen))
