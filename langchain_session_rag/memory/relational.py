"""The relational layer of a memory: findings stored on each chunk at ingest, a user's graph built from them.

Every session chunk and note gets its entities and relations in its own metadata (``facts``) when it is written
(the memory's ``relation_extractor``; chunks stored before this layer existed are read with the pattern extractor).
The user's :class:`~langchain_session_rag.relations.graph.RelationGraph` is built from the user's replica, kept per
replica and updated with the chunks whose revision changed, so it follows edits and forgets of every process;
:class:`~langchain_session_rag.SessionVectorMemory`'s relational methods read it.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_session_rag import _fork
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.errors import UnsupportedOperationError
from langchain_session_rag.memory.replica import UserReplica
from langchain_session_rag.memory.worth import MODEL_LABEL, USER_LABEL, said_by, user_speaks
from langchain_session_rag.prompt.quoting import marker
from langchain_session_rag.relations.entities import mentions_in
from langchain_session_rag.relations.graph import ChunkFacts, RelationGraph, Source
from langchain_session_rag.relations.model import FACTS_KEY, Extraction, Extractor, Mention, Statement, decode_facts
from langchain_session_rag.relations.patterns import PatternExtractor, unique_mentions
from langchain_session_rag.relations.phrases import ASSISTANTS
from langchain_session_rag.relations.vocabulary import SPEAKER
from langchain_session_rag.stores.base import Record, fingerprint

if TYPE_CHECKING:
    from langchain_session_rag.memory.retriever import SessionVectorMemory

FACT_SOURCES = frozenset({"session", "note"})
"""Chunk kinds read for relations (documents are reference text, not what the user said)."""
SPEAKER_SHARE = 0.2
"""An entity named in more than this share of a user's chunks (a speaker, the user's own name) is not a question's
entity: it would pull every chunk in."""
_READER = PatternExtractor()
_LOG = logging.getLogger(__name__)
_MAX_KNOWN = 2_000
"""The most of the user's own names looked for in each new chunk (the longest first)."""


def attach_facts(records: Iterable[Record], extractor: Extractor | None, replica: UserReplica | None = None) -> None:
    """Store each new session chunk's and note's findings under ``facts`` (an imported chunk's own are checked).

    With the user's ``replica``, the names the user already uses (see ``RelationGraph.vocabulary``, from the graph
    last built) are found in the new chunks too, in any case.

    Raises:
        InvalidMetadataError: An imported ``facts`` value that is not the stored format.
    """
    known = _known_names(replica)
    for record in records:
        meta = record.metadata
        if meta.get("source_type", "session") not in FACT_SOURCES:
            continue
        if FACTS_KEY in meta:
            decode_facts(meta[FACTS_KEY], record.id)
        elif extractor is not None:
            try:
                found = findings(extractor, meta, record.text)
            except Exception as error:  # noqa: BLE001 - an extractor's failure must not lose the write
                _LOG.warning("relation extractor %s failed on chunk %s: %s", type(extractor).__name__, record.id, error)
                continue
            if known is not None:
                found = _with_known(found, record.text, *known)
            meta[FACTS_KEY] = found.encode()


def findings(extractor: Extractor, meta: dict[str, Any], text: str) -> Extraction:
    """The entities and relations of a session chunk or note, each turn read as its speaker's.

    Who said what comes from the chunk's stored structure (:func:`~langchain_session_rag.memory.worth.said_by`, as
    its worth does), never from lines of its text: the extractor reads each person's turn on its own, with that
    person as "I". Where the unnamed user speaks, every other speaker is the model; among named people, a speaker
    named like an assistant is the model. The model's turns (a reply, a note a model wrote) give their entities
    only: what the model says is no relation of the user's, so it can never close one.
    """
    turns = said_by(meta, text)
    if turns is None:
        return extractor.extract(text)
    user = user_speaks(turns)
    entities: list[Mention] = []
    relations: list[Statement] = []
    for label, said in turns:
        mine = label in {USER_LABEL, ""}
        if (user and not mine) or label == MODEL_LABEL or label.lower() in ASSISTANTS:
            entities.extend(mentions_in(said))
            continue
        speaker = SPEAKER if mine else label
        found = extractor.extract(said, speaker=speaker)
        if not mine:
            entities.append(Mention(label, "person"))
        entities.extend(found.entities)
        relations.extend(found.relations)
    return Extraction(unique_mentions(entities), tuple(dict.fromkeys(relations)))


