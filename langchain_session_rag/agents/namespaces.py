"""Store namespaces as users: the template naming a user's part, and the namespaces shared by every user."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_session_rag._checks import SYSTEM_PREFIX, user_id_problem
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.memory.listing import note_id

USER_SLOT = "{user_id}"
_SHARED = SYSTEM_PREFIX + "shared" + SYSTEM_PREFIX
"""Prefix of the pseudo-users holding shared namespaces; no namespace can name a user starting with it."""


TEXT_FIELDS = ("content", "text", "memory")
"""Value fields holding an item's text, in the order they are looked for."""


def with_text(value: dict[str, Any], text: str, fields: Sequence[str] = ()) -> dict[str, Any]:
    """``value`` with its text replaced.

    The field replaced is the one it was indexed by, else the first ``TEXT_FIELDS`` entry holding a string, else
    ``content``.
    """
    if len(fields) == 1 and "." not in fields[0]:
        return {**value, fields[0]: text}
    field = next((f for f in TEXT_FIELDS if isinstance(value.get(f), str)), "content")
    return {**value, field: text}


def encode_value(value: dict[str, Any]) -> str:
    """An item value as JSON text.

    Raises:
        InvalidArgumentError: The value is not JSON-serialisable (a datetime, a set, an object).
    """
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        msg = f"A store value must be JSON-serialisable (str, numbers, lists, dicts): {exc}."
        raise InvalidArgumentError(msg) from exc


@dataclass(frozen=True)
class Scope:
    """Where a namespace (or namespace prefix) points: one user's memory, and the parts below the user's base."""

    user_id: str
    shared: bool
    base: tuple[str, ...]
    """The namespace of the user's conversation memories (the template with the user filled in)."""
    rest: tuple[str, ...]
    """The parts after ``base``: an item's sub-namespace, or a search's prefix below ``base``."""

    def note_key(self, key: str) -> str:
        """The note key an item ``key`` of this namespace is saved under."""
        return "store:" + json.dumps([*self.rest, key])

    def item_id(self, key: str) -> str:
        """The id of the note holding item ``key`` of this namespace."""
        return note_id(self.user_id, self.note_key(key))

    def item_metadata(self, key: str, value: dict[str, Any], fields: Sequence[str] | None) -> dict[str, str]:
        """Metadata that turns a note back into the item (``fields``: the value fields its text came from)."""
        return {
            "store_key": key,
            "store_namespace": json.dumps(list(self.rest)),
            "store_value": encode_value(value),
            "store_index": json.dumps(list(fields or [])),
        }

    def contains(self, namespace: tuple[str, ...]) -> bool:
        """Whether ``namespace`` lies under this scope's base and prefix."""
        prefix = self.base + self.rest
        return namespace[: len(prefix)] == prefix


class NamespaceMap:
    """Maps namespaces to users by a template such as ``("memories", "{user_id}")``, plus shared prefixes."""

    def __init__(self, template: tuple[str, ...], shared: Sequence[tuple[str, ...]]) -> None:
        """Check the template (one ``"{user_id}"`` part) and the shared prefixes (non-empty, not user namespaces)."""
        if (
            not template
            or template.count(USER_SLOT) != 1
            or not all(isinstance(p, str) and p.strip() for p in template)
        ):
            msg = f"namespace must be a tuple of strings with exactly one '{USER_SLOT}' part, got {template!r}."
            raise InvalidArgumentError(msg)
        self.template = template
        self.slot = template.index(USER_SLOT)
        for prefix in shared:
            if not prefix or not all(isinstance(p, str) and p for p in prefix):
                msg = f"shared namespaces must be non-empty tuples of strings, got {prefix!r}."
                raise InvalidArgumentError(msg)
            if len(_SHARED + json.dumps(list(prefix))) > 256:  # noqa: PLR2004 - the longest user id
                msg = f"shared namespace {prefix!r} is too long (its parts must fit in about 240 characters)."
                raise InvalidArgumentError(msg)
            k = min(len(prefix), len(template))
            if all(i == self.slot or prefix[i] == template[i] for i in range(k)):
                msg = f"shared namespace {prefix!r} overlaps the users' namespaces {template!r}."
                raise InvalidArgumentError(msg)
        self.shared = list(shared)

    def check_writable(self, prefixes: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """Check that each prefix runs may write lies under a shared prefix; return them.

        Raises:
            InvalidArgumentError: A prefix that is empty or not under any of the shared namespaces.
        """
        for prefix in prefixes:
            if not prefix or not any(prefix[: len(s)] == s for s in self.shared):
                msg = (
                    f"writable_shared prefix {prefix!r} is not under a shared namespace {self.shared!r}: "
                    "list it in shared= too."
                )
                raise InvalidArgumentError(msg)
        return list(prefixes)

    def above_users(self, prefix: tuple[str, ...]) -> bool:
        """Whether a listing prefix stops before the user part (``()`` or ``("memories",)``): it covers every user."""
        prefix = tuple(prefix)
        return len(prefix) <= self.slot and prefix == self.template[: len(prefix)]

    def user_base(self, user_id: str) -> tuple[str, ...]:
        """The namespace of ``user_id``'s conversation memories (the template with the user filled in)."""
        return tuple(user_id if i == self.slot else part for i, part in enumerate(self.template))

    def scope(self, namespace: tuple[str, ...], *, prefix: bool = False) -> Scope:
        """The scope of a namespace (``prefix``: a search prefix, which may stop at the user's base).

        Raises:
            InvalidArgumentError: The namespace names no user and is not shared.
        """
        namespace = tuple(namespace)
        n = len(self.template)
        if len(namespace) >= n and all(i == self.slot or namespace[i] == part for i, part in enumerate(self.template)):
            user = namespace[self.slot]
            if (problem := user_id_problem(user)) is not None:
                msg = f"namespace {namespace!r} names no valid user at position {self.slot}: its user id is {problem}."
                raise InvalidArgumentError(msg)
            base = namespace[:n]
            return Scope(user, shared=False, base=base, rest=namespace[n:])
        for shared in self.shared:
            if namespace[: len(shared)] == shared and (prefix or len(namespace) >= len(shared)):
                return Scope(
                    _SHARED + json.dumps(list(shared)), shared=True, base=shared, rest=namespace[len(shared) :]
                )
        what = "prefix" if prefix else "namespace"
        msg = (
            f"The {what} {namespace!r} names no user: user namespaces look like {self.template!r}. "
            "Pass shared=[...] to SessionMemoryStore for namespaces every user may read."
        )
        raise InvalidArgumentError(msg)
