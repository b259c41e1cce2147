"""Secrets with a known shape, found with detect-secrets' plugins: cloud keys, tokens, JWTs, private keys, URLs.

The patterns are the ``denylist`` regular expressions of detect-secrets' public plugin classes (imported on first
use: importing detect-secrets costs about 0.2 s), run with ``finditer`` to get each secret's span (the plugins'
``analyze_line`` yields values without positions). A few formats the plugins of detect-secrets 1.5 miss are added
here from their public specifications (GitHub fine-grained tokens, OpenAI project keys, Anthropic and Google API
keys, Stripe test keys, encrypted PKCS#8 private keys). A private key is replaced whole, from ``-----BEGIN`` to
its ``-----END`` line (or, when the paste was cut, to the end of its base64 body).

A key of a fixed shape split into even pieces by one separator used throughout (a space, a tab, a line break, or a
hyphen when the key has none: ``ghp_A1b2C3 d4E5f6G7h8 ...``, ``AKIA-IOSF-ODNN-7EXA-MPLE``) is found when its pieces,
joined, have exactly that shape, with a digit in them (and both cases for a GitHub token): a classic GitHub token
(a ``ghp_``-like prefix and 36 letters and digits) or an AWS access key id (``AKIA``-like and 16 upper-case letters
and digits).
"""

from __future__ import annotations

import functools
import re
from typing import Any

Span = tuple[int, int, str]