def _known_names(replica: UserReplica | None) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """The user's own names, as a pattern, from the graph of the replica as it is now (else ``None``).

    Never from a graph older than the replica: a name a forget has removed since is never looked for.
    """
    index = _INDEXES.get(replica) if replica is not None else None
    if replica is None or index is None or index.graph is None:
        return None
    if index.stamp != (id(replica.lexical), replica.lexical.changes):
        return None
    if index.known is None or index.known[0] is not index.graph:
        names = index.graph.vocabulary()
        ordered = sorted(names, key=len, reverse=True)[:_MAX_KNOWN]
        alternatives = "|".join(map(re.escape, ordered))
        pattern = re.compile(rf"(?<![\w-])({alternatives})(?![\w-])", re.IGNORECASE) if ordered else None
        index.known = (index.graph, (pattern, names) if pattern is not None else None)
    return index.known[1]


def _with_known(found: Extraction, text: str, pattern: re.Pattern[str], names: dict[str, str]) -> Extraction:
    have = {m.name.lower() for m in found.entities}
    extra = {m.group(1).lower(): m.group(1) for m in pattern.finditer(text) if m.group(1).lower() not in have}
    added = tuple(Mention(name, names.get(low, "thing")) for low, name in extra.items())
    return Extraction(found.entities + added, found.relations) if added else found


def chunk_facts(record: Record, *, read_missing: bool = True) -> ChunkFacts | None:
    """A stored chunk's findings with their source (``None`` for other kinds of records).

    A chunk stored without findings (before this layer, or by a memory without an extractor) is read with the
    patterns when ``read_missing``.
    """
    meta = record.metadata
    kind = str(meta.get("source_type", "session"))
    if kind not in FACT_SOURCES:
        return None
    stored = meta.get(FACTS_KEY)
    try:
        if stored is not None:
            facts = decode_facts(stored, record.id)
        else:
            facts = findings(_READER, meta, record.text) if read_missing else Extraction()
    except ValueError:
        facts = Extraction()  # a value edited by hand in the store: the chunk still counts, without findings
    when = parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else None
    session = meta.get("session_id")
    index = meta.get("chunk_index")
    position = index if isinstance(index, int) and not isinstance(index, bool) else 0
    source = Source(
        record.id, str(session) if session is not None else None, when, marker(kind, timestamp=when), position
    )
    return ChunkFacts(source, facts)


@dataclass
class _Index:
    seen: dict[str, tuple[str, ChunkFacts | None]] = field(default_factory=dict)
    graph: RelationGraph | None = None
    lock: threading.Lock = field(default_factory=_fork.lock)
    known: tuple[RelationGraph, tuple[re.Pattern[str], dict[str, str]] | None] | None = None
    """The graph the user's known names were taken from, and their compiled pattern."""
    stamp: tuple[int, int] = (0, -1)
    """The replica's index and its change count when the graph was built (equal: nothing changed since)."""


_INDEXES: weakref.WeakKeyDictionary[UserReplica, _Index] = weakref.WeakKeyDictionary()
_STORED_ONLY: weakref.WeakKeyDictionary[UserReplica, _Index] = weakref.WeakKeyDictionary()
"""The same, for memories without an extractor (only the findings stored on the chunks)."""
_UNREPLICATED: dict[tuple[str, str, bool], _Index] = _fork.per_process({})
"""Users without a replica (past ``max_user_chunks``, stores that cannot list): by store, user, read_missing.

A forked child starts without them: the parent may write after the copy was taken."""
_INDEXES_LOCK = _fork.lock()
_MAX_UNREPLICATED = 4
"""Users without a replica whose findings are kept (the most recently used; each is over ``max_user_chunks``)."""


