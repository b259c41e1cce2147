"""The node names of the session-RAG graphs."""

from __future__ import annotations

__all__ = [
    "AGENT",
    "BUILD_PROMPT",
    "CACHE_LOOKUP",
    "CALL_MODEL",
    "RETRIEVE_DOCUMENTS",
    "RETRIEVE_MEMORIES",
    "SUMMARISE_AND_STORE",
    "VALIDATE",
]

VALIDATE = "validate"
CACHE_LOOKUP = "cache_lookup"
RETRIEVE_MEMORIES = "retrieve_memories"
RETRIEVE_DOCUMENTS = "retrieve_documents"
BUILD_PROMPT = "build_prompt"
CALL_MODEL = "call_model"
AGENT = "agent"
SUMMARISE_AND_STORE = "summarise_and_store"
