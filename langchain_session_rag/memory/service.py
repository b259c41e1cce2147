"""The memory service: what a :class:`~langchain_session_rag.SessionVectorMemory` runs on.

``SessionVectorMemory`` is a thin retriever (its fields, and methods that translate a call into the service's
terms); the service owns the opened store (its back end, the in-process replicas and the write queue, shared by
every memory over the store), the embedding model, the write settings and the runtime settings. It hands out
one user's side of the store with :meth:`MemoryService.user` (the user a call acts for is the memory's
business: the service serves whichever user it is told).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_session_rag._time import TimestampLike, parse_timestamp
from langchain_session_rag.chunking.exchanges import ExchangeChunker
from langchain_session_rag.chunking.segmenter import TopicSegmenter
from langchain_session_rag.errors import UnsupportedOperationError
from langchain_session_rag.memory.core import CoreMemory, forget_cached
from langchain_session_rag.memory.core_text import AgentEdits
from langchain_session_rag.memory.erasure import (
    ErasureReceipt,
    Forgotten,
    ShreddingTier,
    erase_logs,
    erase_user_logs,
    linked_tiers,
    reseal_logs,
)
from langchain_session_rag.memory.reassessment import reassess_store
from langchain_session_rag.memory.runtime import RuntimeSettings
from langchain_session_rag.memory.scoped import StoreState, UserStore, reset_replicas, state_of
from langchain_session_rag.models import fingerprint
from langchain_session_rag.privacy.keyring import Keyring
from langchain_session_rag.privacy.redaction import redact_nested, redact_secrets, refuse_secret
from langchain_session_rag.privacy.sealing import UserCipher
from langchain_session_rag.relations.model import Extractor
from langchain_session_rag.stores.base import CORE_MEMORY, DAILY_LOGS, MemoryBackend
from langchain_session_rag.stores.encrypted import EncryptedBackend


@dataclass(frozen=True)
class WriteSettings:
    """How new memories are cut, grouped, bounded and scored (the memory's fields of the same meaning)."""

    chunker: ExchangeChunker
    segmenter: TopicSegmenter
    max_message_chars: int
    scorer: Callable[[str], float] | None = None
    daily_log_dir: str | None = None
    redact_secrets: bool = False
    extractor: Extractor | None = None

    def same_as(self, other: WriteSettings) -> bool:
        """Whether both hold the same objects and values (models compared by identity: cheap on every call)."""
        return (
            self.chunker is other.chunker
            and self.segmenter is other.segmenter
            and self.scorer is other.scorer
            and self.extractor is other.extractor
            and (self.max_message_chars, self.daily_log_dir, self.redact_secrets)
            == (other.max_message_chars, other.daily_log_dir, other.redact_secrets)
        )


@dataclass(frozen=True, eq=False)
class MemoryService:
    """The opened store, the embedding model, the write settings and the runtime settings of a memory."""

    backend: MemoryBackend
    state: StoreState
    """The store's replicas and write queue (one per store in this process, shared by its memories)."""
    model_id: str
    embeddings: Embeddings
    writing: WriteSettings
    runtime: RuntimeSettings

    @classmethod
    def open(
        cls,
        backend: MemoryBackend,
        *,
        model_id: str,
        embeddings: Embeddings,
        writing: WriteSettings,
        runtime: RuntimeSettings,
    ) -> MemoryService:
        """Check the store against the model and the settings, and attach to the store's in-process state.

        Raises:
            UnsupportedOperationError: A daily log on a store without the ``DAILY_LOGS`` capability.
            EmbeddingModelMismatchError: The store was written with another embedding model.
        """
        if writing.daily_log_dir is not None and DAILY_LOGS not in backend.capabilities:
            msg = (
                "daily_log_dir writes files on this machine: it is for embedded stores. With a Chroma server, many "
                "processes on many machines write, so keep logs where your app runs (or export_jsonl)."
            )
            raise UnsupportedOperationError(msg)
        backend.check_model(model_id, None)
        reassess_store(backend)  # once per store: chunks assessed before speakers were read from the messages
        return cls(backend, state_of(backend), model_id, embeddings, writing, runtime)

    def probe(self) -> list[list[float]]:
        """The model's vectors for the probe texts of :mod:`~langchain_session_rag.models.fingerprint`."""
        return fingerprint.probe(self.embeddings)

    def with_settings(self, writing: WriteSettings, runtime: RuntimeSettings) -> MemoryService:
        """This service with other write or runtime settings (itself when they are the same)."""
        if writing.same_as(self.writing) and (runtime is self.runtime or runtime == self.runtime):
            return self
        return dataclasses.replace(self, writing=writing, runtime=runtime)

    def user(self, user_id: str) -> UserStore:
        """One user's side of the store."""
        return UserStore(self, user_id)

    def waits(self, wait: bool) -> bool:
        """Whether a write asked with ``wait`` is waited for (always, without ``background_writes``)."""
        return wait or not self.runtime.background_writes

    def flush(self) -> None:
        """Wait until every queued write of the store has reached it (raises StoreWriteError on a failed one)."""
        self.state.writes.flush()

    # -- core memory ---------------------------------------------------------------------------------
    def core(self, user_id: str, *, limits: dict[str, int], agent_edits: AgentEdits) -> CoreMemory:
        """The pinned core memory of ``user_id``, kept in a companion store.

        Raises:
            UnsupportedOperationError: The store has no ``CORE_MEMORY`` capability.
        """
        if CORE_MEMORY not in self.backend.capabilities:
            msg = (
                f"Core memory is kept in a Chroma store next to the memories; this memory uses "
                f"{type(self.backend).__name__}. Use SessionVectorMemory.local(...) or .server(...)."
            )
            raise UnsupportedOperationError(msg)
        companion = self.backend.companion("core")
        return CoreMemory(
            companion,
            user_id,
            limits=limits,
            count=self.writing.chunker.count,
            agent_edits=agent_edits,
            redact=self.redacted if self.writing.redact_secrets else None,
        )

    def redacted(self, text: str) -> str:
        """``text`` with its secrets replaced by ``[secret:KIND]`` when the memory redacts them (else as it is)."""
        return redact_secrets(text).text if self.writing.redact_secrets else text

    def redacted_metadata(self, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """``metadata`` with secrets replaced in its text values (a document's ``source`` URL with a password)."""
        if not metadata or not self.writing.redact_secrets:
            return metadata
        return {k: redact_nested(v) for k, v in metadata.items()}

    def refuse_secret_ids(self, **ids: object) -> None:
        """Refuse ids (a session id, a note key) holding a secret when the memory redacts (see ``refuse_secret``).

        Raises:
            InvalidArgumentError: An id holds a secret; nothing was stored.
        """
        if self.writing.redact_secrets:
            for name, value in ids.items():
                if isinstance(value, str) and value:
                    refuse_secret(name, value)

    # -- encryption -----------------------------------------------------------------------------------
    @property
    def keyring(self) -> Keyring | None:
        """The keyring of an encrypted store (``None`` when the store is not encrypted)."""
        return self.backend.keyring if isinstance(self.backend, EncryptedBackend) else None

    def cipher(self, user_id: str) -> UserCipher | None:
        """Seals the user's texts kept outside the store (day files, exports) when the store is encrypted."""
        keyring = self.keyring
        return UserCipher(keyring, user_id) if keyring is not None else None

    def reencrypt(self, user_id: str) -> int:
        """Renew the user's data key: records, core memory and day files rewritten under a new key, the old destroyed.

        Raises:
            UnsupportedOperationError: The store is not encrypted.
        """
        if not isinstance(self.backend, EncryptedBackend):
            msg = "The store is not encrypted: open it with its master key (encryption_key=) to re-encrypt it."
            raise UnsupportedOperationError(msg)
        self.flush()
        folder, cipher = self.writing.daily_log_dir, self.cipher(user_id)
        reseal = None if folder is None or cipher is None else functools.partial(reseal_logs, folder, user_id, cipher)
        try:
            return self.backend.reencrypt(user_id, also=reseal)
        finally:
            reset_replicas(self.backend)

    # -- forgetting, every tier ----------------------------------------------------------------------
    def forget(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        before: TimestampLike | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Delete the user's chunks matching every criterion, then what the other tiers hold of them."""
        tiers = linked_tiers(self.backend.process_key)  # checked before anything is erased
        removed = self.user(user_id).forget(session_id, before, ids)
        gone = Forgotten.of(
            removed,
            session_id=session_id,
            before=None if before is None else parse_timestamp(before, what="before"),
            by_ids=ids is not None,
        )
        for tier in tiers:
            tier.forget_derived(user_id, gone)
        if self.writing.daily_log_dir is not None:
            erase_logs(self.writing.daily_log_dir, user_id, gone, self.cipher(user_id))
        return len(removed)

    def forget_all(self, user_id: str) -> ErasureReceipt:
        """Destroy the user's data keys, then delete the user's chunks, core memory, cache entries, daily logs.

        The keys go first (an encrypted store): whatever the deletions after it leave, nothing of it opens.
        """
        tiers = linked_tiers(self.backend.process_key)  # checked before anything is erased
        shredded = [self.keyring.shred(user_id)] if self.keyring is not None else []
        removed = self.user(user_id).forget_all()
        if CORE_MEMORY in self.backend.capabilities:
            core = self.backend.companion("core")
            core.purge(user_id)  # the core memory and its history go too (not counted)
            forget_cached(core.process_key, user_id)
        cached = 0
        for tier in tiers:
            shredded.extend(tier.shred(user_id) if isinstance(tier, ShreddingTier) else [])
            cached += tier.forget_derived(user_id, None)
        logs = self.writing.daily_log_dir is not None and erase_user_logs(self.writing.daily_log_dir, user_id)
        return ErasureReceipt(
            removed,
            user_id=user_id,
            key_ids=tuple(k for r in shredded for k in r.key_ids),
            key_files=tuple(r.key_file for r in shredded if r.key_file),
            cache_entries=cached,
            daily_logs_deleted=logs,
            destroyed_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )

    def compact(self) -> int:
        """Erase forgotten records from the linked caches, the stores beside this one, then this store."""
        for tier in linked_tiers(self.backend.process_key):
            tier.compact()
        for other in self.backend.stores_beside():
            try:
                other.compact()
            finally:
                reset_replicas(other)
        self.flush()
        try:
            return self.backend.compact()
        finally:
            reset_replicas(self.backend)
