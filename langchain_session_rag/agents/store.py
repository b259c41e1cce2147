"""``SessionMemoryStore``: a LangGraph ``BaseStore`` over a session memory, so ``runtime.store`` sees the memories."""

from __future__ import annotations

import asyncio
import json
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.documents import Document
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langchain_session_rag._checks import SYSTEM_PREFIX, check_int
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.agents.namespaces import TEXT_FIELDS, NamespaceMap, Scope
from langchain_session_rag.agents.tools import check_acting_for_user
from langchain_session_rag.errors import (
    IdentityConflictError,
    InvalidArgumentError,
    ReadOnlyNamespaceError,
    UnsupportedOperationError,
)
from langchain_session_rag.identity import run_identity
from langchain_session_rag.memory.retriever import SessionVectorMemory, check_memory
from langchain_session_rag.memory.worth import USER_AUTHOR
from langchain_session_rag.stores.base import USER_LISTING
from langchain_session_rag.stores.limits import check_depth, check_metadata_size

_PAGE = 1_000
_UNFILTERED: dict[str, Any] = {"search_kwargs": {}} | dict.fromkeys(
    ["source_type", "session_ids", "exclude_session_ids", "score_threshold"]
)
_OPS = {"$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
        "$lte": operator.le}  # fmt: skip


def _value_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text embedded for an item: the given fields, else ``content`` / ``text`` when a string, else its JSON."""
    if fields:
        parts = [_lookup(value, f) for f in fields]
        text = "\n".join(p if isinstance(p, str) else json.dumps(p, default=str) for p in parts if p is not None)
        if text.strip():
            return text
    for name in TEXT_FIELDS:
        if isinstance(value.get(name), str) and value[name].strip():
            return str(value[name])
    return json.dumps(value, sort_keys=True, default=str)


def _no_ttl(ttl: object) -> float | None:
    """``None`` when no ttl is given (the ttl passed on); a ttl is refused before anything is stored."""
    if ttl is not NOT_PROVIDED and ttl is not None:
        msg = f"ttl={ttl!r}: this store keeps items until they are deleted; ttl is not supported (leave ttl unset)."
        raise InvalidArgumentError(msg)
    return None


def _lookup(value: Mapping[str, Any], path: str) -> Any:
    current: Any = value
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _matches(value: Mapping[str, Any], filt: Mapping[str, Any] | None) -> bool:
    """LangGraph's store filter: field equality, or ``{"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": v}``."""
    for key, cond in (filt or {}).items():
        actual = _lookup(value, key)
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):  # operators: _check_filter's
            for op, wanted in cond.items():
                if not _compare(actual, op, wanted):
                    return False
        elif actual != cond:
            return False
    return True


def _check_filter(filt: Mapping[str, Any] | None) -> None:
    """Refuse operators the store does not know before looking at any item."""
    for key, cond in (filt or {}).items():
        if isinstance(cond, Mapping):
            unknown = sorted(k for k in map(str, cond) if k.startswith("$") and k not in _OPS)
            if unknown:
                msg = f"Unsupported filter operator(s) {unknown} for {key!r}; supported: {sorted(_OPS)}."
                raise InvalidArgumentError(msg)


def _compare(actual: Any, op: str, wanted: Any) -> bool:
    try:
        return bool(_OPS[op](actual, wanted))
    except TypeError:  # an order between values that have none (a number and a string)
        return False


def _every_memory(view: SessionVectorMemory) -> list[Document]:
    """Every memory of the view's user, page by page."""
    docs: list[Document] = []
    while True:
        page = view.list_memories(limit=_PAGE, offset=len(docs))
        docs.extend(page)
        if len(page) < _PAGE:
            return docs


