"""The connections of ``session-rag serve``: a deadline for every request's headers, and a cap on open connections.

uvicorn closes a keep-alive connection that stays idle after a response, but waits without a limit for the headers
of a request: a client that connects and sends nothing, or half a header, holds a file descriptor for ever, and
about 20,000 of them (no token needed) exhaust the process's descriptors. :class:`GuardedHTTPProtocol` is uvicorn's
own HTTP protocol (httptools when installed, else h11) that closes a connection whose request headers are not
whole within ``header_timeout`` seconds, and closes at once a connection beyond ``max_connections`` open ones
(:class:`~langchain_session_rag.server.settings.ServeSettings`). ``session-rag serve`` uses it in every worker.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from langchain_session_rag.server.settings import SETTINGS_ENV, ServeSettings

_LOGGER = logging.getLogger(__name__)
_WARN_EVERY = 60.0
"""Seconds between two warnings that connections are refused (one line, not one per connection)."""
_warned = {"at": -_WARN_EVERY}


@functools.cache
def _settings() -> ServeSettings:
    """The worker's settings (those the command left in the environment; the defaults without it)."""
    text = os.environ.get(SETTINGS_ENV)
    return ServeSettings.model_validate_json(text) if text else ServeSettings()


class GuardedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol with a deadline for each request's headers and a cap on open connections."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """The protocol as uvicorn builds it, with no deadline running yet."""
        super().__init__(*args, **kwargs)
        self._late: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        """Accept the connection, or close it at once when over the cap; start the headers' deadline."""
        super().connection_made(transport)
        cap = _settings().max_connections
        if len(self.connections) > cap:
            now = time.monotonic()
            if now - _warned["at"] >= _WARN_EVERY:
                _warned["at"] = now
                _LOGGER.warning("Over %d open connections: new ones are closed at once (--max-connections).", cap)
            transport.close()
            return
        self._watch()

    def data_received(self, data: bytes) -> None:
        """Read, then watch the next request's headers if the last request is answered."""
        super().data_received(data)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline."""
        if self._late is not None:
            self._late.cancel()
            self._late = None
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        cycle: Any = self.cycle
        return cycle is None or bool(cycle.response_complete)

    def _watch(self) -> None:
        """Arm the deadline when no request is under way (none yet, or the last one answered)."""
        if self._late is None and self._between_requests() and not self.transport.is_closing():
            self._late = self.loop.call_later(_settings().header_timeout, self._expire, self.cycle)

    def _expire(self, cycle: object) -> None:
        """Close the connection if no new request's headers arrived since the deadline was armed."""
        self._late = None
        if self.cycle is cycle and self._between_requests():
            _LOGGER.debug("Closed a connection whose request headers were not whole in time: %s", self.client)
            self.transport.close()
            return
        self._watch()
