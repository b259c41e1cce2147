"""A user's relation graph: entities with aliases and types, relations with validity and provenance.

Built from the findings stored on each chunk (:mod:`~langchain_session_rag.relations.model`), never stored apart
from them: forget a chunk and what only it supported is gone from the graph, and a relation a later chunk had
closed is open again when that chunk is forgotten.

**Validity.** A relation is valid from its earliest supporting chunk. It is closed (``valid_to``) by the first
later statement that replaces it: an explicit one ("switched from PostgreSQL to ClickHouse", "left Google and joined
Stripe", "stopped using Mongo"), or, for a predicate with one value at a time (``lives_in``, ``works_at``,
``runs_on``, ``named``, ``birthday``), a statement of another value. A relation restated after its closing is open
again. A closing that names an object never stated before creates that relation as history ("before: PostgreSQL
until 2026-03-09"), with an unknown start.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from langchain_session_rag.relations.model import Extraction, Statement
from langchain_session_rag.relations.vocabulary import AMBIGUOUS, FUNCTIONAL, PHRASES, SPEAKER, TECHNOLOGIES, key_of

_STOP_KEYS = frozenset("a an the i we you it is are was be to of in on at and or for with my our me us".split())
_EARLIEST = datetime(1, 1, 1)  # noqa: DTZ001 - compared with naive times only
_MAX_GRAM = 5
_MIN_COMMON = 10
"""An entity in this many chunks or fewer is never too common to count (a small memory names everything often)."""
_SIBLINGS = {"uses": "runs_on", "runs_on": "uses"}


@dataclass(frozen=True)
class Source:
    """A chunk a relation or entity comes from: its id, session, time and marker (``[S: 2026-03-09]``)."""

    chunk_id: str
    session_id: str | None
    timestamp: datetime | None
    marker: str
    position: int = 0
    """The chunk's place in its session (orders chunks stamped with the same time)."""


@dataclass(frozen=True)
class ChunkFacts:
    """One chunk's findings with where they come from."""

    source: Source
    facts: Extraction


@dataclass
class Relation:
    """``subject — predicate → object``, valid from ``valid_from`` (``None``: unknown) until ``valid_to``.

    A relation closed and stated again later holds in several ``intervals``; ``valid_from`` is the start of the
    first, ``valid_to`` the end of the last (``None``: it holds now).
    """

    subject: str
    predicate: str
    object: str
    intervals: list[tuple[datetime | None, datetime | None]] = field(default_factory=list)
    """When it held: ``(start, end)`` pairs, oldest first (``None`` start: unknown; ``None`` end: still holds)."""
    sources: list[Source] = field(default_factory=list)
    """The chunks stating it, oldest first (and the chunk that closed it, for a relation known only as closed)."""
    replaced_by: str | None = None
    """The object that replaced it, when a switch or another value closed it."""
    closed_by: Source | None = None

    @property
    def valid_from(self) -> datetime | None:
        """When it first held (``None``: unknown)."""
        return self.intervals[0][0] if self.intervals else None

    @property
    def valid_to(self) -> datetime | None:
        """When it last stopped holding (``None``: it holds now)."""
        return self.intervals[-1][1] if self.intervals else None

    @property
    def keys(self) -> tuple[str, str]:
        """The keys of its subject and object."""
        return key_of(self.subject), key_of(self.object)

    @property
    def current(self) -> bool:
        """Whether nothing closed it (or it was stated again since)."""
        return bool(self.intervals) and self.intervals[-1][1] is None

    @property
    def markers(self) -> list[str]:
        """The markers of the chunks stating it, oldest first, once each."""
        return list(dict.fromkeys(s.marker for s in self.sources))

    @property
    def chunk_ids(self) -> list[str]:
        """The ids of the chunks stating it (and the one that closed it)."""
        ids = [s.chunk_id for s in self.sources] + ([self.closed_by.chunk_id] if self.closed_by else [])
        return list(dict.fromkeys(ids))

    def valid_at(self, when: datetime | None) -> bool:
        """Whether it held at ``when`` (``None``: now)."""
        if when is None:
            return self.current
        at = _naive(when)
        return any(
            (start is None or _naive(start) <= at) and (end is None or at < _naive(end))
            for start, end in self.intervals
        )

    def render(self, before: Sequence[Relation] = ()) -> str:
        """One line: ``analytics service — uses → ClickHouse [S: 2026-03-09] (before: PostgreSQL until 2026-03-09)``."""
        marks = " ".join(self.markers[-2:])
        line = f"{self.subject} — {PHRASES.get(self.predicate, self.predicate)} → {self.object} {marks}".rstrip()
        notes = [f"{r.object} until {_day(r.valid_to)}" for r in before]
        if notes:
            line += f" (before: {'; '.join(notes)})"
        elif self.valid_to is not None:
            line += f" (until {_day(self.valid_to)}" + (f", then {self.replaced_by})" if self.replaced_by else ")")
        return line


