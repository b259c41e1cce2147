"""Who is looking at the memory browser, and whether a form was really sent from it.

The pages know the same users as the server's API: with a token file, a user signs in once with their token (kept
in an ``HttpOnly``, ``SameSite=Strict`` cookie for the pages' path only); behind an authenticating proxy the
proxy's user header names them on every request. ``session-rag ui`` makes a random token at start and prints an
address that carries it, as Jupyter does: a local user needs no token file, and another account on the machine
cannot open the page.

Every form that changes something (forget, core memory, import, sign out) is checked three ways: its
anti-forgery field must be the one the pages gave this user, the browser must not say the request came from
another site (``Sec-Fetch-Site``), and an ``Origin`` header, when sent, must be this server (its ``Host``, or the
``X-Forwarded-Host`` a proxy in front sets). The anti-forgery value is keyed by a secret of the server, so it
cannot be computed from a user's name. ``session-rag ui`` also answers only requests addressed to a loopback name
(no DNS rebinding), and so does ``session-rag serve`` behind a proxy (``--trusted-user-header``) on loopback.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.requests import ClientDisconnect, Request

from langchain_session_rag.server.auth import Authenticator, Unauthenticated
from langchain_session_rag.server.http import ABANDONED, note_abandoned

COOKIE = "session_rag_ui"
"""The cookie holding a signed-in user's token (for the pages' path only)."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
"""The host names ``session-rag ui`` answers to."""
MAX_FORM_FIELDS = 64


class LoginNeeded(Exception):  # noqa: N818 - an HTTP outcome (a redirect to the sign-in page), not a library error
    """The request names no user: the page sends the browser to sign in."""


class Refused(Exception):  # noqa: N818 - an HTTP outcome (an error page), not a library error
    """A request the pages refuse (a forged form, a foreign host): answered with an error page and ``status``."""

    def __init__(self, status: int, message: str) -> None:
        """``status``: the HTTP status of the error page; ``message``: what it says."""
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Viewer:
    """The user a page is for, and the anti-forgery value their forms carry."""

    user: str
    csrf: str


@dataclass(frozen=True)
class UiAccess:
    """The pages' door: users from the server's :class:`Authenticator`, only these ``hosts`` when given."""

    auth: Authenticator
    hosts: frozenset[str] = frozenset()
    """Host names the pages answer to (``session-rag ui``: loopback only); empty: any."""
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    """Keys the forms' anti-forgery values; the same in every worker of a server (else a form posted to another
    worker would be refused)."""

    def check_host(self, request: Request) -> None:
        """Refuse a request addressed to a host name not in :attr:`hosts` (a DNS-rebinding page).

        Raises:
            Refused: 403.
        """
        problem = host_problem(request.headers.get("host", ""), self.hosts)
        if problem:
            raise Refused(403, problem)

    def _credential(self, request: Request) -> tuple[str, str]:
        """The user and what names them (the token, or the proxy's header value)."""
        if self.auth.trusted_header is not None:
            try:
                return self.auth.user_of_pairs(request.headers.items()), self.auth.trusted_header
            except Unauthenticated as exc:
                raise Refused(401, str(exc)) from exc
        token = request.cookies.get(COOKIE, "")
        if not token:
            raise LoginNeeded
        try:
            return self.auth.user_of({"authorization": f"Bearer {token}"}), token
        except Unauthenticated as exc:
            raise LoginNeeded from exc

    def viewer(self, request: Request) -> Viewer:
        """The signed-in user of a page request.

        Raises:
            LoginNeeded: No token cookie, or one the server does not know (the page sends the browser to sign in).
            Refused: A foreign host name, or no user header from the proxy (401).
        """
        self.check_host(request)
        user, credential = self._credential(request)
        return Viewer(user=user, csrf=csrf_value(user, credential, self.secret))

    def token_user(self, token: str) -> str | None:
        """The user a sign-in token names (``None``: none)."""
        try:
            return self.auth.user_of({"authorization": f"Bearer {token.strip()}"})
        except Unauthenticated:
            return None

    async def form(self, request: Request, viewer: Viewer | None = None) -> FormData:
        """A POSTed form from these pages: same site, and (signed in) carrying the user's anti-forgery value.

        Raises:
            Refused: 403 for a request from another site or without the right anti-forgery value.
        """
        check_same_site(request)
        try:
            form = await request.form(max_files=1, max_fields=MAX_FORM_FIELDS)
        except ClientDisconnect:
            note_abandoned(request)
            raise Refused(400, ABANDONED) from None
        if viewer is not None and not hmac.compare_digest(str(form.get("csrf", "")), viewer.csrf):
            raise Refused(403, "This form is stale or was not sent from these pages: reload the page and try again.")
        return form


def host_problem(host: str, hosts: frozenset[str]) -> str:
    """Why a request addressed to ``host`` (its ``Host`` header) is refused (``""``: it is not; no ``hosts``: any)."""
    if not hosts:
        return ""
    name = urlsplit(f"//{host}").hostname or ""
    if name in hosts or f"[{name}]" in hosts:
        return ""
    return (
        f"This server answers only at {', '.join(sorted(hosts))}, not at {name!r} (a proxy in front that keeps the "
        "public host name: start the server with --allowed-host NAME)."
    )


def csrf_value(user: str, credential: str, secret: bytes) -> str:
    """The anti-forgery value of a user's forms: bound to the server's secret and to what signs the user in."""
    message = f"{user}\0{credential}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:32]


def check_same_site(request: Request) -> None:
    """Refuse a POST the browser says came from another site.

    Raises:
        Refused: 403 when ``Sec-Fetch-Site`` is ``cross-site``/``same-site``, or ``Origin`` names another host.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in {"same-origin", "none"}:
        raise Refused(403, "Refused: this form was sent from another site.")
    origin = request.headers.get("origin")
    hosts = {request.headers.get("host", ""), request.headers.get("x-forwarded-host", "").split(",")[0].strip()}
    if origin is not None and urlsplit(origin).netloc not in hosts - {""}:  # "null" too
        raise Refused(403, "Refused: this form was sent from another origin.")
