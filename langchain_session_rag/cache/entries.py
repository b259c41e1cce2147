"""What a cache entry is (its id, key and stored fields) and the checks of what callers hand the cache."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from langchain_session_rag.cache import questions
from langchain_session_rag.cache.decision import source_digest
from langchain_session_rag.cache.questions import normalise_question
from langchain_session_rag.errors import InvalidArgumentError, UnknownOptionError
from langchain_session_rag.privacy._folding import blank
from langchain_session_rag.privacy.redaction import find_secrets
from langchain_session_rag.stores.base import Record
from langchain_session_rag.stores.records import user_metadata

LOOKUP_OPTIONS = frozenset({"llm_string", "knowledge_version", "history", "standalone"})
MAX_ANSWER_CHARS = 100_000
"""Default ``SemanticCache.max_answer_chars``: a longer answer is not stored (it would ride in every lookup's row)."""
MAX_LLM_STRING_BYTES = 64 * 1024
"""Longest ``llm_string`` (UTF-8 bytes) an answer is stored under; the adapter's prompt digests stay far below."""


def oversized(answer: str, llm_string: str, max_answer_chars: int) -> str:
    """``"answer_too_long"`` or ``"llm_string_too_long"`` when an entry must not be stored for its size, else ``""``."""
    if len(answer) > max_answer_chars:
        return "answer_too_long"
    if len(llm_string) > MAX_LLM_STRING_BYTES or len(llm_string.encode()) > MAX_LLM_STRING_BYTES:
        return "llm_string_too_long"
    return ""


def llm_key(llm_string: str) -> str:
    """The exact part of an entry's key: a digest of the model / prompt configuration."""
    return hashlib.sha256(llm_string.encode()).hexdigest()[:16]


def entry_record(
    scope: str,
    question: str,
    answer: str,
    *,
    key: str,
    version: str,
    life: float | None,
    extra: dict[str, Any],
    sources: Sequence[Document] = (),
) -> Record:
    """The record of an answer (without its vector): the question, the answer, its key, version and expiry.

    Its id is one per scope, configuration, knowledge version and normalised question.
    """
    now = time.time()
    raw_id = "\x1f".join([scope, key, version, normalise_question(question)])
    pairs = [(d.id, d.page_content) for d in sources if d.id]
    source_meta = {"source_ids": json.dumps([i for i, _ in pairs]), "source_digest": source_digest(pairs)}
    return Record(
        id=hashlib.sha256(raw_id.encode()).hexdigest()[:32],
        text=normalise_question(question),
        metadata={
            **extra,
            "user_id": scope,
            "question": question,
            "answer": answer,
            "llm_key": key,
            "knowledge_version": version,
            "created_at": now,
            "expires_at": now + life if life else 0.0,
            **(source_meta if pairs else {}),
        },
    )


def check_client(client: object) -> None:
    """The cache's ``chroma_client`` is a chromadb client."""
    if not hasattr(client, "get_or_create_collection"):
        msg = (
            f"chroma_client must be a chromadb client, got {type(client).__name__}; "
            "use SemanticCache.local(path=...) or SemanticCache.server(host=..., port=...)."
        )
        raise InvalidArgumentError(msg)


def check_question(question: object, standalone: object) -> None:
    """The question is a non-blank string (its standalone rewrite, when given, a string).

    Blank is whitespace and characters that draw nothing (a zero-width space, a word joiner, a soft hyphen).
    """
    for name, value in (("question", question), ("standalone", standalone)):
        if (value is not None or name == "question") and not isinstance(value, str):
            msg = f"{name} must be a string, got {type(value).__name__}."
            raise InvalidArgumentError(msg)
    if isinstance(question, str) and blank(question):
        msg = f"question must be a non-blank string, got {question!r:.40}: pass the user's question."
        raise InvalidArgumentError(msg)


def cache_key(
    question: str, history: Sequence[str], standalone: str | None, max_chars: int, *, secrets: bool = False
) -> tuple[str | None, str]:
    """The question to look up or store (``standalone`` when given), or ``None`` with the reason it must not be.

    With ``secrets``, a question holding a secret (a key, a token, a card number) is never cached: a placeholder
    in its place would make one user's keys look alike, and the secret must not reach the store.
    """
    check_question(question, standalone)
    q = standalone or question
    if len(q) > max_chars:
        return None, "too_long"
    if not any(ch.isalnum() for ch in q):
        return None, "no_text"
    if secrets and find_secrets(q):
        return None, "secret"
    if questions.is_volatile(q):
        return None, "volatile"
    if standalone is None and questions.is_context_dependent(question, history):
        return None, "context_dependent"
    return q, ""


def check_text_options(llm_string: object, knowledge_version: object) -> None:
    """``llm_string`` and ``knowledge_version`` are strings when given."""
    for name, value in (("llm_string", llm_string), ("knowledge_version", knowledge_version)):
        if value is not None and not isinstance(value, str):
            msg = f"{name} must be a string, got {type(value).__name__}."
            raise InvalidArgumentError(msg)


def check_update(
    answer: object, ttl: object, llm_string: object, version: object, metadata: dict[str, Any] | None
) -> dict[str, Any]:
    """Check what ``update`` was given; return the caller's metadata, validated and encoded."""
    if not isinstance(answer, str):
        msg = f"answer must be a string, got {type(answer).__name__}."
        raise InvalidArgumentError(msg)
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf):
        msg = f"ttl must be a positive number of seconds (or None for the cache's own), got {ttl!r}."
        raise InvalidArgumentError(msg)
    check_text_options(llm_string, version)
    return user_metadata(metadata)


def lookup_options(options: dict[str, Any]) -> dict[str, Any]:
    """The keyword options of ``lookup``, refusing unknown ones."""
    unknown = sorted(set(options) - LOOKUP_OPTIONS)
    if unknown:
        msg = f"Unknown lookup option(s) {unknown}; known: {sorted(LOOKUP_OPTIONS)}."
        raise UnknownOptionError(msg)
    return options


def history_texts(history: Sequence[str | BaseMessage]) -> list[str]:
    """Earlier turns as texts."""
    if (
        isinstance(history, str | bytes)
        or not isinstance(history, Sequence)
        or not all(isinstance(h, str | BaseMessage) for h in history)
    ):
        msg = "history must be a list of earlier turns (strings or messages)."
        raise InvalidArgumentError(msg)
    return [h.text if isinstance(h, BaseMessage) else h for h in history]


def sources_changed(meta: dict[str, Any], source_check: Callable[[str, list[str]], str] | None, user_id: str) -> bool:
    """Whether the sources an entry was stored with changed (by ``source_check``'s digest of them now)."""
    ids = json.loads(str(meta.get("source_ids") or "[]"))
    if not ids or source_check is None:
        return False
    return bool(source_check(user_id, ids) != meta.get("source_digest"))
