"""The one-time re-assessment of a store's older chunks when it is opened.

Stores written before speakers were read from the messages (``worth_version`` 1, or none recorded) hold a ``worth``
read from their text, where a reply quoting ``User: ...`` was taken for the user's statement. On open, every
session chunk and note of every user is assessed again (:func:`~langchain_session_rag.memory.worth.assess`, which
reads such a chunk's turns by :func:`~langchain_session_rag.memory.worth.spoken_turns`); the chunks whose values
change are written back with their vectors as they were, and the store's manifest records ``worth_version`` 3 so
this runs once. A store without a manifest (a LangChain ``VectorStore`` other than Chroma) records no version and is
not re-assessed: its older chunks keep their stored worth.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from langchain_session_rag.memory.worth import assess
from langchain_session_rag.stores.base import USER_LISTING, MemoryBackend
from langchain_session_rag.stores.records import stamp

WORTH_VERSION_KEY = "worth_version"
"""The manifest entry recording how the store's chunks were assessed."""
WORTH_VERSION = 3
"""3: a user's sentence that stops before its value states nothing; 2: speakers from the messages (label-like
lines escaped), notes by their author; 1: speakers read from the text."""
_ASSESSED = {"source_type": {"$in": ["session", "note"]}}


@runtime_checkable
class _Manifested(Protocol):
    @property
    def manifest(self) -> dict[str, Any]: ...

    def update_manifest(self, values: dict[str, Any]) -> None: ...


def _manifest_of(backend: object) -> _Manifested | None:
    """The store holding the manifest: the back end, or the one an encrypting back end wraps."""
    while not isinstance(backend, _Manifested):
        backend = getattr(backend, "inner", None)
        if backend is None:
            return None
    return backend


def reassess_store(backend: MemoryBackend) -> int | None:
    """Re-assess every user's chunks once (see the module docstring); how many changed (``None``: nothing to do)."""
    holder = _manifest_of(backend)
    if holder is None or USER_LISTING not in backend.capabilities:
        return None
    if int(holder.manifest.get(WORTH_VERSION_KEY) or 1) >= WORTH_VERSION:
        return None
    changed = 0
    for user_id in backend.users():
        records = backend.get(user_id, _ASSESSED, with_embeddings=True)
        different = [r for r in records if assess(r.metadata, r.text)]
        if different:
            stamp(different)  # a new revision: replicas in other processes see the change
            backend.add(user_id, different)
            changed += len(different)
    holder.update_manifest({WORTH_VERSION_KEY: WORTH_VERSION})
    return changed
