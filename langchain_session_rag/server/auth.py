"""Who is asking: bearer tokens from a token file, or a user header set by a trusted proxy.

Token file format (UTF-8 text; one user per line; blank lines and lines starting with ``#`` are skipped)::

    # TOKEN                                   USER
    3f9c2d7e8a1b4c5d6e7f8091a2b3c4d5          alice
    b8e1f0c2d3a4958677e6d5c4b3a2f1e0          bob@example.com

The token is the first field: at least 16 characters of ``A-Z a-z 0-9 . _ ~ + / = -`` (``openssl rand -hex 24``
makes one); the user id is the rest of the line. A token may appear once. The file must not be readable or
writable by other users (``chmod 600``): a world-readable token file is refused, as ssh refuses such a key.
Tokens are kept as SHA-256 digests in memory. The file is read again on the first request after it changes (its
inode, size, times or mode), so a token added or removed takes effect without a restart; a change that breaks it
(a malformed line, a mode others may read, the file gone) fails closed: every request gets 503
(:data:`UNUSABLE`) until it is fixed, and the reason goes to the server log, once.

Trusted header (``--trusted-user-header X-Forwarded-User``): the user is whatever that header says. Anyone who
can reach the server directly can claim to be anyone; use it only behind a proxy that authenticates users,
sets the header and removes any copy a client sent, with the server bound to loopback (the default).
"""

from __future__ import annotations

import hashlib
import logging
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from langchain_session_rag import _fork
from langchain_session_rag._checks import user_id_problem
from langchain_session_rag.errors import FileAccessError, InvalidArgumentError, SessionRAGError

MIN_TOKEN_CHARS = 16
UNUSABLE = "The server's token file is unusable; see the server log."
"""All a client learns of a broken token file (the reason, with the file's path, goes to the server log)."""
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]+")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,64}")
_LOGGER = logging.getLogger("session_rag.serve")


class Unauthenticated(Exception):  # noqa: N818 - an HTTP outcome (401), not a library error
    """The request names no user the server knows (answered with 401)."""


class TokenFileUnusable(Unauthenticated):
    """The token file changed into one that cannot be used: every request is refused (503) until it is fixed."""

    status = 503

    def __init__(self) -> None:
        """The one generic sentence a client gets (:data:`UNUSABLE`)."""
        super().__init__(UNUSABLE)


def digest_of(token: str) -> bytes:
    """The SHA-256 digest a token is known by (surrounding blanks ignored)."""
    return hashlib.sha256(token.strip().encode("utf-8")).digest()


def _line_error(path: Path, number: int, problem: str) -> InvalidArgumentError:
    msg = (
        f"{path}, line {number}: {problem} (a line is `TOKEN USER`; see the token file format in docs/deploy-serve.md)."
    )
    return InvalidArgumentError(msg)


