"""What every page's route needs: the memory, the door, the Search settings, the write lock; redirects."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi.responses import RedirectResponse, Response
from starlette.requests import Request

from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.server.ui.access import UiAccess, Viewer
from langchain_session_rag.server.ui.html import HEADERS, PREFIX, page
from langchain_session_rag.server.ui.search import SearchSettings


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

    def viewer(self, request: Request) -> tuple[Viewer, SessionVectorMemory]:
        """The signed-in user and their memory (see :meth:`UiAccess.viewer` for what is refused)."""
        seen = self.access.viewer(request)
        return seen, self.memory.for_user(seen.user)

    @staticmethod
    def shown(title: str, body: str, seen: Viewer, active: str, status: int = 200) -> Response:
        """A page for the signed-in user, with the navigation's current item."""
        return page(title, body, user=seen.user, active=active, csrf=seen.csrf, status=status)


def see(path: str) -> RedirectResponse:
    """Send the browser to another page (303: a POST is followed by a GET, so a reload sends nothing again)."""
    return RedirectResponse(f"{PREFIX}/{path}", status_code=303, headers=HEADERS)