def _epoch_time(value: object) -> datetime:
    seconds = float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class SessionMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` whose namespaces are users of a :class:`SessionVectorMemory`.

    Example:
        .. code-block:: python

            import tempfile
            from langchain_session_rag import SessionMemoryStore, SessionVectorMemory

            memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="default")
            store = SessionMemoryStore(memory)                      # namespaces ("memories", user_id, ...)
            store.put(("memories", "alice"), "diet", {"content": "Alice is vegetarian since 2024."})
            hits = store.search(("memories", "alice"), query="what does Alice eat?", limit=3)
            assert hits[0].key == "diet" and hits[0].value["content"].startswith("Alice is vegetarian")
            assert memory.for_user("alice").invoke("what does Alice eat?")[0].metadata["source_type"] == "note"
            # graph = builder.compile(store=store): every node and tool gets runtime.store over the memory

    Items put under a user's namespace are notes of that user (``source_type="note"``): the graph's retrieval finds
    them, and a search with ``query=`` finds the user's conversations too (items keyed by chunk id, value
    ``{"content", "marker", "session_id", "source_type", "timestamp"}``). Every item is embedded (``index=False``
    is accepted and embeds anyway); ``filter`` matches fields of the values; TTLs are not supported.

    Isolation: an operation reaches the user its namespace names, and only when the current run (its
    ``configurable`` or LangGraph ``context``) names that user or none; a namespace naming no user is refused
    unless it starts with one of ``shared`` (kept apart from every user's memories). ``list_namespaces`` above the
    user part (``prefix=("memories",)`` or none) lists the run's user's namespaces inside a run, and every user's
    outside one (an admin task; a server keeps it to an admin with its own access rules).

    Provenance: ``put`` serves both a model's tools (LangMem's ``create_manage_memory_tool`` writes through
    ``runtime.store``) and application code, and cannot tell them apart, so by default an item is the model's
    note (a claim, see ``acting_for_user``). Application code that stores what the user said opens its own store
    with ``SessionMemoryStore(memory, acting_for_user=True)`` (or calls ``memory.for_user(u).add_note(...)``,
    which is the user's by default); :meth:`put_shared` writes as the application.

    Shared namespaces are read-only through ``put`` / ``delete`` / ``batch`` (what a run's nodes and tools call on
    ``runtime.store``): one user's run could otherwise rewrite a "policy" every other user then reads. Such a write
    raises ``ReadOnlyNamespaceError`` and changes nothing, unless its namespace starts with one of
    ``writable_shared``. The application writes shared items with :meth:`put_shared` / :meth:`delete_shared`.

    Args:
        memory: The memory (any of its users; each operation uses ``memory.for_user``).
        namespace: The namespace template; exactly one part is ``"{user_id}"``.
        shared: Namespace prefixes every user may read (e.g. ``[("policies",)]``).
        writable_shared: Shared namespace prefixes that runs may also write (put and delete) through the
            ``BaseStore`` interface; each lies under one of ``shared``. Default: none (shared is read-only to runs).
        index_fields: Value fields embedded by default (``None``: ``content`` / ``text``, else the whole value).
        require_run_user: Refuse operations on a user's namespace unless the current run names that user (for a
            server, where every call is part of a user's run); by default a call outside any run may reach any
            user's namespace, as a script or an admin task would.
        acting_for_user: Store items put through ``put`` / ``batch`` as the user's statements. By default they are
            the model's claims (``author="model"``: ranked and labelled "said by the assistant", superseding none
            of the user's statements), since a run's tools (LangMem's memory tools) write what a model chose.
    """

    def __init__(
        self,
        memory: SessionVectorMemory,
        *,
        namespace: tuple[str, ...] = ("memories", "{user_id}"),
        shared: Iterable[tuple[str, ...]] = (),
        writable_shared: Iterable[tuple[str, ...]] = (),
        index_fields: Sequence[str] | None = None,
        require_run_user: bool = False,
        acting_for_user: bool = False,
    ) -> None:
        """Map namespaces onto ``memory``'s users (see the class docstring)."""
        self.memory = check_memory(memory)
        self.namespaces = NamespaceMap(tuple(namespace), [tuple(p) for p in shared])
        self.writable_shared = self.namespaces.check_writable([tuple(p) for p in writable_shared])
        self.index_fields = list(index_fields) if index_fields is not None else None
        self.require_run_user = require_run_user
        self.author = check_acting_for_user(acting_for_user)

    # -- the BaseStore interface -----------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get / search / put / list-namespaces operations in order."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                msg = f"Unknown store operation {type(op).__name__}."
                raise InvalidArgumentError(msg)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (in a worker thread, with the run's context)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def put(self, *args: Any, ttl: object = NOT_PROVIDED, **kwargs: Any) -> None:
        """:meth:`BaseStore.put`; a ``ttl`` is refused (``InvalidArgumentError``): items stay until deleted."""
        super().put(*args, ttl=_no_ttl(ttl), **kwargs)

    async def aput(self, *args: Any, ttl: object = NOT_PROVIDED, **kwargs: Any) -> None:
        """Async :meth:`put`."""
        await super().aput(*args, ttl=_no_ttl(ttl), **kwargs)

    # -- the application's writes to shared namespaces ------------------------------------------------
    def put_shared(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any], *, index: list[str] | None = None
    ) -> None:
        """Store an item in a shared namespace as the application (``writable_shared`` is not needed).

        Not part of ``BaseStore``: a run's tools write through ``put``, which refuses shared namespaces.

        Raises:
            InvalidArgumentError: The namespace is not shared, or the key or value is malformed.
        """
        self._put(PutOp(tuple(namespace), key, value, index), app=True)

    def delete_shared(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item of a shared namespace as the application (see :meth:`put_shared`)."""
        self._put(PutOp(tuple(namespace), key, None), app=True)

    async def aput_shared(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any], *, index: list[str] | None = None
    ) -> None:
        """Async :meth:`put_shared`."""
        await asyncio.to_thread(self.put_shared, namespace, key, value, index=index)

    async def adelete_shared(self, namespace: tuple[str, ...], key: str) -> None:
        """Async :meth:`delete_shared`."""
        await asyncio.to_thread(self.delete_shared, namespace, key)

    # -- operations ------------------------------------------------------------------------------
    def _view(self, scope: Scope) -> SessionVectorMemory:
        """The memory of the scope's user, after checking the run names that user or none."""
        if not scope.shared:
            named = run_identity().user_id
            if named is None and self.require_run_user:
                msg = (
                    f"This store serves a user's namespace only inside a run naming that user (require_run_user), "
                    f"and the current call names none; namespace user {scope.user_id!r}."
                )
                raise InvalidArgumentError(msg)
            if named is not None and named != scope.user_id:
                msg = (
                    f"The namespace names user {scope.user_id!r}, but the current run is for user {named!r}: "
                    "a run may reach its own user's namespace only."
                )
                raise IdentityConflictError(msg)
        # The memory's standing filters (source_type, sessions, threshold) are the graph's, not the store's.
        return self.memory.for_user(scope.user_id).model_copy(update=_UNFILTERED)

    def _find(self, view: SessionVectorMemory, scope: Scope, key: str) -> Document | None:
        found = view.get_by_ids([scope.item_id(key)])
        if not found and not scope.rest:
            found = [d for d in view.get_by_ids([key]) if "store_key" not in d.metadata]
        return found[0] if found else None

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        scope = self.namespaces.scope(namespace)
        doc = self._find(self._view(scope), scope, key)
        return None if doc is None else self._item(doc, scope)

    def _put(self, op: PutOp, *, app: bool = False) -> None:
        scope = self.namespaces.scope(op.namespace)
        if app and not scope.shared:
            msg = f"put_shared / delete_shared write shared namespaces only; {op.namespace!r} is a user's namespace."
            raise InvalidArgumentError(msg)
        if scope.shared and not app and not any(op.namespace[: len(p)] == p for p in self.writable_shared):
            msg = (
                f"The shared namespace {op.namespace!r} is read-only to runs: nothing was changed. The application "
                "writes it with store.put_shared(...), or grants runs writes with "
                f"SessionMemoryStore(..., writable_shared=[{op.namespace!r}])."
            )
            raise ReadOnlyNamespaceError(msg)
        view = self._view(scope)
        if not isinstance(op.key, str) or not op.key:
            msg = f"A store key must be a non-empty string, got {op.key!r}."
            raise InvalidArgumentError(msg)
        if op.value is None:
            doc = self._find(view, scope, op.key)
            if doc is not None and doc.id:
                view.forget(ids=[doc.id])
            return
        if not isinstance(op.value, Mapping):
            msg = f"A store value must be a dict, got {type(op.value).__name__}."
            raise InvalidArgumentError(msg)
        view.service.refuse_secret_ids(store_key=op.key, store_namespace=" ".join(scope.rest))  # ids are never redacted
        check_depth(op.value, "store_value")  # before any JSON encoding: a deep value would overflow the stack
        fields = op.index if isinstance(op.index, list) else self.index_fields
        metadata = scope.item_metadata(op.key, dict(op.value), fields)
        check_metadata_size(metadata)  # the value's MAX_VALUE_BYTES, before its text is tokenised or embedded
        view.add_note(
            _value_text(op.value, fields),
            key=scope.note_key(op.key),
            session_id=run_identity().session_id or "",
            metadata=metadata,
            author=USER_AUTHOR if app else self.author,
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        check_int("limit", op.limit, 1)
        check_int("offset", op.offset, 0)
        _check_filter(op.filter)
        scope = self.namespaces.scope(op.namespace_prefix, prefix=True)
        view = self._view(scope)
        wanted = op.offset + op.limit
        if op.query:
            options: dict[str, Any] = {"source_type": "note"} if scope.rest else {}
            k = wanted
            if scope.rest or op.filter:  # rank every memory of the user, then keep the namespace's and the filter's
                try:
                    k = max(view.count(), 1)
                except UnsupportedOperationError:
                    k = max(4 * wanted, 50)
            docs = view.invoke(op.query, k=k, **options)
        else:
            docs = _every_memory(view)
        items = [self._item(d, scope) for d in docs]
        kept = [
            SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at, d.metadata.get("score"))
            for i, d in zip(items, docs, strict=True)
            if scope.contains(i.namespace) and _matches(i.value, op.filter)
        ]
        return kept[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), None)
        if prefix is not None and any(p == "*" for p in prefix):
            msg = (
                f"list_namespaces takes no wildcard in prefix= (got {prefix!r}): name the user (e.g. "
                "('memories', user_id)), or stop before the user part (('memories',)) to list every user."
            )
            raise InvalidArgumentError(msg)
        listing_users = prefix is None or self.namespaces.above_users(prefix)
        if prefix is not None and not listing_users:
            scopes = [self.namespaces.scope(prefix, prefix=True)]
        else:
            scopes = self._listed_scopes(with_shared=prefix is None)
        # Listing users to a depth within the template: each user's base namespace is the answer.
        shallow = (
            listing_users
            and op.max_depth is not None
            and op.max_depth <= len(self.namespaces.template)
            and not any(c.match_type == "suffix" for c in conditions)
        )
        found: set[tuple[str, ...]] = set()
        for scope in scopes:
            if shallow and not scope.shared:  # the user's base is enough: no need to read their items
                found.add(scope.base)
            else:
                found.update(ns for ns in self._namespaces_of(scope) if scope.contains(ns))
        names = sorted(
            ns
            for ns in found
            if (prefix is None or ns[: len(prefix)] == prefix) and all(_suffix_ok(ns, c) for c in conditions)
        )
        if op.max_depth is not None:
            names = sorted({ns[: op.max_depth] for ns in names})
        return names[op.offset : op.offset + op.limit]

    def _listed_scopes(self, *, with_shared: bool) -> list[Scope]:
        """The scopes a listing above the user part covers: the run's user, or every user (and shared prefixes).

        A run naming a user lists that user's namespaces only; outside a run (a script, an admin task, a
        server's store API behind its own access rules) every user of the store is listed.
        """
        named = run_identity().user_id
        if named is None and self.require_run_user:
            msg = (
                "Listing namespaces above the user part needs a run naming a user (require_run_user), and the "
                "current call names none; pass prefix=('memories', user_id) inside a run for that user."
            )
            raise InvalidArgumentError(msg)
        if named is not None:
            users = [named]
        else:
            backend = self.memory.backend
            if USER_LISTING not in backend.capabilities:
                msg = (
                    f"This memory's back end ({type(backend).__name__}) cannot list its users: pass "
                    "prefix=('memories', user_id) to list one user's namespaces."
                )
                raise UnsupportedOperationError(msg)
            users = sorted(u for u in backend.users() if not u.startswith(SYSTEM_PREFIX))
        scopes = [self.namespaces.scope(self.namespaces.user_base(u)) for u in users]
        if with_shared and named is None:
            scopes += [self.namespaces.scope(s, prefix=True) for s in self.namespaces.shared]
        return scopes

    def _namespaces_of(self, scope: Scope) -> set[tuple[str, ...]]:
        """Every namespace holding an item of the scope's user (or shared prefix)."""
        return {self._item(d, scope).namespace for d in _every_memory(self._view(scope))}

    def _item(self, doc: Document, scope: Scope) -> Item:
        meta = doc.metadata
        created = parse_timestamp(meta["timestamp"]) if meta.get("timestamp") else _epoch_time(meta.get("stored_epoch"))
        updated = _epoch_time(meta.get("stored_epoch"))
        if "store_key" in meta:
            namespace = scope.base + tuple(json.loads(str(meta.get("store_namespace") or "[]")))
            value = json.loads(str(meta["store_value"]))
            return Item(
                value=value, key=str(meta["store_key"]), namespace=namespace, created_at=created, updated_at=updated
            )
        value = {
            "content": doc.page_content,
            "marker": meta.get("marker"),
            "session_id": meta.get("session_id"),
            "source_type": meta.get("source_type"),
            "timestamp": meta.get("timestamp"),
        }
        return Item(value=value, key=str(doc.id), namespace=scope.base, created_at=created, updated_at=updated)


def _suffix_ok(namespace: tuple[str, ...], condition: Any) -> bool:
    if condition.match_type != "suffix":
        return True
    path = tuple(condition.path)
    tail = namespace[len(namespace) - len(path) :] if len(path) <= len(namespace) else ()
    return len(tail) == len(path) and all(p in ("*", n) for p, n in zip(path, tail, strict=True))