def read_token_file(path: str | Path) -> dict[bytes, str]:
    """The users of a token file, by the SHA-256 digest of their token.

    Raises:
        FileAccessError: The file cannot be read, or other users may read or write it.
        InvalidArgumentError: A malformed line, a short token, an unfit user id, a repeated token, or no users.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"Cannot read the token file {path}: {exc}."
        raise FileAccessError(msg) from exc
    if mode & (stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH):
        msg = f"The token file {path} is readable or writable by other users of this machine: run `chmod 600 {path}`."
        raise FileAccessError(msg)
    users: dict[bytes, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        token, _, user = line.partition(" ") if " " in line else line.partition("\t")
        user = user.strip()
        if not user:
            raise _line_error(path, number, "no user after the token")
        if not _TOKEN.fullmatch(token) or len(token) < MIN_TOKEN_CHARS:
            rule = f"the token must be at least {MIN_TOKEN_CHARS} characters of A-Z a-z 0-9 . _ ~ + / = -"
            raise _line_error(path, number, rule)
        unfit = user_id_problem(user)
        if unfit is not None:
            raise _line_error(path, number, f"unfit user id ({unfit})")
        digest = digest_of(token)
        if digest in users:
            raise _line_error(path, number, "this token is already given to another line; each token names one user")
        users[digest] = user
    if not users:
        msg = f"The token file {path} names no users: add a line `TOKEN USER` (e.g. `$(openssl rand -hex 24) alice`)."
        raise InvalidArgumentError(msg)
    return users


class TokenFile:
    """A token file's users, read again on the first request after the file changes (fail closed when it breaks).

    Every worker of a server holds its own and sees the same file: no state is shared but the file.
    """

    def __init__(self, path: str | Path) -> None:
        """Read it once: a bad file is refused here, at start, as :func:`read_token_file` refuses it."""
        self.path = Path(path)
        self._lock = _fork.lock()  # fork-safe: a worker forked while another thread reads the file
        self._stamp = self._stamp_now()
        self._users: dict[bytes, str] | None = read_token_file(self.path)
        self._logged = ""

    def _stamp_now(self) -> tuple[int, ...]:
        info = self.path.stat()
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)

    def users(self) -> Mapping[bytes, str]:
        """The users by token digest, as the file says now (the same mapping object until the file changes).

        Raises:
            TokenFileUnusable: The file is gone, unreadable, open to other users or malformed (logged once).
        """
        with self._lock:
            try:
                stamp = self._stamp_now()
                if stamp != self._stamp or self._users is None:
                    self._users, self._stamp = None, stamp
                    self._users = read_token_file(self.path)
                    self._logged = ""
            except (OSError, SessionRAGError) as exc:
                self._users = None
                if self._logged != str(exc):  # one line per distinct reason, not one per request
                    self._logged = str(exc)
                    _LOGGER.error("Refusing every request (503) until the token file is fixed: %s", exc)  # noqa: TRY400 - no traceback
                raise TokenFileUnusable from None
            return self._users


@dataclass(frozen=True)
class Authenticator:
    """Turns a request's headers into its user: a bearer token, or the trusted proxy's header."""

    tokens: dict[bytes, str] = field(default_factory=dict, repr=False)
    """Users by the SHA-256 digest of their token, fixed (without ``token_file``)."""
    trusted_header: str | None = None
    """The header a trusted proxy names the user in (instead of tokens)."""
    token_file: TokenFile | None = field(default=None, repr=False)
    """The token file, read again when it changes (instead of ``tokens``)."""

    def __post_init__(self) -> None:
        """Refuse a malformed header name, and an authenticator that knows no user."""
        if self.trusted_header is not None and not _HEADER.fullmatch(self.trusted_header):
            msg = f"--trusted-user-header must be a header name (letters, digits, '-'), got {self.trusted_header!r}."
            raise InvalidArgumentError(msg)
        if not self.tokens and self.trusted_header is None and self.token_file is None:
            msg = "No users: give a token file or a trusted user header."
            raise InvalidArgumentError(msg)

    @classmethod
    def from_token_file(cls, path: str | Path) -> Authenticator:
        """The users of a token file (its format: the module docstring), read again when it changes.

        A bad file is refused as :func:`read_token_file` refuses it.
        """
        return cls(token_file=TokenFile(path))

    def users(self) -> Mapping[bytes, str]:
        """The users by the SHA-256 digest of their token, now (the token file's, read again when it changed).

        Raises:
            TokenFileUnusable: The token file changed into one that cannot be used.
        """
        return self.token_file.users() if self.token_file is not None else self.tokens

    @classmethod
    def for_one_user(cls, token: str, user: str) -> Authenticator:
        """One user and their token (``session-rag ui``: a random token made at start, in the address it prints).

        Raises:
            InvalidArgumentError: A token shorter than 16 characters, or an unfit user id.
        """
        if not _TOKEN.fullmatch(token) or len(token) < MIN_TOKEN_CHARS:
            msg = f"The token must be at least {MIN_TOKEN_CHARS} characters of A-Z a-z 0-9 . _ ~ + / = -."
            raise InvalidArgumentError(msg)
        unfit = user_id_problem(user)
        if unfit is not None:
            msg = f"Unfit user id {user!r}: {unfit}."
            raise InvalidArgumentError(msg)
        return cls(tokens={digest_of(token): user})

    @classmethod
    def from_settings(cls, token_file: str | None, trusted_header: str | None) -> Authenticator:
        """The authenticator of ``--token-file`` or ``--trusted-user-header``."""
        return cls(token_file=TokenFile(token_file) if token_file else None, trusted_header=trusted_header)

    def user_of_pairs(self, pairs: Iterable[tuple[str, str]]) -> str:
        """The user of a request given its headers as sent (name, value pairs, in order, repeats kept).

        A credential header sent more than once is refused: a proxy that appends its copy after a client's
        would otherwise let whichever copy a framework keeps decide the user.

        Raises:
            Unauthenticated: A repeated credential header, no credentials, or credentials naming no known user.
        """
        credential = (self.trusted_header or "authorization").lower()
        headers: dict[str, str] = {}
        copies = 0
        for name, value in pairs:
            key = name.lower()
            copies += key == credential
            headers[key] = value
        if copies > 1:
            shown = self.trusted_header or "Authorization"
            msg = f"The {shown} header was sent {copies} times: send it once (the proxy must replace a client's copy)."
            raise Unauthenticated(msg)
        return self.user_of(headers)

    def user_of(self, headers: dict[str, str]) -> str:
        """The user of a request (``headers`` keyed in lower case).

        Raises:
            Unauthenticated: No credentials, or credentials naming no known user.
            TokenFileUnusable: The token file changed into one that cannot be used.
        """
        if self.trusted_header is not None:
            user = headers.get(self.trusted_header.lower(), "").strip()
            if not user or user_id_problem(user) is not None:
                msg = f"No user: the {self.trusted_header} header (set by the proxy in front) is missing or unfit."
                raise Unauthenticated(msg)
            return user
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            msg = "No API key: send the header `Authorization: Bearer TOKEN` (the client's api_key)."
            raise Unauthenticated(msg)
        known = self.users().get(digest_of(token))
        if known is None:
            msg = "Incorrect API key: this token is not in the server's token file."
            raise Unauthenticated(msg)
        return known
