"""What every page's route needs: the memory, the door, the Search settings, the write lock; redirects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi.responses import RedirectResponse, Response
from starlette.requests import Request

from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.access import UiAccess, Viewer
from langchain_session_rag.server.ui.html import HEADERS, PREFIX, page
from langchain_session_rag.server.ui.search import SearchSettings


class Gate:
    """Page reads go through together; a compaction waits for them to end and holds new ones until it is done.

    A compaction copies the store and switches to the copy: a read meanwhile could find a collection gone.
    """

    def __init__(self) -> None:
        """Open, no reader."""
        self._state = asyncio.Condition()
        self._readers = 0
        self._closed = False

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """While a page reads."""
        async with self._state:
            await self._state.wait_for(lambda: not self._closed)
            self._readers += 1
        try:
            yield
        finally:
            async with self._state:
                self._readers -= 1
                self._state.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """While the store is compacted: no page reads."""
        async with self._state:
            await self._state.wait_for(lambda: not self._closed)
            self._closed = True
            await self._state.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            async with self._state:
                self._closed = False
                self._state.notify_all()


@dataclass(frozen=True)
class Pages:
    """The memory browser of one app: its memory, its door, its settings."""

    memory: SessionVectorMemory
    access: UiAccess
    search: SearchSettings
    compaction: bool
    """Whether the Forget page may compact the store (``session-rag ui``: every write goes through the pages)."""
    upload_limit: int
    """The largest file the Import page takes, in bytes."""
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by every page that writes: a compaction never copies the store while a page's write lands."""
    gate: Gate = field(default_factory=Gate)
    """Page reads against a compaction (see :class:`Gate`)."""

    def viewer(self, request: Request) -> tuple[Viewer, SessionVectorMemory]:
        """The signed-in user and their memory (see :meth:`UiAccess.viewer` for what is refused)."""
        seen = self.access.viewer(request)
        return seen, self.memory.for_user(seen.user)

    def shown(self, title: str, body: str, seen: Viewer, active: str, status: int = 200) -> Response:
        """A page for the signed-in user, with the navigation's current item (and the renewed sign-in, if any)."""
        shown = page(title, body, user=seen.user, active=active, csrf=seen.csrf, status=status)
        if seen.renewed is not None:  # every page renews the idle limit (at most once a minute)
            self.access.hand_cookie(shown, seen.renewed, secure=seen.secure)
        return shown


def see(path: str) -> RedirectResponse:
    """Send the browser to another page (303: a POST is followed by a GET, so a reload sends nothing again)."""
    return RedirectResponse(f"{PREFIX}/{path}", status_code=303, headers=HEADERS)
