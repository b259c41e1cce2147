"""Each user's change log in a Chroma store: what lets another process's replica follow edits cheaply.

Every write of a user's records through this package adds, after the write landed, one entry to the store's
manifest collection: a record of its own (a new random id, so concurrent writers never overwrite each other's)
naming the user (hashed) and the ids the write touched (``"*"`` past ``MAX_IDS``). A replica lists the user's
entry ids (an ids-only read of a small collection), reads only the entries it has not seen, and fetches only the
records they name; a replica that sees ``"*"`` lists the user's ids and revisions instead.

Entries older than ``RETENTION`` seconds are pruned by writers (at most every ``RETENTION / 10`` per user and
process); a replica whose last sync is older than half of it lists the user's ids and revisions, so it never
depends on a pruned entry while the hosts' clocks agree within ``RETENTION / 2``.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chromadb import Collection

RETENTION = 3_600.0
"""Seconds an entry is kept (an hour: the log stays a few entries per active user); a replica whose last sync is
older than half of it lists the user's revisions instead."""
MAX_IDS = 500
"""Ids an entry names at most; a larger write is logged as ``"*"`` (every record of the user may have changed)."""
_USER_KEY = "log_user"
_PRUNED: dict[tuple[str, str], float] = {}
"""(collection id, user hash) → ``time.monotonic()`` of this process's last pruning."""


def _user(user_id: str) -> str:
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


def append(manifest: Collection, user_id: str, ids: Sequence[str]) -> None:
    """Log a write of the user's records ``ids`` (after it landed), and prune old entries now and then."""
    user, now = _user(user_id), time.time()
    named = json.dumps(sorted(set(ids))) if len(ids) <= MAX_IDS else "*"
    vector: Any = [[1.0]]
    metadata: Any = [{_USER_KEY: user, "at": now, "ids": named}]
    manifest.add(ids=[f"chg-{user}-{uuid.uuid4().hex}"], metadatas=metadata, embeddings=vector)
    key = (str(manifest.id), user)
    if time.monotonic() - _PRUNED.get(key, -1e9) > RETENTION / 10:
        _PRUNED[key] = time.monotonic()
        old: Any = {"$and": [{_USER_KEY: user}, {"at": {"$lt": now - RETENTION}}]}
        stale = manifest.get(where=old, include=[])["ids"]
        if stale:
            manifest.delete(ids=list(stale))


def entries(manifest: Collection, user_id: str) -> set[str]:
    """Ids of the user's kept log entries (an ids-only read)."""
    return set(manifest.get(where={_USER_KEY: _user(user_id)}, include=[])["ids"])


def touched(manifest: Collection, entry_ids: Sequence[str]) -> set[str] | None:
    """The record ids the entries name; ``None`` when one names ``"*"`` or is gone (list the user instead)."""
    got: Any = manifest.get(ids=list(entry_ids), include=["metadatas"])
    if len(got["ids"]) != len(set(entry_ids)):
        return None
    out: set[str] = set()
    for meta in got["metadatas"] or []:
        named = str((meta or {}).get("ids", "*"))
        if named == "*":
            return None
        out.update(json.loads(named))
    return out