@dataclass(frozen=True)
class EntityInfo:
    """An entity of the user's memories: its name, type, the other names it goes by, and the chunks naming it."""

    key: str
    name: str
    type: str
    aliases: tuple[str, ...]
    chunk_ids: tuple[str, ...]


def _naive(value: datetime) -> datetime:
    """``value`` in UTC without its zone (a naive value is taken as UTC already)."""
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def _day(value: datetime | None) -> str:
    return value.date().isoformat() if value else "unknown date"


def _when(source: Source) -> tuple[datetime, int, str]:
    return (_naive(source.timestamp) if source.timestamp else _EARLIEST, source.position, source.chunk_id)


class RelationGraph:
    """Entities and relations of one user, with queries by name, time, neighbourhood and path."""

    def __init__(self, chunks: Iterable[ChunkFacts]) -> None:
        """Aggregate the chunks' findings (oldest first by their time) into entities and relations."""
        ordered = sorted(chunks, key=lambda c: _when(c.source))
        self._names: dict[str, Counter[str]] = defaultdict(Counter)
        self._kinds: dict[str, Counter[str]] = defaultdict(Counter)
        self._chunks: dict[str, set[str]] = defaultdict(set)
        self.entities_of: dict[str, set[str]] = {}
        """Chunk id → keys of the entities it names."""
        self._relations: dict[tuple[str, str, str], Relation] = {}
        self._open: dict[tuple[str, str], dict[str, tuple[str, int]]] = defaultdict(dict)
        """(subject, predicate) → open objects → (chunk, list group) that last stated each (functional predicates)."""
        for chunk in ordered:
            keys = self.entities_of.setdefault(chunk.source.chunk_id, set())
            for mention in chunk.facts.entities:
                keys.add(self._note(mention.name, mention.type, chunk.source))
            for st in chunk.facts.relations:
                keys.update(self._statement(st, chunk.source))
        self.keys = {key: counts.most_common(1)[0][0] for key, counts in self._names.items()}
        self._aliases = {key: tuple(sorted(counts)) for key, counts in self._names.items()}
        self._types = {key: _best_type(counts) for key, counts in self._kinds.items()}
        self._lookup = {alias.lower(): key for key, aliases in self._aliases.items() for alias in aliases}
        self._lookup.update({key: key for key in self.keys})
        words: dict[str, set[str]] = defaultdict(set)
        for key, aliases in self._aliases.items():  # a capitalised word of a name ("Heron"), not "service"
            for word in {w for alias in aliases if " " in alias for w in alias.split()[1:] if w[:1].isupper()}:
                words[word.lower()].add(key)
        self._words = {
            w: next(iter(ks))
            for w, ks in words.items()
            if len(ks) == 1 and len(w) > 2 and w not in self._lookup  # noqa: PLR2004
        }
        """A word naming exactly one entity ("Heron" for "Project Heron"), for a question's single words."""

    def _note(self, name: str, kind: str, source: Source) -> str:
        key = key_of(name)
        self._names[key][name] += 1
        self._kinds[key][kind] += 1
        self._chunks[key].add(source.chunk_id)
        return key

    def _statement(self, st: Statement, source: Source) -> set[str]:
        """Apply one statement, in time order: it opens its relation and closes what it replaces."""
        subject = self._note(st.subject, "thing", source)
        keys = {subject}
        if st.object:
            obj = self._note(st.object, "thing", source)
            keys.add(obj)
            triple = (subject, st.predicate, obj)
            rel = self._relations.setdefault(triple, Relation(st.subject, st.predicate, st.object))
            rel.sources.append(source)
            if not rel.current:
                rel.intervals.append((source.timestamp, None))
            if st.predicate in FUNCTIONAL:  # one value at a time: the others open close here (not a list's own)
                held = self._open[(subject, st.predicate)]
                for other, (chunk, group) in list(held.items()):
                    if other != obj and not (st.group and (chunk, group) == (source.chunk_id, st.group)):
                        self._close((subject, st.predicate, other), source, st.object)
                        del held[other]
                held[obj] = (source.chunk_id, st.group)
        if st.closes:
            old = self._note(st.closes, "thing", source)
            self._close((subject, st.predicate, old), source, st.object or None)
            self._open[(subject, st.predicate)].pop(old, None)
        return keys

    def _close(self, triple: tuple[str, str, str], source: Source, by: str | None) -> None:
        rel = self._relations.get(triple)
        sibling = (triple[0], _SIBLINGS.get(triple[1], triple[1]), triple[2])
        if rel is None and sibling in self._relations:  # "moved from PostgreSQL" closes "runs on PostgreSQL" too
            rel = self._relations[sibling]
        if rel is None:  # closed before we ever heard of it: history known only from the closing
            subject, obj = (self._names[k].most_common(1)[0][0] if self._names.get(k) else k for k in triple[::2])
            rel = Relation(subject, triple[1], obj)
            rel.intervals.append((None, source.timestamp or _EARLIEST))
            self._relations[triple] = rel
            rel.sources.append(source)
        elif rel.current:
            start = rel.intervals[-1][0]
            rel.intervals[-1] = (start, source.timestamp or start or _EARLIEST)
        else:
            return
        rel.replaced_by, rel.closed_by = by, source

    # -- lookups -------------------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The key of the entity ``name`` names.

        Its key or an alias, else the entity whose name contains all its words (the most mentioned when several do).
        """
        low = key_of(name)
        if low in self._lookup:
            return self._lookup[low]
        words = set(re.findall(r"\w+", low))
        if not words:
            return None
        matches = [k for k in self.keys if words <= set(re.findall(r"\w+", k))]
        return max(matches, key=lambda k: (len(self._chunks[k]), k), default=None)

    def entity(self, name: str) -> EntityInfo | None:
        """The entity ``name`` names (see :meth:`resolve`), or ``None``."""
        key = self.resolve(name)
        if key is None:
            return None
        return EntityInfo(key, self.keys[key], self._types.get(key, "thing"), self._aliases[key],
                          tuple(sorted(self._chunks[key])))  # fmt: skip

    def entities(self) -> list[EntityInfo]:
        """Every entity, the most mentioned first."""
        found = [self.entity(key) for key in self.keys]
        return sorted((e for e in found if e), key=lambda e: (-len(e.chunk_ids), e.key))

    def vocabulary(self) -> dict[str, str]:
        """The user's own names (lower case → type): not a known technology, named in two chunks or in a relation.

        New chunks are searched for them whatever their case ("atlas" after "the repo is named atlas").
        """
        related = {k for (s, _, o), rel in self._relations.items() if rel.object for k in (s, o)}
        return {
            alias.lower(): self._types.get(key, "thing")
            for key, aliases in self._aliases.items()
            if key not in TECHNOLOGIES and key != SPEAKER and (len(self._chunks[key]) > 1 or key in related)
            for alias in aliases
            if len(alias) > 2 and alias.lower() not in _STOP_KEYS and len(alias.split()) <= _MAX_GRAM  # noqa: PLR2004
        }

    def chunks_naming(self, keys: Iterable[str]) -> set[str]:
        """Ids of the chunks naming any of the entities ``keys``."""
        return set().union(*(self._chunks.get(k, set()) for k in keys))

    def named_in(self, text: str, *, max_share: float = 1.0, total: int = 0) -> list[str]:
        """Keys of the entities ``text`` names (word sequences matched against names and aliases), longest first.

        Entities in more than ``max_share`` of ``total`` chunks (a speaker in every chunk) are left out.
        """
        written = re.findall(r"[\w.+#'-]+", text)
        words = [w.lower() for w in written]
        found: list[str] = []
        covered: set[int] = set()
        for size in range(_MAX_GRAM, 0, -1):
            for start in range(len(words) - size + 1):
                span = set(range(start, start + size))
                gram = " ".join(words[start : start + size]).strip(".'")
                key = (
                    self._lookup.get(gram)
                    or self._lookup.get(key_of(gram))
                    or (self._words.get(gram) if size == 1 else None)
                )
                if not key or span & covered or gram in _STOP_KEYS or key == SPEAKER or len(gram) < 2:  # noqa: PLR2004
                    continue
                if size == 1 and gram in AMBIGUOUS and not written[start][:1].isupper():
                    continue  # "should I go to the gym?" names no Go
                if total and len(self._chunks[key]) > max(_MIN_COMMON, max_share * total):
                    continue
                found.append(key)
                covered |= span
        return list(dict.fromkeys(found))

    # -- relations -----------------------------------------------------------------------------------
    def relations(
        self, name: str | None = None, *, as_of: datetime | None = None, history: bool = True
    ) -> list[Relation]:
        """Relations of the entity ``name`` (as subject or object; every relation for ``None``), oldest first.

        ``as_of``: only those valid then. Without it: current and (``history``) closed ones.
        """
        key = None if name is None else self.resolve(name)
        if name is not None and key is None:
            return []
        out = [
            rel for (s, _, o), rel in self._relations.items()
            if (key is None or key in {s, o}) and rel.object
            and (rel.valid_at(as_of) if as_of is not None else history or rel.current)
        ]  # fmt: skip
        return sorted(out, key=lambda r: (_naive(r.valid_from) if r.valid_from else _EARLIEST, r.predicate, r.object))

    def neighbours(self, name: str, *, hops: int = 1, as_of: datetime | None = None) -> list[Relation]:
        """Relations within ``hops`` (1 or 2) of the entity ``name``."""
        start = self.resolve(name)
        if start is None:
            return []
        seen, frontier, found = {start}, {start}, {}
        for _ in range(max(1, min(hops, 2))):
            nxt: set[str] = set()
            for (s, p, o), rel in self._relations.items():
                if rel.object and (s in frontier or o in frontier) and _keep(rel, as_of):
                    found[(s, p, o)] = rel
                    nxt |= {s, o} - seen
            seen |= nxt
            frontier = nxt
        return list(found.values())

    def paths(
        self, source: str, target: str, *, max_hops: int = 2, as_of: datetime | None = None
    ) -> list[list[Relation]]:
        """Chains of at most ``max_hops`` (1 or 2) relations linking two entities, shortest first."""
        a, b = self.resolve(source), self.resolve(target)
        if a is None or b is None or a == b:
            return []
        edges: dict[str, list[tuple[str, Relation]]] = defaultdict(list)
        for (s, _, o), rel in self._relations.items():
            if rel.object and _keep(rel, as_of):
                edges[s].append((o, rel))
                edges[o].append((s, rel))
        paths = [[rel] for other, rel in edges[a] if other == b]
        if max_hops >= 2:  # noqa: PLR2004
            paths += [[r1, r2] for mid, r1 in edges[a] if mid not in {a, b} for end, r2 in edges[mid] if end == b]
        return paths

    def lines(self, names: Sequence[str], *, limit: int = 8) -> list[str]:
        """Compact lines for a prompt: each current relation of the entities ``names`` with what it replaced."""
        out: dict[str, None] = {}
        for name in names:
            rels = self.relations(name)
            replaced: dict[tuple[str, str, str | None], list[Relation]] = defaultdict(list)
            for rel in rels:
                if not rel.current:
                    replaced[(key_of(rel.subject), rel.predicate, rel.replaced_by)].append(rel)
            shown: set[int] = set()
            for rel in (r for r in rels if r.current):
                before = replaced.get((key_of(rel.subject), rel.predicate, rel.object), [])
                shown.update(id(r) for r in before)
                out[rel.render(before)] = None
                if len(out) >= limit:
                    return list(out)
            for rel in (r for r in rels if not r.current and id(r) not in shown):
                out[rel.render()] = None
                if len(out) >= limit:
                    return list(out)
        return list(out)


def _keep(rel: Relation, as_of: datetime | None) -> bool:
    return as_of is None or rel.valid_at(as_of)


def _best_type(counts: Counter[str]) -> str:
    typed = [(n, t) for t, n in counts.items() if t != "thing"]
    return max(typed)[1] if typed else "thing"