def _refresh(index: _Index, revisions: dict[str, str], fetch: Any, *, read_missing: bool) -> RelationGraph:
    """Bring ``index`` to ``revisions`` (id → revision), reading the records that changed with ``fetch(ids)``."""
    stale = [doc_id for doc_id, revision in revisions.items() if index.seen.get(doc_id, ("",))[0] != revision]
    gone = index.seen.keys() - revisions.keys()
    returned = set()
    for record in fetch(stale) if stale else ():
        returned.add(record.id)
        index.seen[record.id] = (revisions[record.id], chunk_facts(record, read_missing=read_missing))
    for doc_id in gone | (set(stale) - returned):  # forgotten, or deleted between the listing and the read
        index.seen.pop(doc_id, None)
    if stale or gone or index.graph is None:
        index.graph = RelationGraph(facts for _, facts in index.seen.values() if facts is not None)
    return index.graph


def replica_graph(replica: UserReplica, *, read_missing: bool = True) -> RelationGraph:
    """The graph of a synced replica's chunks, rebuilt only when a chunk was added, edited or removed."""
    with _INDEXES_LOCK:
        index = (_INDEXES if read_missing else _STORED_ONLY).setdefault(replica, _Index())
    with index.lock:
        stamp = (id(replica.lexical), replica.lexical.changes)  # read first: a change after it rebuilds next time
        if index.graph is not None and stamp == index.stamp:
            return index.graph
        with replica.lock:
            current = {doc_id: replica.record(doc_id) for doc_id in replica.ids()}
        revisions = {doc_id: fingerprint(record.metadata) for doc_id, record in current.items()}
        graph = _refresh(index, revisions, lambda ids: [current[i] for i in ids], read_missing=read_missing)
        index.stamp = stamp
        return graph


def user_graph(memory: SessionVectorMemory) -> RelationGraph:
    """The graph of the user the call acts for."""
    view = memory.for_run()  # the user this call acts for
    store = view.service.user(view.user_id)
    read_missing = memory.relation_extractor is not None
    replica = store.replica()
    if replica is not None:
        return replica_graph(replica, read_missing=read_missing)
    backend, user = store.backend, store.user_id  # no replica: the store's listing says what changed since
    with _INDEXES_LOCK:
        index = _UNREPLICATED.pop((backend.process_key, user, read_missing), None) or _Index()
        _UNREPLICATED[(backend.process_key, user, read_missing)] = index  # the most recently used last
        while len(_UNREPLICATED) > _MAX_UNREPLICATED:
            _UNREPLICATED.pop(next(iter(_UNREPLICATED)))
    with index.lock:
        try:
            revisions = backend.listing(user)
        except UnsupportedOperationError:  # a store that cannot list: read what it returns, every time
            facts = [chunk_facts(r, read_missing=read_missing) for r in store.records({})]
            return RelationGraph(f for f in facts if f is not None)

        def paged(ids: list[str]) -> list[Record]:
            return [r for page in backend.pages(user, ids) for r in page.records]

        return _refresh(index, revisions, paged, read_missing=read_missing)


# -- retrieval through entities -------------------------------------------------------------------------------------
def entity_candidates(
    replica: UserReplica,
    query: str,
    vector: list[float] | Any,
    hits: list[tuple[Record, float]],
    *,
    fetch: int,
    only: set[str] | None,
) -> dict[str, float]:
    """Chunk id → share of the question's entities the chunk names (one-hop neighbours count half).

    The best ``fetch`` chunks naming them that the search missed join ``hits`` with their similarity.
    """
    graph = replica_graph(replica)
    named = graph.named_in(query, max_share=SPEAKER_SHARE, total=len(replica))
    if not named:
        return {}
    near = {k for rel in (r for key in named for r in graph.neighbours(key)) for k in rel.keys} - set(named)
    weights = dict.fromkeys(named, 1.0) | dict.fromkeys(near, 0.5)
    shares: dict[str, float] = {}
    for doc_id in graph.chunks_naming(weights):
        if only is None or doc_id in only:
            keys = graph.entities_of.get(doc_id, set())
            shares[doc_id] = min(1.0, sum(w for k, w in weights.items() if k in keys) / len(named))
    known = {r.id for r, _ in hits}
    missing = [doc_id for doc_id in shares if doc_id not in known]
    if missing:
        found = replica.scored(missing, vector)
        hits.extend(sorted(found, key=lambda h: -h[1])[:fetch])
    return shares
