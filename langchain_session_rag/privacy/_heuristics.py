"""Secrets without a fixed format: passwords given in words or code, and high-entropy strings.

Chat text is full of strings that look random and are not secrets (git SHAs, UUIDs, checksums, base64 images,
identifiers, URLs), so these rules ask for more than entropy. A password needs a password keyword and an
assignment ("password: x", "my password is x", ``password = "x"``); after a verb ("is", "was") the value must not
be a plain word. A PIN is four to twelve digits after "PIN" (or "PIN code", "PIN number") and ``is``, ``was``
or ``:`` ("my PIN is 4821"; not ``pin = 1234``: code). A high-entropy string is a run of base64 characters, outside
a URL (except the value of a credential-like query parameter) and outside a data URI, that is not a UUID and not
made of words and numbers;
without a secret keyword shortly before it (``key``, ``token``, ``secret``...) it must be long (``BARE_MIN_LENGTH``),
mix upper case, lower case and digits, and pass an entropy floor; a hexadecimal string (a hash, a SHA) counts only
after a secret keyword. The entropy is detect-secrets' Shannon entropy of its ``Base64HighEntropyString`` and
``HexHighEntropyString`` plugins. The thresholds were chosen on the ``tune`` split of ``benchmarks/secrets_data.py``.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import math
import re
from collections.abc import Callable

Span = tuple[int, int, str]

BARE_MIN_LENGTH = 24  # a high-entropy string with no secret keyword before it
CONTEXT_MIN_LENGTH = 16  # one after a secret keyword
HEX_MIN_LENGTH = 20  # a hexadecimal one (after a secret keyword only)
BLOB_MAX_LENGTH = 256  # longer runs with no keyword are data (an encoded file), not a credential
ENTROPY_MARGIN = 0.8  # the floor is log2(length) - margin, capped at detect-secrets' 4.5
CONTEXT_ENTROPY_MARGIN = 1.2
PLAIN_MIN_LENGTH = 5  # a password of letters only ("password: swordfish") must be at least this long
WORD_SHARE = 0.6  # a string with this share of its characters in words of 4+ letters is an identifier
HEX_ENTROPY_FLOOR = 3.0  # detect-secrets' default for hexadecimal strings

_PASSWORD_WORDS = r"pass(?:word|wd|phrase|code)|pwd|pw|contrase[ñn]a|passwort|mot\s+de\s+passe"  # noqa: S105  # keywords, not a password
_NATURAL_PASSWORD = re.compile(
    rf"\b(?P<kw>{_PASSWORD_WORDS})s?\b"
    r"(?:\s+(?:for|to|of|on|at)(?:\s+(?!is\b|was\b)[\w.@'-]+){1,4}?)?"
    r"\s*(?P<sep>:=|=>|[:=]|\bis\s+now\b|\bis\b|\bwas\b|\bchanged\s+to\b|\bset\s+to\b|\bnow\b)[ \t]*"
    r"(?P<value>\"[^\"\n]{3,100}\"|'[^'\n]{3,100}'|`[^`\n]{3,100}`|[^\s\"'`]{3,100})",
    re.IGNORECASE,
)
_CHANGED_TO = re.compile(
    r"\b(?:changed|set|reset|updated|switched|moved)\s+(?:(?:the|my|our|his|her|their)\s+)?(?:[\w-]+\s+){0,2}?"
    rf"(?:{_PASSWORD_WORDS})\s+(?P<sep>to)\s+"
    r"(?P<value>\"[^\"\n]{3,100}\"|'[^'\n]{3,100}'|`[^`\n]{3,100}`|[^\s\"'`]{3,100})",
    re.IGNORECASE,
)
_PIN = re.compile(
    r"\bpin(?:\s+(?:code|number))?\s*(?::|\bis\b|\bwas\b|\bis\s+now\b|\bchanged\s+to\b|\bset\s+to\b)\s*"
    r"(?P<value>\d{4,12})(?![\w.,:/-]*\w)",
    re.IGNORECASE | re.ASCII,
)
_CODE_VALUE = re.compile(r"[$%]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:[\[(].*)?$|[A-Za-z_]\w*[\[(]")
_VERBAL = re.compile(r"[a-z\s]+", re.IGNORECASE)
_STOPWORDS = frozenset(
    "the a an my your our their his her its this that it not too very still also same wrong incorrect correct "
    "invalid valid expired required needed missing changed reset updated strong weak long short saved stored hidden "
    "encrypted hashed different something nothing what which where when how why there here set empty blank none "
    "null true false yes no ok okay fine good bad easy hard simple secure insecure in on at for to of and or but "
    "with without from by be been being case-sensitive protected managed rotated disabled enabled locked unknown "
    "forgotten lost new old default generated random temporary optional mandatory see check ask use enter type "
    "provided below above attached sent redacted min max minimum maximum characters chars length none n/a tbd "
    "unchanged please here's is".split()
)
_PLACEHOLDER_VALUE = re.compile(r"^(?:\[secret:[a-z0-9-]+\]|<[^>]*>?|\$\{.*|\{\{.*|%\(.*|[*•xX.#_-]+|\.\.\..*)$")
_TRAILING = ".,;:?!)]}"
_SYMBOLS = re.compile(r"[^A-Za-z\s]")

_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s<>\"'`]+|\bwww\.[^\s<>\"'`]+")  # schemes are short
_DATA_URI = re.compile(
    r"data:[\w/+.-]*(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]{16,})*", re.IGNORECASE
)
_SECRET_PARAM = re.compile(
    r"[?&#;](?:[\w.-]*(?:token|key|secret|sig|signature|password|passwd|pwd|auth|credential|session)[\w.-]*)=$",
    re.IGNORECASE,
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SECRET_CONTEXT = re.compile(
    r"key|token|secret|passw|pwd|credential|creds|bearer|auth|private|signing|cookie|session|otp|seed|api",
    re.IGNORECASE,
)
# A string right after one of these words (within the last two words) is an identifier or a digest, not a secret.
_NOT_SECRET_WORDS = frozenset(
    "commit sha sha1 sha256 sha512 hash checksum digest md5 etag revision rev uuid guid id ids build image container "
    "fingerprint version address wallet request trace span order ref object cache idempotency integrity nonce "
    "playlist video primary foreign partition row document doc file photo".split()
)
# Prefixes of public object ids (Stripe's charges, customers...) and of digests (subresource integrity).
_NOT_SECRET_PREFIX = re.compile(
    r"(?:ch|cus|pi|pm|in|ii|sub|si|evt|req|txn|acct|price|prod|seti|src|py|re|po|ba|card|cs|prc|plink|tr|tu|file|"
    r"link|txi|ich|iauth|ipi)_|(?:sha\d+|md5|blake2b?|sha3)[-:_]"
)
_BASE58_ADDRESS = re.compile(r"[13][1-9A-HJ-NP-Za-km-z]{24,34}")
_FILLER = frozenset("is was are were the a an to of for my our your its this that be".split())
_LAST_WORDS = re.compile(r"[A-Za-z0-9]+")
_WORDISH = re.compile(r"[a-z]+(?:[A-Z][a-z]+)*|(?:[A-Z][a-z]+)+|[A-Z]+s?|[A-Z]+[a-z]+|\d{1,8}|[a-z]+\d{1,4}|v\d+")
_CAMEL_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SSH_PUBLIC_KEY = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+$")
_HEX = frozenset("0123456789abcdefABCDEF")


@functools.cache
def _entropy() -> tuple[Callable[[str], float], Callable[[str], float]]:
    from detect_secrets.plugins.high_entropy_strings import (  # noqa: PLC0415  # detect-secrets imports in ~0.2 s
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    return Base64HighEntropyString().calculate_shannon_entropy, HexHighEntropyString().calculate_shannon_entropy


def _password_value(match: re.Match[str]) -> tuple[int, int] | None:
    start, end = match.span("value")
    value = match.group("value")
    quoted = value[0] in "\"'`"
    if quoted:
        start, end = start + 1, end - 1
    else:
        stripped = value.rstrip(_TRAILING)
        if value.endswith("!") and _SYMBOLS.search(value[:-1]):
            stripped = value.rstrip(_TRAILING.replace("!", ""))
        end = start + len(stripped)
    value = match.string[start:end]
    if len(value) < 3 or value.lower() in _STOPWORDS or _PLACEHOLDER_VALUE.match(value):  # noqa: PLR2004
        return None
    if not quoted and _CODE_VALUE.match(value):
        return None  # password = os.environ["DB_PASSWORD"]: a reference to the password, not the password
    verbal = _VERBAL.fullmatch(match.group("sep")) is not None
    plain = value.isalpha() and (value.islower() or value.istitle())
    if verbal and not quoted and plain:
        return None  # "the password is complicated": a word after a verb is not taken for the password
    if plain and not quoted and len(value) < PLAIN_MIN_LENGTH:
        return None
    return start, end


def find_passwords(text: str) -> list[Span]:
    """Passwords given after a password keyword, in words or in code, as ``(start, end, kind)``."""
    lowered = text.lower()
    if not any(word in lowered for word in ("pass", "pwd", "pw", "contras", "mot de", "pin")):
        return []
    found = [(*match.span("value"), "password") for match in _PIN.finditer(text)]
    for match in (*_NATURAL_PASSWORD.finditer(text), *_CHANGED_TO.finditer(text)):
        span = _password_value(match)
        if span is not None:
            found.append((*span, "password"))
    return found


def find_code_credentials(text: str) -> list[Span]:
    """Quoted values assigned to a secret-sounding name in code (detect-secrets' ``KeywordDetector`` patterns)."""
    if not any(quote in text for quote in "\"'`"):
        return []
    from detect_secrets.plugins import keyword  # noqa: PLC0415  # detect-secrets imports in ~0.2 s

    found = []
    for pattern, group in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        for match in pattern.finditer(text):
            start, end = match.span(group)
            value = text[start:end]
            if len(value) < 4 or _PLACEHOLDER_VALUE.match(value) or value.isupper() or value.lower() in _STOPWORDS:  # noqa: PLR2004
                continue
            name = match.group(0).lower()
            kind = "password" if re.search(_PASSWORD_WORDS, name) else "credential"
            found.append((start, end, kind))
    return found


def _excluded_spans(text: str) -> list[tuple[int, int]]:
    spans = [match.span() for match in _DATA_URI.finditer(text)]
    spans.extend(match.span() for match in _UUID.finditer(text))
    return spans


def _is_wordish(token: str) -> bool:
    """Whether a string is made of words and numbers (an identifier, a path), not random characters."""
    parts = [part for part in re.split(r"[_\-/+.=]", token) if part]
    if all(_WORDISH.fullmatch(part) for part in parts):
        return True
    in_words = sum(len(run) for run in _CAMEL_RUN.findall(token) if len(run) >= 4 and run[1:].islower())  # noqa: PLR2004
    return in_words >= WORD_SHARE * len(token)


def _context(text: str, start: int) -> bool | None:
    """Whether a secret keyword comes shortly before ``start`` (``None``: an identifier or digest word does)."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 48) : start]
    words = [word.lower() for word in _LAST_WORDS.findall(before)]
    if any(word in _NOT_SECRET_WORDS for word in [word for word in words if word not in _FILLER][-2:]):
        return None
    return _SECRET_CONTEXT.search(before) is not None


def _printable_base64(token: str) -> bool:
    """Whether a base64 string decodes to readable text (encoded data, not a random key)."""
    try:
        decoded = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None
        )
        return decoded.decode("utf-8").isprintable()
    except (binascii.Error, ValueError):
        return False


def _entropy_floor(length: int, margin: float) -> float:
    return min(4.5, math.log2(length) - margin)


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """The span of ``spans`` (sorted, not nested) that overlaps ``[start, end)``, if any."""
    index = bisect.bisect_right(spans, (end, -1)) - 1
    while index >= 0 and spans[index][1] > start:
        if spans[index][0] < end:
            return spans[index]
        index -= 1
    return None


def _looks_random(token: str, raw: str, *, context: bool) -> bool:
    """Whether a base64-alphabet string (``raw``, with its padding) passes the entropy and shape rules."""
    base64_entropy, hex_entropy = _entropy()
    if all(char in _HEX for char in token):  # a digest or a SHA unless a secret keyword announced it
        return context and len(token) >= HEX_MIN_LENGTH and hex_entropy(token) >= HEX_ENTROPY_FLOOR
    if not any(char.isdigit() for char in token) or _is_wordish(token):
        return False
    if context:
        return len(token) >= CONTEXT_MIN_LENGTH and base64_entropy(token) >= _entropy_floor(
            len(token), CONTEXT_ENTROPY_MARGIN
        )
    if _BASE58_ADDRESS.fullmatch(token) or _printable_base64(raw):
        return False  # a Bitcoin address, or base64 of text
    mixed = any(char.isupper() for char in token) and any(char.islower() for char in token)
    return (
        mixed
        and BARE_MIN_LENGTH <= len(token) <= BLOB_MAX_LENGTH
        and base64_entropy(token) >= _entropy_floor(len(token), ENTROPY_MARGIN)
    )


def find_high_entropy(text: str) -> list[Span]:
    """Random-looking strings that are probably credentials, as ``(start, end, "high-entropy")``."""
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        return []
    excluded = sorted(_excluded_spans(text))
    urls = [match.span() for match in _URL.finditer(text)]
    found = []
    for match in tokens:
        start, end = match.span()
        if _inside(excluded, start, end):
            continue
        url = _inside(urls, start, start + 1)
        in_url = None if url is None else url[0]
        if in_url is not None and not _SECRET_PARAM.search(text, in_url, start):
            continue  # a URL's path or an ordinary query parameter
        token = match.group().rstrip("=")
        context = True if in_url is not None else _context(text, start)
        if (
            context is None
            or _NOT_SECRET_PREFIX.match(token)
            or _SSH_PUBLIC_KEY.search(text, max(0, start - 40), start)
        ):
            continue
        if _looks_random(token, match.group(), context=context):
            found.append((start, end, "high-entropy"))
    return found
