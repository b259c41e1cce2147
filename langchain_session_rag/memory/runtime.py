"""The process-side knobs of a memory (replica cache bounds, write batching), as one public settings object."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RuntimeSettings(BaseModel):
    """How a memory uses this process's memory and threads; the defaults are the package's usual behaviour.

    Pass one to the constructor or to ``local(...)`` / ``server(...)``; views made with ``for_user`` / ``for_run``
    keep it. Each memory applies its own settings to its own calls, so two memories of one process (even over one
    store) can differ. Every field is a bound or a delay, never a change of what is stored.

    Example:
        .. code-block:: python

            from langchain_session_rag.memory import RuntimeSettings

            small = RuntimeSettings(replica_max_users=100, max_user_chunks=5_000, write_linger=0.0)
            assert small.replica_max_chunks == 200_000  # the default
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    replica_max_users: int = Field(default=1_000, ge=1)
    """Users whose in-process replica is kept, per store; the least recently used are dropped past it (and rebuilt
    from the store on their next use)."""
    replica_max_chunks: int = Field(default=200_000, ge=1)
    """Chunks all replicas of a store may hold together (about 4.4 KB each, so about 880 MB by default); the least
    recently used replicas are dropped past it."""
    max_user_chunks: int = Field(default=50_000, ge=1)
    """Chunks past which a user gets no replica (about 220 MB by default): that user's searches use the store's own
    vector index (slower per query, bounded memory)."""
    write_linger: float = Field(default=0.1, ge=0, allow_inf_nan=False)
    """Seconds a write nobody waits for (``add_messages(..., wait=False)``, the graph's writes) may wait for company,
    so the writes arriving meanwhile share one store call. ``flush()`` and a waited-for write end it at once."""
    background_writes: bool = True
    """``True``: ``wait=False`` writes are sent by a background thread and retrievable by this process at once.
    ``False``: every write is waited for, as with ``wait=True`` (other processes see each write when the call
    returns)."""
