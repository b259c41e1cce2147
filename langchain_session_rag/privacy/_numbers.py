"""Payment numbers in free text: card numbers (Luhn, issuer prefix and length) and IBANs (ISO 13616, mod 97).

Both return ``(start, end, kind)`` spans in the text they are given. A card number must pass the Luhn check, start
with a prefix of a card network whose lengths allow its digit count, and, when written in groups, use one separator
between every two groups (a space, a hyphen, a dot, a slash, an underscore, a comma, a tab or a line break) and
groups of four, then three to six digits (``4111 1111 1111 1111``, ``3782-822463-10005``), or two groups of eight
separated by a space or a hyphen; a number announced as an order, tracking, ticket or phone number is left alone.
An IBAN must start with a country code of the registry, have that country's length and pass the mod-97 check; one
written in lower case (``de89370400440532013000``) must have digits only after its country code.
"""

from __future__ import annotations

import re

CARD = "card-number"
IBAN = "iban"

_CARD_RE = re.compile(
    r"(?<![\w+\-/.,])(?:\d{3,8}(?P<sep>[ .\-/_,\t\n])\d{1,8}(?:(?P=sep)\d{1,8}){0,4}|\d{13,19})(?![\w\-/]|[.,]\d)",
    re.ASCII,
)
_NOT_A_CARD_BEFORE = re.compile(
    r"(?:order|invoice|tracking|parcel|shipment|ticket|booking|confirmation|reference|ref|isbn|imei|serial|phone|"
    r"tel|mobile|call|fax|case|issue|build|transaction|txn|payment|id)\s*(?:no\.?|number|num|id|code)?\s*[:#]?\s*$",
    re.IGNORECASE,
)
# (first digits, low, high, allowed lengths): Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro.
_NETWORKS: tuple[tuple[int, int, int, frozenset[int]], ...] = (
    (1, 4, 4, frozenset({13, 16, 19})),
    (2, 51, 55, frozenset({16})),
    (4, 2221, 2720, frozenset({16})),
    (2, 34, 34, frozenset({15})),
    (2, 37, 37, frozenset({15})),
    (4, 6011, 6011, frozenset(range(16, 20))),
    (3, 644, 649, frozenset(range(16, 20))),
    (2, 65, 65, frozenset(range(16, 20))),
    (4, 3528, 3589, frozenset(range(16, 20))),
    (3, 300, 305, frozenset(range(14, 20))),
    (2, 36, 36, frozenset(range(14, 20))),
    (2, 38, 39, frozenset(range(16, 20))),
    (2, 62, 62, frozenset(range(16, 20))),
    (4, 5018, 5018, frozenset(range(13, 20))),
    (4, 5020, 5020, frozenset(range(13, 20))),
    (4, 5038, 5038, frozenset(range(13, 20))),
    (4, 5893, 5893, frozenset(range(13, 20))),
    (4, 6304, 6304, frozenset(range(13, 20))),
    (4, 6759, 6759, frozenset(range(13, 20))),
    (4, 6761, 6763, frozenset(range(13, 20))),
)
# ISO 13616 registry: country code -> IBAN length (the countries whose length is settled in the SWIFT registry).
_IBAN_LENGTHS = dict(
    item.split(":")
    for item in (
        "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 BY:28 CH:21 CR:22 CY:28 CZ:24 DE:22 DK:18 DO:28 "
        "EE:20 EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 HU:28 IE:22 IL:23 IQ:23 IS:26 "
        "IT:27 JO:30 KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MR:27 MT:31 MU:30 "
        "NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 SA:24 SC:31 SE:24 SI:19 SK:24 SM:27 ST:25 SV:28 TL:23 "
        "TN:24 TR:26 UA:29 VA:22 VG:24 XK:20"
    ).split()
)
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2}|[a-z]{2})(\d{2})")
_HALVES = frozenset(" -")  # two groups of eight: only as people write them


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn (mod 10) check."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2  # noqa: PLR2004
        total += value
    return total % 10 == 0


def _grouping_ok(groups: list[str], separator: str | None) -> bool:
    if separator is None:
        return True
    if len(groups) == 2 and len(groups[0]) == len(groups[1]) == 8:  # noqa: PLR2004
        return separator in _HALVES
    return len(groups[0]) == 4 and all(3 <= len(group) <= 6 for group in groups[1:-1]) and 1 <= len(groups[-1]) <= 6  # noqa: PLR2004


def find_cards(text: str) -> list[tuple[int, int, str]]:
    """Card numbers of known networks that pass the Luhn check, as ``(start, end, "card-number")``."""
    found = []
    for match in _CARD_RE.finditer(text):
        separator = match.group("sep")
        groups = match.group().split(separator) if separator else [match.group()]
        digits = "".join(groups)
        if not 13 <= len(digits) <= 19 or not _grouping_ok(groups, separator):  # noqa: PLR2004
            continue
        network = any(low <= int(digits[:w]) <= high and len(digits) in sizes for w, low, high, sizes in _NETWORKS)
        if not (network and luhn_valid(digits)):
            continue
        if _NOT_A_CARD_BEFORE.search(text, max(0, match.start() - 40), match.start()):
            continue
        found.append((match.start(), match.end(), CARD))
    return found


def iban_valid(iban: str) -> bool:
    """Whether a compact IBAN (no spaces) has its country's length and passes the ISO 7064 mod-97 check."""
    if _IBAN_LENGTHS.get(iban[:2]) != str(len(iban)) or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def find_ibans(text: str) -> list[tuple[int, int, str]]:
    """Valid IBANs, compact or written in groups separated by single spaces, as ``(start, end, "iban")``.

    Upper case, or lower case with digits only after the country code (a lower-case string with letters in it is
    more often an identifier or a digest than an IBAN).
    """
    found = []
    position = 0
    while (match := _IBAN_START.search(text, position)) is not None:
        position = match.start() + 1
        length = _IBAN_LENGTHS.get(match.group(1).upper())
        if length is None:
            continue
        lower = match.group(1).islower()
        chars: list[str] = [*match.group(1).upper(), *match.group(2)]
        end = match.end()
        while end < len(text) and len(chars) < int(length):
            char = text[end]
            if char.isascii() and (char.isdigit() or (char.isupper() and not lower)):
                chars.append(char)
            elif not (char == " " and chars and end + 1 < len(text) and text[end + 1] != " "):
                break
            end += 1
        if len(chars) != int(length) or (end < len(text) and text[end].isalnum()):
            continue
        if iban_valid("".join(chars)):
            found.append((match.start(), end, IBAN))
            position = end
    return found
