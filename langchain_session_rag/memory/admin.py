"""Whom a call of ``SessionVectorMemory`` acts for, and that user's side of the store.

The run a call is part of may name its user (see ``SessionVectorMemory.for_run``); every method of the memory
(and the memory browser) asks here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_session_rag.identity import acting_user

if TYPE_CHECKING:
    from langchain_session_rag.memory.retriever import SessionVectorMemory
    from langchain_session_rag.memory.scoped import UserStore


def acting(self: SessionVectorMemory) -> str:
    """The user a call of ``self`` acts for (the run may name it, or be refused: see ``for_run``)."""
    return acting_user(self.user_id, from_run=self.user_from_run)


def user_store(self: SessionVectorMemory) -> UserStore:
    """The side of the store of the user a call of ``self`` acts for."""
    return self.service.user(acting(self))
