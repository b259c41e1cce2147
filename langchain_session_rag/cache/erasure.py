"""A semantic cache as a tier of the memory: entries derived from forgotten memories are deleted, files compacted.

An entry records the user it belongs to (its scope, ``"user:" + user_id``), the ids of the memories behind its
answer (``source_ids``, the graph's retrieved memories) and, when the graph wrote it, the session it was
answered in (metadata ``memory_session``). When a linked memory forgets, :class:`CacheTier` deletes every entry of
that user whose sources include a forgotten chunk, that was answered in a session a forgotten chunk belonged
to, or (``forget(before=...)``) that was written before that time; ``forget_all`` deletes all of the user's
entries. A cache is disposable: deleting an entry costs one miss, so the rule errs on the side of deleting.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from langchain_session_rag.cache.scope import USER_SCOPE_PREFIX
from langchain_session_rag.stores.encrypted import EncryptedBackend

if TYPE_CHECKING:
    from langchain_session_rag.memory.erasure import Forgotten
    from langchain_session_rag.privacy.keyring import ShredReceipt
    from langchain_session_rag.stores.base import MemoryBackend, Record

SESSION_KEY = "memory_session"
"""Entry metadata naming the memory session an answer was given in (forgetting that session deletes it)."""


def derived_from(record: Record, forgotten: Forgotten) -> bool:
    """Whether a cache entry was derived from what ``forgotten`` removed."""
    meta = record.metadata
    try:
        sources = set(json.loads(str(meta.get("source_ids") or "[]")))
    except json.JSONDecodeError:  # an entry we cannot read: delete it rather than keep what may be derived
        return True
    if sources & forgotten.chunk_ids:
        return True
    session = meta.get(SESSION_KEY)
    if isinstance(session, str) and (session in forgotten.sessions or session == forgotten.session_id):
        return True
    created = meta.get("created_at")
    return (
        forgotten.before is not None
        and isinstance(created, int | float)
        and created < forgotten.before.timestamp()
        and not forgotten.by_ids
    )


class CacheTier:
    """The cache's store seen by the memory it is linked to (see :func:`~langchain_session_rag.memory.erasure`)."""

    def __init__(self, backend: MemoryBackend) -> None:
        """Wrap the cache's store."""
        self.backend = backend

    @property
    def tier_key(self) -> str:
        """The cache store's process key."""
        return self.backend.process_key

    def check_usable(self) -> None:
        """Refuse, before the memory forgets anything, a cache store this process cannot use.

        Raises:
            StoreLockedError: The cache is an embedded store opened before this process was forked from it.
        """
        inner = self.backend.inner if isinstance(self.backend, EncryptedBackend) else self.backend
        in_this_process = getattr(inner, "in_this_process", None)  # a Chroma store's (not part of the protocol)
        if in_this_process is not None:
            in_this_process()

    def forget_derived(self, user_id: str, forgotten: Forgotten | None) -> int:
        """Delete the user's entries derived from ``forgotten`` (``None``: all of them); return how many."""
        scope = USER_SCOPE_PREFIX + user_id
        if forgotten is None:
            return self.backend.purge(scope)
        doomed = [r.id for r in self.backend.get(scope, {}) if derived_from(r, forgotten)]
        if doomed:
            self.backend.delete(scope, doomed)
        return len(doomed)

    def shred(self, user_id: str) -> list[ShredReceipt]:
        """Destroy the data key of the user's entries (an encrypted cache); nothing when it is not encrypted."""
        if isinstance(self.backend, EncryptedBackend):
            return [self.backend.keyring.shred(USER_SCOPE_PREFIX + user_id)]
        return []

    def compact(self) -> int:
        """Rebuild the cache's collections from its live entries and vacuum an embedded cache's folder."""
        return self.backend.compact()
