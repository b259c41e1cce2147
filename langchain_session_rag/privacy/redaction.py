"""Secrets redacted before storage: find keys, tokens, passwords, card numbers and IBANs in a message and replace each.

``redact_secrets`` replaces every secret found in a text by a typed placeholder, ``[secret:KIND]``, so that a
pasted key never reaches the store, the embedding call, the cache, a log or an export. Detection uses the plugins
of `detect-secrets <https://github.com/Yelp/detect-secrets>`_ (cloud keys, private keys, tokens, passwords in URLs
and code, high-entropy strings) with rules tuned for chat text, plus card numbers (Luhn check, issuer prefix and
length) and IBANs (ISO 13616 country length, mod-97 check).

Usage:
    .. code-block:: python

        from langchain_session_rag.privacy import redact_secrets

        result = redact_secrets("my key is AKIAIOSFODNN7EXAMPLE, why does boto fail?")
        result.text  # 'my key is [secret:aws-access-key], why does boto fail?'
        result.secrets[0].kind  # 'aws-access-key'

Precision and recall, measured on generated chat messages with look-alikes (git SHAs, UUIDs, base64 images,
checksums, order numbers), are measured by ``benchmarks/redaction.py``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.privacy._folding import fold, original_span
from langchain_session_rag.privacy._heuristics import (
    find_code_credentials,
    find_high_entropy,
    find_passwords,
)
from langchain_session_rag.privacy._numbers import find_cards, find_ibans
from langchain_session_rag.privacy._tokens import find_private_keys, find_split_tokens, find_tokens

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

SECRET_KINDS: frozenset[str] = frozenset(
    {
        "anthropic-key",
        "aws-access-key",
        "aws-secret-key",
        "azure-storage-key",
        "card-number",
        "credential",
        "discord-token",
        "github-token",
        "gitlab-token",
        "google-api-key",
        "high-entropy",
        "iban",
        "jwt",
        "mailchimp-key",
        "npm-token",
        "openai-key",
        "password",
        "private-key",
        "pypi-token",
        "sendgrid-key",
        "slack-token",
        "slack-webhook",
        "square-token",
        "stripe-key",
        "telegram-token",
        "twilio-key",
    }
)
"""Every kind of secret :func:`find_secrets` reports; the placeholder of a kind is ``[secret:KIND]``."""

PLACEHOLDER = re.compile(r"\[secret:[a-z0-9-]+\]")
# When two findings overlap, the more specific one wins (lower rank), then the longer.
_RANK = {"private-key": 0, "password": 2, "credential": 3, "card-number": 2, "iban": 2, "high-entropy": 4}
_AWS_CONTEXT = re.compile(r"aws|secret[ _-]?access[ _-]?key|AKIA|ASIA", re.IGNORECASE)
_AWS_SECRET_LENGTH = 40
_ID_SEPARATORS = re.compile(r"[-_.:/]")


@dataclass(frozen=True)
class FoundSecret:
    """One secret found in a text.

    Attributes:
        kind: What it is, one of :data:`SECRET_KINDS` (``"aws-access-key"``, ``"password"``...).
        start: Its first character's offset in the original text.
        end: The offset just past its last character (``text[start:end] == value``).
        value: The secret itself.
    """

    kind: str
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class RedactedText:
    """A text with its secrets replaced by ``[secret:KIND]`` placeholders.

    Attributes:
        text: The redacted text.
        secrets: The secrets replaced, in order, with their offsets in the original text.
    """

    text: str
    secrets: tuple[FoundSecret, ...]

    @property
    def redacted(self) -> bool:
        """Whether any secret was found (and replaced)."""
        return bool(self.secrets)


def find_secrets(text: str) -> list[FoundSecret]:
    """Find the secrets in a text.

    Args:
        text: The text to scan (a chat message, a document chunk).

    Returns:
        The secrets found, not overlapping, sorted by their start offset. Placeholders left by an earlier
        redaction are never reported.

    Raises:
        InvalidArgumentError: ``text`` is not a ``str`` (it is also a ``TypeError``).
    """
    if not isinstance(text, str):
        msg = f"text must be a str, got {type(text).__name__}: {text!r:.80}; pass the message's text content"
        raise InvalidArgumentError(msg)
    original = text
    text, spans = fold(original)  # what a reader sees: invisible characters dropped, look-alikes folded
    candidates = [
        *find_private_keys(text),
        *find_tokens(text),
        *find_split_tokens(text),
        *find_cards(text),
        *find_ibans(text),
        *find_passwords(text),
        *find_code_credentials(text),
        *find_high_entropy(text),
    ]
    if not candidates:
        return []
    placeholders = [match.span() for match in PLACEHOLDER.finditer(text)]
    taken: list[tuple[int, int]] = []  # the chosen spans, sorted and disjoint (bisected: linear in long texts)
    chosen: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(candidates, key=lambda c: (_RANK.get(c[2], 1), c[0] - c[1], c[0])):
        if _overlaps(placeholders, start, end) or _overlaps(taken, start, end):
            continue
        bisect.insort(taken, (start, end))
        # 40 random characters with AWS mentioned nearby: an AWS secret access key
        aws = kind == "high-entropy" and end - start == _AWS_SECRET_LENGTH
        aws = aws and _AWS_CONTEXT.search(text, max(0, start - 200), min(len(text), end + 200)) is not None
        chosen.append((start, end, "aws-secret-key" if aws else kind))
    found: list[FoundSecret] = []
    for start, end, kind in sorted(chosen):
        first, last = original_span(spans, start, end)
        first = max(first, found[-1].end) if found else first  # two findings in one folded character: no overlap
        found.append(FoundSecret(kind, first, last, original[first:last]))
    return found


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans`` (sorted, disjoint)."""
    at = bisect.bisect_left(spans, (start, start))
    return (at > 0 and spans[at - 1][1] > start) or (at < len(spans) and spans[at][0] < end)


