"""A signed-in browser: a session value that is never the token, expires, and ends at sign-out in every worker.

The cookie holds ``v1.PAYLOAD.SIGNATURE``. The payload (JSON, base64url) names the user, a fingerprint of the token
they signed in with (keyed by the pages' secret: it tells nothing of the token), a random id, when it was issued
and when the browser was last seen; the signature is an HMAC-SHA256 keyed by the pages' secret, which every worker
of a server shares. So each worker checks the signature and both time limits on its own, with no shared memory:

- idle: :data:`IDLE_LIMIT` (30 minutes) without a page; a page renews the cookie, at most once a minute;
- lifetime: :data:`LIFETIME` (12 hours) after signing in, however busy.

Two things need state every worker sees. A sign-out records the session's id in :class:`SignOuts`: for
``session-rag serve``, a private folder the command makes for its workers (one empty file per signed-out id, kept
until that session would have expired anyway); in one process, a set. A token that leaves the token file ends the
sign-ins made with it: the fingerprint is checked against the file as it is now (read again when it changes). The
pages' secret is made at each start, so a restart signs everyone out. The value is no API key: the API knows
tokens only, and the value is not one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

IDLE_LIMIT = 30 * 60
"""Seconds without a page after which a sign-in ends."""
LIFETIME = 12 * 3600
"""Seconds after signing in at which a sign-in ends, however busy."""
RENEW_AFTER = 60
"""Seconds after which a page renews the cookie's last-seen time (not at every page)."""
_VERSION = "v1"
_ID = re.compile(r"[0-9a-f]{32}")


def fingerprint(digest: bytes, secret: bytes) -> str:
    """The fingerprint of a token (by its SHA-256 ``digest``) a sign-in carries: keyed, so it reveals nothing."""
    return hmac.new(secret, b"token\0" + digest, hashlib.sha256).hexdigest()[:32]


class TokenPrints:
    """Users by token fingerprint, made again when the token file's users change (one worker's, any thread's)."""

    def __init__(self) -> None:
        """Nothing fingerprinted yet."""
        self._made: tuple[Mapping[bytes, str] | None, dict[str, str]] = (None, {})  # replaced whole: thread-safe

    def user_of(self, token_print: str, users: Mapping[bytes, str], secret: bytes) -> str | None:
        """The user of ``users`` (by token digest) whose token has this fingerprint (``None``: none has)."""
        made_of, prints = self._made
        if made_of is not users:  # the token file changed (or first use)
            prints = {fingerprint(digest, secret): user for digest, user in users.items()}
            self._made = (users, prints)
        return prints.get(token_print)


def _signature(payload: str, secret: bytes) -> str:
    mac = hmac.new(secret, f"{_VERSION}.{payload}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


@dataclass(frozen=True)
class SignIn:
    """One browser's sign-in: whose, with which token (its fingerprint), its id, and its times (epoch seconds)."""

    user: str
    token_print: str
    id: str
    issued: float
    seen: float

    @classmethod
    def new(cls, user: str, token_print: str, now: float) -> SignIn:
        """A sign-in made ``now``, with a random id."""
        return cls(user=user, token_print=token_print, id=os.urandom(16).hex(), issued=float(now), seen=float(now))

    def sealed(self, secret: bytes) -> str:
        """The cookie's value: the payload and its signature."""
        fields = [self.user, self.token_print, self.id, self.issued, self.seen]
        payload = base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")
        return f"{_VERSION}.{payload}.{_signature(payload, secret)}"

    @classmethod
    def opened(cls, value: str, secret: bytes) -> SignIn | None:
        """The sign-in a cookie's value holds (``None``: not one this secret signed, or malformed)."""
        version, _, rest = value.partition(".")
        payload, _, signature = rest.partition(".")
        if version != _VERSION or not hmac.compare_digest(signature.encode(), _signature(payload, secret).encode()):
            return None
        try:
            user, token_print, session_id, issued, seen = json.loads(base64.urlsafe_b64decode(payload + "=" * 3))
        except (ValueError, TypeError, binascii.Error):
            return None
        kinds = (type(user), type(token_print), type(session_id), type(issued), type(seen))
        if kinds != (str, str, str, float, float) or not _ID.fullmatch(session_id):
            return None
        return cls(user=user, token_print=token_print, id=session_id, issued=issued, seen=seen)

    def expired(self, now: float) -> bool:
        """Whether it has ended by time: idle too long, or past its lifetime."""
        return now - self.seen >= IDLE_LIMIT or now - self.issued >= LIFETIME

    def renewed(self, now: float) -> SignIn | None:
        """The same sign-in seen ``now`` (``None``: renewed less than :data:`RENEW_AFTER` ago)."""
        return replace(self, seen=float(now)) if now - self.seen >= RENEW_AFTER else None


@dataclass(frozen=True)
class SignOuts:
    """Signed-out sign-in ids, where every worker of one server sees them.

    ``folder``: one empty file per id (the folder every worker of ``session-rag serve`` is given, private to the
    server's account); ``None``: a set in this process (one process only).
    """

    folder: Path | None = None
    _here: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def sign_out(self, signin: SignIn, now: float) -> None:
        """Record the sign-out of ``signin``; forget the ids of sign-ins that have expired since."""
        until = signin.issued + LIFETIME
        if self.folder is None:
            for old in [k for k, end in self._here.items() if end <= now]:
                del self._here[old]
            self._here[signin.id] = until
            return
        os.close(os.open(self.folder / signin.id, os.O_CREAT | os.O_WRONLY, 0o600))
        stale = time.time() - LIFETIME  # the files' times are the machine's, whatever the pages' clock
        for entry in os.scandir(self.folder):
            if _ID.fullmatch(entry.name) and entry.stat().st_mtime < stale:
                Path(entry.path).unlink(missing_ok=True)

    def signed_out(self, session_id: str) -> bool:
        """Whether the sign-in ``session_id`` was signed out."""
        if self.folder is None:
            return session_id in self._here
        return (self.folder / session_id).exists()
