"""What an extractor finds in one chunk, how it is stored in the chunk's metadata, and the extractor protocol.

A chunk's findings are kept in its own metadata (key ``facts``, compact JSON), so they live and die with the chunk:
stored, exported, imported, encrypted and erased with it, in every store. ``{"e": [[name, type], ...],
"r": [[subject, predicate, object, closes], ...]}``: ``closes`` names the object a switch or a move replaced ("from
PostgreSQL to ClickHouse"), or is ``null``; a relation with an empty object only closes (``stopped using Mongo``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from langchain_session_rag.errors import InvalidMetadataError
from langchain_session_rag.relations.vocabulary import ENTITY_TYPES, PREDICATES

FACTS_KEY: Final = "facts"
"""The metadata key holding a chunk's extracted entities and relations."""
MAX_FACTS_CHARS: Final = 20_000
"""The longest ``facts`` value accepted from an import (a chunk's findings are a few hundred characters)."""


@dataclass(frozen=True)
class Mention:
    """An entity named in a chunk: the name as written (an alias) and its type."""

    name: str
    type: str = "thing"


@dataclass(frozen=True)
class Statement:
    """A relation as one chunk states it: ``subject — predicate → object``, and the object it replaced if any."""

    subject: str
    predicate: str
    object: str
    closes: str | None = None
    group: int = 0
    """Statements of one list ("runs on AWS and Cloudflare") share a group above 0: they never close each other."""


@dataclass(frozen=True)
class Extraction:
    """Everything an extractor found in one text."""

    entities: tuple[Mention, ...] = ()
    relations: tuple[Statement, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def encode(self) -> str:
        """The compact JSON stored under :data:`FACTS_KEY`."""
        payload = {
            "e": [[m.name, m.type] for m in self.entities],
            "r": [
                [s.subject, s.predicate, s.object, s.closes, *([s.group] if s.group else [])] for s in self.relations
            ],
        }
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


@runtime_checkable
class Extractor(Protocol):
    """Finds entities and relations in a chunk's text (``speaker``: who "I" is in a line without a speaker label)."""

    def extract(self, text: str, *, speaker: str = "user") -> Extraction:
        """The entities and relations stated in ``text``."""
        ...


_UNSAFE = re.compile(r"[\[\]<>{}\x00-\x1f\x7f\u2028\u2029]+")
MAX_NAME_CHARS: Final = 200


def safe_name(value: str) -> str:
    """A name as it may be shown in a prompt: one line, no brackets (no forged ``[S: ...]`` marker), bounded."""
    return " ".join(_UNSAFE.sub(" ", value).split())[:MAX_NAME_CHARS]


def _text(value: object, what: str, chunk: str) -> str:
    if not isinstance(value, str):
        msg = f"{FACTS_KEY} of chunk {chunk}: {what} must be text, got {value!r}."
        raise InvalidMetadataError(msg)
    return safe_name(value)


def decode_facts(value: object, chunk: str = "?") -> Extraction:
    """A stored ``facts`` value back as an :class:`Extraction`.

    Raises:
        InvalidMetadataError: Not the format above (an edited export, say); the message names the chunk.
    """
    if not isinstance(value, str) or len(value) > MAX_FACTS_CHARS:
        msg = f"{FACTS_KEY} of chunk {chunk} must be JSON text of at most {MAX_FACTS_CHARS} characters."
        raise InvalidMetadataError(msg)
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, RecursionError) as error:
        msg = f"{FACTS_KEY} of chunk {chunk} is not JSON: {error}."
        raise InvalidMetadataError(msg) from error
    if not isinstance(data, dict) or not isinstance(data.get("e", []), list) or not isinstance(data.get("r", []), list):
        msg = f"{FACTS_KEY} of chunk {chunk} must be an object with lists 'e' and 'r'."
        raise InvalidMetadataError(msg)
    entities = []
    for item in data.get("e", []):
        if not isinstance(item, list) or len(item) != 2:  # noqa: PLR2004
            msg = f"{FACTS_KEY} of chunk {chunk}: an entity must be [name, type], got {item!r}."
            raise InvalidMetadataError(msg)
        kind = _text(item[1], "an entity type", chunk)
        entities.append(Mention(_text(item[0], "an entity name", chunk), kind if kind in ENTITY_TYPES else "thing"))
    relations = []
    for item in data.get("r", []):
        if not isinstance(item, list) or len(item) not in {4, 5} or item[1] not in PREDICATES:
            msg = f"{FACTS_KEY} of chunk {chunk}: a relation is [subject, predicate, object, closes], got {item!r}."
            raise InvalidMetadataError(msg)
        group = item[4] if len(item) == 5 else 0  # noqa: PLR2004
        if isinstance(group, bool) or not isinstance(group, int) or not 0 <= group < 2**31:
            msg = f"{FACTS_KEY} of chunk {chunk}: a relation's list group must be a small integer, got {group!r}."
            raise InvalidMetadataError(msg)
        closes = None if item[3] is None else _text(item[3], "closes", chunk)
        subject, obj = _text(item[0], "a subject", chunk), _text(item[2], "an object", chunk)
        relations.append(Statement(subject, item[1], obj, closes, group))
    return Extraction(tuple(entities), tuple(relations))