def redact_nested(value: Any) -> Any:
    """``value`` with :func:`redact_secrets` applied to every string in it (dicts' values, lists, tuples)."""
    if isinstance(value, str):
        return redact_secrets(value).text
    if isinstance(value, dict):
        return {k: redact_nested(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_nested(v) for v in value)
    return value


MessageT = TypeVar("MessageT", bound="BaseMessage")


def redact_message(message: MessageT) -> MessageT:
    """``message`` with every secret in its content and in its tool calls' arguments replaced (itself if none).

    The graphs apply it to their input and to the answers they keep (the model's, an agent's messages), so a
    secret reaches no checkpoint. The message id, the tool call ids and names are kept (a placeholder in a tool
    call id would part a tool result from its call).
    """
    update: dict[str, Any] = {}
    content = _redacted_content(message.content)
    if content is not None:
        update["content"] = content
    calls_of = {"tool_calls": getattr(message, "tool_calls", None)}  # an AI message's
    calls_of["invalid_tool_calls"] = getattr(message, "invalid_tool_calls", None)
    for field, calls in calls_of.items():
        if calls:
            redacted = [{**call, "args": redact_nested(call.get("args"))} for call in calls]
            if redacted != calls:
                update[field] = redacted
    return message.model_copy(update=update) if update else message


def _redacted_content(content: Any) -> Any:
    """A message's content with its secrets replaced; ``None`` when nothing was found.

    Its text, or every string inside its parts (a tool result's nested text, an image URL with a password).
    """
    if isinstance(content, str):
        found = redact_secrets(content)
        return found.text if found.redacted else None
    if not isinstance(content, list):
        return None
    redacted = redact_nested(content)
    return redacted if redacted != content else None


def redact_secrets(text: str) -> RedactedText:
    """Replace every secret in a text by a typed placeholder, ``[secret:KIND]``.

    Redacting a redacted text changes nothing: placeholders are never detected.

    Args:
        text: The text to redact.

    Returns:
        The redacted text and the secrets replaced (offsets in ``text``).

    Raises:
        InvalidArgumentError: ``text`` is not a ``str`` (it is also a ``TypeError``).

    Example:
        .. code-block:: python

            redact_secrets("db at postgres://app:s3cr3t-pw@db.internal:5432/app").text
            # 'db at postgres://app:[secret:password]@db.internal:5432/app'
    """
    secrets = find_secrets(text)
    return RedactedText(_replaced(text, secrets) if secrets else text, tuple(secrets))


def _replaced(text: str, secrets: list[FoundSecret]) -> str:
    """``text`` with each of ``secrets`` (sorted, not overlapping) replaced by its placeholder."""
    parts: list[str] = []
    position = 0
    for secret in secrets:
        parts.extend((text[position : secret.start], f"[secret:{secret.kind}]"))
        position = secret.end
    parts.append(text[position:])
    return "".join(parts)


def refuse_secret(name: str, value: str) -> str:
    """Refuse an identifier that holds a secret of a known format (a session id, a note key): it is never redacted.

    An identifier is matched exactly (forgetting a session by its id, merging a session's turns, replacing a note
    by its key): a placeholder in its place would merge different ids and make the stored one unreachable, so a
    memory that redacts refuses it instead. The identifier is scanned as it is and with its separators
    (``-_.:/``) read as spaces (``deploy-AKIA...``). A random-looking part alone (``high-entropy``) is not
    refused: random ids (a UUID, ``secrets.token_urlsafe()``) are the norm. The error shows the identifier
    redacted, never the secret.

    Args:
        name: What the identifier is (``"session_id"``, ``"note key"``), for the message.
        value: The identifier.

    Returns:
        ``value``, when it holds no secret of a known format.

    Raises:
        InvalidArgumentError: ``value`` holds one; nothing was read or written.
    """
    for candidate in (value, _ID_SEPARATORS.sub(" ", value)):  # one character for one: the offsets hold
        found = [secret for secret in find_secrets(candidate) if secret.kind != "high-entropy"]
        if found:
            kinds = ", ".join(sorted({secret.kind for secret in found}))
            shown = redact_secrets(_replaced(value, found)).text
            msg = (
                f"{name} holds a secret ({kinds}): {shown!r:.200}. An id is not redacted (forgetting and merging "
                f"by id need it exactly): choose a {name} without the secret. Nothing was stored."
            )
            raise InvalidArgumentError(msg)
    return value