# Formats from public specifications that detect-secrets 1.5 does not cover.
_OWN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"github_pat_[A-Za-z0-9_]{40,}"), "github-token"),
    (re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"), "openai-key"),
    (re.compile(r"sk-ant-(?:api|admin|oat)\d\d-[A-Za-z0-9_-]{80,}"), "anthropic-key"),
    (re.compile(r"AIza[0-9A-Za-z_-]{35}"), "google-api-key"),
    (re.compile(r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{24,}"), "stripe-key"),
)
# Kinds whose plugin pattern stops short of the token's end (Stripe's 24 characters, the JWT's lazy signature).
_EXTEND = frozenset({"stripe-key", "jwt", "slack-token", "gitlab-token", "openai-key"})
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# Cheap substrings: a pattern is run only when its trigger is in the text (lower-cased where marked).
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "aws-access-key": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
    "aws-secret-key": ("aws", "AWS", "Aws"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("gl", "GR1348941"),
    "slack-token": ("xox", "XOX"),
    "slack-webhook": ("hooks.slack.com",),
    "stripe-key": ("k_live_", "k_test_"),
    "openai-key": ("sk-",),
    "anthropic-key": ("sk-ant-",),
    "google-api-key": ("AIza",),
    "jwt": ("eyJ",),
    "sendgrid-key": ("SG.",),
    "twilio-key": ("AC", "SK"),
    "mailchimp-key": ("-us",),
    "discord-token": (".",),
    "telegram-token": (":",),
    "pypi-token": ("pypi-",),
    "npm-token": ("_authToken",),
    "square-token": ("sq0csp-",),
    "azure-storage-key": ("AccountKey=",),
    "password": ("://",),
}
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_PEM_BODY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: .*|=[A-Za-z0-9+/]{4})?[ \t]*\r?$")
_PUTTY_END = re.compile(r"Private-MAC: [0-9a-fA-F]+")
_PEM_WINDOW = 20_000


def _split_shape(prefix: str, chars: str, length: int, kind: str, *, mixed: bool) -> tuple[Any, ...]:
    """A fixed shape found split into pieces: (prefix, its pieces, body length, kind, mixed case required)."""
    pieces = re.compile(rf"{chars}*(?P<sep>[ \t\n-]){chars}+(?:(?P=sep){chars}+)*")
    return re.compile(prefix), pieces, length, kind, mixed


_SPLIT_SHAPES = (
    _split_shape(r"(?<![A-Za-z0-9_])gh[pousr]_", "[A-Za-z0-9]", 36, "github-token", mixed=True),
    _split_shape(
        r"(?<![A-Za-z0-9_])(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)", "[A-Z0-9]", 16, "aws-access-key", mixed=False
    ),
)
_SPLIT_MIN_PIECE = 4
_NPM = re.compile(
    r"(?:^|(?<=[\s\"'=]))//[^\s]{1,256}?/:_authToken=\s*((npm_[A-Za-z0-9]+)|([A-Fa-f0-9-]{36}))", re.MULTILINE
)


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], int, str], ...]:
    """The plugins' regular expressions (imported on first use), then the ones added here.

    Each is ``(pattern, group holding the secret, kind)``; a plugin's ``denylist`` is indexed as in detect-secrets 1.5.
    """
    from detect_secrets.plugins.aws import AWSKeyDetector  # noqa: PLC0415  # detect-secrets imports in ~0.2 s
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector  # noqa: PLC0415
    from detect_secrets.plugins.basic_auth import BasicAuthDetector  # noqa: PLC0415
    from detect_secrets.plugins.discord import DiscordBotTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.github_token import GitHubTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.mailchimp import MailchimpDetector  # noqa: PLC0415
    from detect_secrets.plugins.openai import OpenAIDetector  # noqa: PLC0415
    from detect_secrets.plugins.pypi_token import PypiTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.sendgrid import SendGridDetector  # noqa: PLC0415
    from detect_secrets.plugins.slack import SlackDetector  # noqa: PLC0415
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector  # noqa: PLC0415
    from detect_secrets.plugins.stripe import StripeDetector  # noqa: PLC0415
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector  # noqa: PLC0415
    from detect_secrets.plugins.twilio import TwilioKeyDetector  # noqa: PLC0415

    aws, slack, twilio, pypi = (
        list(plugin.denylist) for plugin in (AWSKeyDetector, SlackDetector, TwilioKeyDetector, PypiTokenDetector)
    )
    compiled: list[tuple[re.Pattern[str], int, str]] = [
        (aws[0], 0, "aws-access-key"),
        (aws[1], 1, "aws-secret-key"),  # the 40 characters, quoted, after "aws ... key"
        (slack[0], 0, "slack-token"),
        (slack[1], 0, "slack-webhook"),
        *((pattern, 0, "twilio-key") for pattern in twilio),
        *((pattern, 0, "pypi-token") for pattern in pypi),
        *((pattern, 0, "gitlab-token") for pattern in GitLabTokenDetector.denylist),
        (BasicAuthDetector.denylist[0], 1, "password"),  # the password between "user:" and "@"
        (_NPM, 1, "npm-token"),  # the token after _authToken= (the plugin's pattern, its ``.+`` bounded)
    ]
    for plugin, kind in (
        (GitHubTokenDetector, "github-token"),
        (StripeDetector, "stripe-key"),
        (OpenAIDetector, "openai-key"),
        (JwtTokenDetector, "jwt"),
        (SendGridDetector, "sendgrid-key"),
        (MailchimpDetector, "mailchimp-key"),
        (DiscordBotTokenDetector, "discord-token"),
        (TelegramBotTokenDetector, "telegram-token"),
        (SquareOAuthDetector, "square-token"),
        (AzureStorageKeyDetector, "azure-storage-key"),
    ):
        compiled.extend((pattern, 0, kind) for pattern in plugin.denylist)
    compiled.extend((pattern, 0, kind) for pattern, kind in _OWN_PATTERNS)
    # A token starts where a run of token characters starts: without this, "sk-sk-sk-..." or "eyJeyJ..." would
    # make each repetition a start that scans the rest of the run (quadratic time in a long paste).
    return tuple((_at_run_start(pattern) if group == 0 else pattern, group, kind) for pattern, group, kind in compiled)


def _at_run_start(pattern: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_-])(?:{pattern.pattern})", pattern.flags)


@functools.cache
def _jwt_valid() -> Any:
    from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: PLC0415  # detect-secrets imports in ~0.2 s

    return JwtTokenDetector.is_formally_valid


@functools.cache
def _private_key_headers() -> tuple[re.Pattern[str], ...]:
    from detect_secrets.plugins.private_key import PrivateKeyDetector  # noqa: PLC0415

    return tuple(PrivateKeyDetector.denylist)


def _triggered(text: str, kind: str) -> bool:
    return any(trigger in text for trigger in _TRIGGERS[kind])


def _token_end(text: str, end: int) -> int:
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return end


