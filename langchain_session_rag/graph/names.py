"""The node names of the session-RAG graphs."""

from __future__ import annotations

from typing import Final

VALIDATE = "validate"
CACHE_LOOKUP = "cache_lookup"
RETRIEVE_MEMORIES = "retrieve_memories"
RETRIEVE_DOCUMENTS = "retrieve_documents"
BUILD_PROMPT = "build_prompt"
CALL_MODEL = "call_model"
AGENT = "agent"
SUMMARISE_AND_STORE = "summarise_and_store"


class Node:
    """The node names of the session-RAG graphs, for wiring them into your own graph (``Node.CALL_MODEL``).

    Plain strings: ``Node.CALL_MODEL == "call_model"``.
    """

    VALIDATE: Final = VALIDATE
    CACHE_LOOKUP: Final = CACHE_LOOKUP
    RETRIEVE_MEMORIES: Final = RETRIEVE_MEMORIES
    RETRIEVE_DOCUMENTS: Final = RETRIEVE_DOCUMENTS
    BUILD_PROMPT: Final = BUILD_PROMPT
    CALL_MODEL: Final = CALL_MODEL
    AGENT: Final = AGENT
    SUMMARISE_AND_STORE: Final = SUMMARISE_AND_STORE
