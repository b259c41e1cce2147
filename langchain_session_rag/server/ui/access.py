"""Who is looking at the memory browser, and whether a form was really sent from it.

The pages know the same users as the server's API: with a token file, a user signs in with their token and the
browser gets a session value, never the token (:mod:`~langchain_session_rag.server.ui.signin`), in an ``HttpOnly``,
``SameSite=Strict`` cookie for the pages' path only; behind an authenticating proxy the proxy's user header names
them on every request (``session-rag ui``'s own token: :mod:`~langchain_session_rag.cli.ui`).

Every form that changes something (forget, core memory, import, sign out) is checked three ways: its
anti-forgery field must be the one the pages gave this sign-in, the browser must not say the request came from
another site (``Sec-Fetch-Site``), and an ``Origin`` header, when sent, must be this server (its ``Host``, or the
``X-Forwarded-Host`` a proxy in front sets). The anti-forgery value is keyed by a secret of the server, so it
cannot be computed from a user's name. ``session-rag ui`` also answers only requests addressed to a loopback name
(no DNS rebinding), and so does ``session-rag serve`` behind a proxy (``--trusted-user-header``) on loopback.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from langchain_session_rag.server.auth import Authenticator, TokenFileUnusable, Unauthenticated, digest_of
from langchain_session_rag.server.http import ABANDONED, note_abandoned
from langchain_session_rag.server.ui.html import PREFIX
from langchain_session_rag.server.ui.signin import SignIn, SignOuts, TokenPrints, fingerprint

COOKIE = "session_rag_ui"
"""The start of the name of the cookie holding a signed-in browser's session value (never the token; for the
pages' path only). Each server's cookie is named ``session_rag_ui_`` + a short id of its pages secret
(:attr:`UiAccess.cookie`): cookies ignore the port, so two servers on one host (``session-rag ui`` and
``session-rag serve`` on 127.0.0.1) would otherwise replace each other's sign-in."""
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
    signin: SignIn | None = None
    """The browser's sign-in (``None`` behind a proxy: no cookie)."""
    renewed: str | None = None
    """The renewed session value the page hands the browser (``None``: renewed less than a minute ago)."""
    secure: bool = False
    """Whether the page is served over https (the cookie is then ``Secure``)."""