def find_tokens(text: str) -> list[Span]:
    """Keys and tokens of a known format, and passwords in URLs, as ``(start, end, kind)``."""
    if not any(_triggered(text, kind) for kind in _TRIGGERS):
        return []
    found = []
    for pattern, group, kind in _patterns():
        if not _triggered(text, kind):
            continue
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start < 0 or start == end:
                continue
            if kind in _EXTEND:
                end = _token_end(text, end)
            if group == 0 and (
                (start > 0 and text[start - 1] in _WORD_CHARS) or (end < len(text) and text[end] in _WORD_CHARS)
            ):
                continue  # part of a longer word or identifier
            if kind == "jwt":
                end = start + len(text[start:end].rstrip(".="))
                if text.count(".", start, end) < 2 or not _jwt_valid()(text[start:end]):  # noqa: PLR2004
                    continue
            found.append((start, end, kind))
    return found


def find_split_tokens(text: str) -> list[Span]:
    """Keys of a fixed shape split into even pieces by one separator, as ``(start, end, kind)`` (module docstring)."""
    if not (_triggered(text, "github-token") or _triggered(text, "aws-access-key")):
        return []
    found = []
    for prefix, pieces, length, kind, mixed in _SPLIT_SHAPES:
        for match in prefix.finditer(text):
            run = pieces.match(text, match.end(), match.end() + 2 * length)  # bounded: no rescan of a long run
            if run is None:
                continue
            separator = run.group("sep")
            head = text[match.start() : run.end()].split(separator)
            taken = _pieces_of_length(head, len(match.group()) + length)
            if taken is None:
                continue
            body = "".join(taken)[len(match.group()) :]
            if not any(char.isdigit() for char in body) or (mixed and (body.islower() or body.isupper())):
                continue
            found.append((match.start(), match.start() + len(separator.join(taken)), kind))
    return found


def _pieces_of_length(pieces: list[str], length: int) -> list[str] | None:
    """The first pieces, when they are even (all as long as the first, the last no longer) and join to ``length``."""
    size, total = len(pieces[0]), 0
    for count, piece in enumerate(pieces, 1):
        total += len(piece)
        last = total >= length
        if size < _SPLIT_MIN_PIECE or not 0 < len(piece) <= size or (not last and len(piece) != size):
            return None
        if last:
            return pieces[:count] if total == length and count > 1 else None
    return None


def _block_end(text: str, start: int) -> int:
    """Where a private key block that starts at ``start`` ends: its END line, or the end of its body."""
    if text.startswith("PuTTY", start):
        mac = _PUTTY_END.search(text, start, start + _PEM_WINDOW)
        return mac.end() if mac else _body_end(text, start)
    header = _PEM_BEGIN.match(text, start)
    if header is None:  # an SSH2 block: ---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----
        closing = text.find("END SSH2 ENCRYPTED PRIVATE KEY", start, start + _PEM_WINDOW)
        line_end = text.find("\n", closing) if closing >= 0 else -1
        return (len(text) if line_end < 0 else line_end) if closing >= 0 else _body_end(text, start)
    label = f"-----END {header.group(1)}PRIVATE KEY{header.group(2) or ''}-----"
    closing = text.find(label, header.end(), header.end() + _PEM_WINDOW)
    return closing + len(label) if closing >= 0 else _body_end(text, header.end())


def _body_end(text: str, position: int) -> int:
    """The end of the base64 body (and PEM headers) that follows a BEGIN line whose END line is missing."""
    line_end = text.find("\n", position)
    end = len(text) if line_end < 0 else line_end
    while line_end >= 0:
        next_end = text.find("\n", line_end + 1)
        line = text[line_end + 1 : next_end if next_end >= 0 else len(text)]
        if not line.strip() or not _PEM_BODY_LINE.fullmatch(line):
            break
        end = next_end if next_end >= 0 else len(text)
        line_end = next_end
    return end


def find_private_keys(text: str) -> list[Span]:
    """Private key blocks (PEM, OpenSSH, PGP, SSH2, PuTTY), each whole, as ``(start, end, "private-key")``."""
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File" not in text:
        return []
    starts = {match.start() for match in _PEM_BEGIN.finditer(text)}
    for header in _private_key_headers():
        for match in header.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            prefix = text[line_start : match.start()]
            indent = len(prefix) - len(prefix.lstrip(" \t"))
            starts.add(line_start + indent if prefix.strip("- \t") == "" else match.start())
    found: list[Span] = []
    for start in sorted(starts):
        if found and start < found[-1][1]:
            continue
        found.append((start, _block_end(text, start), "private-key"))
    return found