@dataclass(frozen=True)
class UiAccess:
    """The pages' door: users from the server's :class:`Authenticator`, only these ``hosts`` when given."""

    auth: Authenticator
    hosts: frozenset[str] = frozenset()
    """Host names the pages answer to (``session-rag ui``: loopback only); empty: any."""
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    """Keys the sign-ins and the forms' anti-forgery values; the same in every worker of a server (else a sign-in
    or a form would be refused by the other workers)."""
    sign_outs: SignOuts = field(default_factory=SignOuts)
    """Where sign-outs are recorded: the same folder for every worker of a server (default: this process only)."""
    clock: Callable[[], float] = time.time
    """Seconds since the epoch (a test moves it to expire sign-ins)."""
    _prints: TokenPrints = field(default_factory=TokenPrints, repr=False, compare=False)

    @property
    def cookie(self) -> str:
        """The name of this server's sign-in cookie: :data:`COOKIE` and a short id of :attr:`secret`.

        The same in every worker of a server (they share the secret), different for another server on the host.
        The id is an HMAC of a fixed label under the secret: it tells nothing about the secret.
        """
        return f"{COOKIE}_{hmac.new(self.secret, b'cookie name', hashlib.sha256).hexdigest()[:12]}"

    def hand_cookie(self, response: Response, value: str, *, secure: bool) -> None:
        """Hand the browser its sign-in (``HttpOnly``, ``SameSite=Strict``, the pages' path, ``Secure`` on https)."""
        response.set_cookie(self.cookie, value, httponly=True, samesite="strict", path=PREFIX, secure=secure)

    def drop_cookie(self, response: Response) -> None:
        """Make the browser drop this server's sign-in cookie (an ended sign-in, a sign-out)."""
        response.delete_cookie(self.cookie, path=PREFIX, httponly=True, samesite="strict")

    def check_host(self, request: Request) -> None:
        """Refuse a request addressed to a host name not in :attr:`hosts` (a DNS-rebinding page).

        Raises:
            Refused: 403.
        """
        problem = host_problem(request.headers.get("host", ""), self.hosts)
        if problem:
            raise Refused(403, problem)

    def _users(self) -> Mapping[bytes, str]:
        """The token file's users now.

        Raises:
            Refused: 503 while the token file is unusable.
        """
        try:
            return self.auth.users()
        except TokenFileUnusable as exc:
            raise Refused(503, str(exc)) from exc

    def _signed_in(self, request: Request) -> SignIn:
        """The browser's sign-in, when it still holds.

        Raises:
            LoginNeeded: No cookie, a value this server did not sign, an expired or signed-out sign-in, or one whose
                token left the token file.
            Refused: 503 while the token file is unusable.
        """
        value = request.cookies.get(self.cookie, "")
        signin = SignIn.opened(value, self.secret) if value else None
        if signin is None or signin.expired(self.clock()) or self.sign_outs.signed_out(signin.id):
            raise LoginNeeded
        if self._prints.user_of(signin.token_print, self._users(), self.secret) != signin.user:  # token still there
            raise LoginNeeded
        return signin

    def viewer(self, request: Request) -> Viewer:
        """The signed-in user of a page request (a sign-in last renewed over a minute ago is renewed).

        Raises:
            LoginNeeded: No sign-in, or one that has ended (the page sends the browser to sign in).
            Refused: A foreign host name, no user header from the proxy (401), an unusable token file (503).
        """
        self.check_host(request)
        if self.auth.trusted_header is not None:
            try:
                user = self.auth.user_of_pairs(request.headers.items())
            except Unauthenticated as exc:
                raise Refused(401, str(exc)) from exc
            return Viewer(user=user, csrf=csrf_value(user, self.auth.trusted_header, self.secret))
        signin = self._signed_in(request)
        renewed = signin.renewed(self.clock())
        return Viewer(
            user=signin.user,
            csrf=csrf_value(signin.user, signin.id, self.secret),
            signin=signin,
            renewed=renewed.sealed(self.secret) if renewed is not None else None,
            secure=request.url.scheme == "https",
        )

    def token_user(self, token: str) -> str | None:
        """The user a sign-in token names (``None``: none).

        Raises:
            Refused: 503 while the token file is unusable.
        """
        return self._users().get(digest_of(token))

    def one_user(self) -> bool:
        """Whether the server knows one user only (``session-rag ui``: its token signs you in as yourself)."""
        return len(self._users()) == 1

    def sign_in(self, token: str) -> str | None:
        """The session value that signs a browser in with ``token`` (``None``: the token names no user).

        Raises:
            Refused: 503 while the token file is unusable.
        """
        user = self.token_user(token)
        if user is None:
            return None
        return SignIn.new(user, fingerprint(digest_of(token), self.secret), self.clock()).sealed(self.secret)

    def sign_out(self, viewer: Viewer) -> None:
        """End the viewer's sign-in in every worker (nothing to end behind a proxy)."""
        if viewer.signin is not None:
            self.sign_outs.sign_out(viewer.signin, self.clock())

    async def form(self, request: Request, viewer: Viewer | None = None) -> FormData:
        """A POSTed form from these pages: same site, and (signed in) carrying the user's anti-forgery value.

        Raises:
            Refused: 403 for a request from another site (``Sec-Fetch-Site``, or an ``Origin`` naming another host)
                or without the right anti-forgery value.
        """
        site = request.headers.get("sec-fetch-site")  # what the browser says of where the form was sent from
        if site is not None and site not in {"same-origin", "none"}:
            raise Refused(403, "Refused: this form was sent from another site.")
        origin = request.headers.get("origin")
        hosts = {request.headers.get("host", ""), request.headers.get("x-forwarded-host", "").split(",")[0].strip()}
        if origin is not None and urlsplit(origin).netloc not in hosts - {""}:  # "null" too
            raise Refused(403, "Refused: this form was sent from another origin.")
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
