"""Generate the redaction benchmark's labelled chat messages: secrets of every kind, and look-alikes that are not.

Usage::

    python benchmarks/secrets_data.py --out benchmarks/results/secrets_data.json

``redaction.py`` generates the same data in memory unless given ``--data``. Every secret is fake, drawn at random
from the public format of its kind: AWS access key ids (``AKIA`` + 16) and 40-character secret keys, GitHub
classic (``ghp_`` + 36) and fine-grained (``github_pat_`` + 22 + ``_`` + 59) tokens, GitLab ``glpat-`` tokens,
Slack ``xoxb-``/``xoxp-`` tokens and webhooks, Stripe ``sk_live_``/``rk_live_`` keys, OpenAI ``sk-...T3BlbkFJ...``
and ``sk-proj-`` keys, Google ``AIza`` keys, JWTs (base64url JSON header and payload, a signature), PEM private
key blocks (RSA, EC, PKCS#8, OpenSSH), passwords in URLs and after a keyword, card numbers of six networks
(issuer prefix, length, Luhn check digit) and IBANs of ten countries (ISO 13616 length and mod-97 check digits).
Look-alikes: git SHAs, UUIDs, base64 data URIs of images, checksums and digests, code, long words and identifiers,
URLs without credentials, phone, order and tracking numbers, dates, versions, Luhn-invalid 16-digit numbers,
ISBNs, talk about passwords that gives none, texts already redacted, and ordinary chat.

Each message is labelled with its category (``secret`` or a look-alike category) and with the kind and the exact
substring of every secret in it. The ``tune`` split (seed 11) and the ``holdout`` split (seed 29) draw from
different sentence templates (``secrets_templates.py``); the holdout's were written before any tuning and are
not used to choose the detector's rules. Deterministic: the same seeds give the same file.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

from secrets_templates import NEGATIVE, POSITIVE

SEEDS = {"tune": 11, "holdout": 29}
PER_KIND = 12  # messages per secret kind and split
PER_LOOKALIKE = 13  # messages per look-alike category and split
MULTI = 12  # messages holding two secrets of different kinds
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEXL = "0123456789abcdef"


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def luhn_digit(partial: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(partial)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# --- secrets, from their public formats -------------------------------------------------------------------------
def aws_access_key(rng: random.Random) -> str:
    return rng.choice(["AKIA", "AKIA", "ASIA"]) + rand(rng, string.ascii_uppercase + "234567", 16)


def aws_secret_key(rng: random.Random) -> str:
    return rand(rng, B64, 40)


def github_token(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "github_pat_" + rand(rng, ALNUM, 22) + "_" + rand(rng, ALNUM, 59)
    return rng.choice(["ghp_", "ghp_", "gho_", "ghs_"]) + rand(rng, ALNUM, 36)


def gitlab_token(rng: random.Random) -> str:
    return "glpat-" + rand(rng, ALNUM + "_-", 20)


def slack_token(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return f"https://hooks.slack.com/services/T{rand(rng, string.ascii_uppercase + string.digits, 8)}/B{rand(rng, string.ascii_uppercase + string.digits, 10)}/{rand(rng, ALNUM, 24)}"
    prefix = rng.choice(["xoxb", "xoxb", "xoxp"])
    return f"{prefix}-{rand(rng, string.digits, 11)}-{rand(rng, string.digits, 13)}-{rand(rng, string.ascii_lowercase + string.digits, 24)}"


def stripe_key(rng: random.Random) -> str:
    return rng.choice(["sk_live_", "sk_live_", "rk_live_"]) + rand(rng, ALNUM, rng.choice([24, 99]))


def openai_key(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "sk-" + rand(rng, ALNUM, 20) + "T3BlbkFJ" + rand(rng, ALNUM, 20)
    return "sk-proj-" + rand(rng, B64URL, 74) + "T3BlbkFJ" + rand(rng, B64URL, 74)


def google_api_key(rng: random.Random) -> str:
    return "AIza" + rand(rng, B64URL, 35)


def jwt(rng: random.Random) -> str:
    header = {"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}
    payload = {
        "sub": str(rng.randrange(10**6, 10**9)),
        "name": rng.choice(["Ana", "Bo", "Chen Li"]),
        "iat": rng.randrange(1_600_000_000, 1_750_000_000),
    }
    parts = [b64url(json.dumps(p, separators=(",", ":")).encode()) for p in (header, payload)]
    sig = b64url(rng.randbytes(32 if header["alg"] == "HS256" else 256))
    return ".".join([*parts, sig])


def private_key(rng: random.Random) -> str:
    label = rng.choice(
        ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY"]
    )
    body = base64.b64encode(rng.randbytes(rng.randrange(120, 900))).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    sep = " " if rng.random() < 0.15 else "\n"  # some chat clients collapse the lines
    return sep.join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def password(rng: random.Random) -> str:
    words = ["maple", "tiger", "orbit", "sunny", "velvet", "harbor", "quartz", "falcon", "cobalt", "meadow"]
    shape = rng.randrange(5)
    if shape == 0:
        return rng.choice(words).capitalize() + str(rng.randrange(10, 9999)) + rng.choice("!$#%&*")
    if shape == 1:
        return rand(rng, ALNUM + "!@#$%^&*", rng.randrange(10, 18))
    if shape == 2:
        return "-".join(rng.sample(words, 4))
    if shape == 3:
        return rng.choice(words) + rng.choice(words) + str(rng.randrange(1, 99))
    return rng.choice(words) + rng.choice(words)  # a plain lower-case passphrase: the hardest case


def url_password(rng: random.Random) -> str:
    return rand(rng, ALNUM + "-._~", rng.randrange(8, 20))


def card_number(rng: random.Random) -> str:
    prefix, length, groups = rng.choice(
        [
            ("4", 16, (4, 4, 4, 4)),
            ("5" + str(rng.randrange(1, 6)), 16, (4, 4, 4, 4)),
            (str(rng.randrange(2221, 2721)), 16, (4, 4, 4, 4)),
            (rng.choice(["34", "37"]), 15, (4, 6, 5)),
            ("6011", 16, (4, 4, 4, 4)),
            (str(rng.randrange(3528, 3590)), 16, (4, 4, 4, 4)),
            ("36", 14, (4, 6, 4)),
        ]
    )
    partial = prefix + rand(rng, string.digits, length - len(prefix) - 1)
    digits = partial + luhn_digit(partial)
    sep = rng.choice([" ", " ", "-", ""])
    out, i = [], 0
    for g in groups:
        out.append(digits[i : i + g])
        i += g
    return sep.join(out)


IBAN_FORMATS = {  # country: BBAN layout (n = digit, a = upper-case letter, c = letter or digit)
    "DE": "n" * 18,
    "GB": "aaaa" + "n" * 14,
    "FR": "n" * 10 + "c" * 11 + "nn",
    "ES": "n" * 20,
    "IT": "a" + "n" * 10 + "c" * 12,
    "NL": "aaaa" + "n" * 10,
    "BE": "n" * 12,
    "CH": "n" * 5 + "c" * 12,
    "PL": "n" * 24,
    "AT": "n" * 16,
}


def iban(rng: random.Random) -> str:
    country = rng.choice(sorted(IBAN_FORMATS))
    pools = {"n": string.digits, "a": string.ascii_uppercase, "c": string.ascii_uppercase + string.digits}
    bban = "".join(rng.choice(pools[c]) for c in IBAN_FORMATS[country])
    check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    compact = f"{country}{check:02d}{bban}"
    if rng.random() < 0.6:
        return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    return compact


def generic_token(rng: random.Random) -> str:
    return rand(rng, rng.choice([ALNUM, B64URL, HEXL]), rng.choice([24, 32, 40, 48]))


SECRETS: dict[str, Callable[[random.Random], str]] = {
    "aws-access-key": aws_access_key,
    "aws-secret-key": aws_secret_key,
    "github-token": github_token,
    "gitlab-token": gitlab_token,
    "slack-token": slack_token,
    "stripe-key": stripe_key,
    "openai-key": openai_key,
    "google-api-key": google_api_key,
    "jwt": jwt,
    "private-key": private_key,
    "url-password": url_password,
    "password": password,
    "card-number": card_number,
    "iban": iban,
    "high-entropy": generic_token,
}


# --- look-alikes ---------------------------------------------------------------------------------------------------
def lookalike_values(rng: random.Random) -> dict[str, str]:
    digits16 = "4" + rand(rng, string.digits, 14)
    bad = str((int(luhn_digit(digits16)) + rng.randrange(1, 10)) % 10)
    isbn12 = "978" + rand(rng, string.digits, 9)
    isbn_check = str((10 - sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(isbn12)) % 10) % 10)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randrange(150, 600))).decode()
    return {
        "sha40": rand(rng, HEXL, 40),
        "sha7": rand(rng, HEXL, 7),
        "sha64": rand(rng, HEXL, 64),
        "md5": rand(rng, HEXL, 32),
        "uuid": f"{rand(rng, HEXL, 8)}-{rand(rng, HEXL, 4)}-4{rand(rng, HEXL, 3)}-a{rand(rng, HEXL, 3)}-{rand(rng, HEXL, 12)}",
        "png": png,
        "yt": rand(rng, B64URL, 11),
        "gdoc": "1" + rand(rng, B64URL, 43),
        "phone": f"+1 ({rng.randrange(200, 999)}) 555-{rng.randrange(1000, 9999)}",
        "phone_int": f"+44 20 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
        "order": str(rng.randrange(10**11, 10**15)),
        "ups": "1Z" + rand(rng, string.ascii_uppercase + string.digits, 16),
        "usps": " ".join(["9400", *(rand(rng, string.digits, 4) for _ in range(4)), rand(rng, string.digits, 2)]),
        "date": f"{rng.randrange(2019, 2026)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        "version": f"{rng.randrange(0, 20)}.{rng.randrange(0, 40)}.{rng.randrange(0, 30)}",
        "luhn_bad": " ".join((digits16 + bad)[i : i + 4] for i in range(0, 16, 4)),
        "isbn": f"{isbn12[:3]}-{isbn12[3]}-{isbn12[4:7]}-{isbn12[7:12]}-{isbn_check}",
        "isbn_compact": isbn12 + isbn_check,
        "ident": rng.choice(
            [
                "useMemoizedSelectorFactory",
                "AbstractSingletonProxyFactoryBean",
                "handleUserProfileUpdateRequest",
                "get_user_account_settings_v2",
                "test_refresh_token_rotation_on_expiry",
            ]
        ),
        "word": rng.choice(
            [
                "pneumonoultramicroscopicsilicovolcanoconiosis",
                "antidisestablishmentarianism",
                "Donaudampfschifffahrtsgesellschaft",
                "incomprehensibilities",
                "counterrevolutionaries",
            ]
        ),
        "ip": f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        "num": str(rng.randrange(2, 60)),
        "kind": rng.choice(["aws-access-key", "password", "github-token", "card-number"]),
        "stripe_obj": rng.choice(["ch_", "cus_", "pi_", "pm_", "in_", "sub_", "evt_", "req_"]) + rand(rng, ALNUM, 24),
        "sri": rng.choice(["sha512-", "sha384-"]) + base64.b64encode(rng.randbytes(rng.choice([48, 64]))).decode(),
        "objectid": rand(rng, HEXL, 24),
        "container": rand(rng, HEXL, 12),
        "pod": f"api-{rand(rng, HEXL[:10] + 'bcdf', 9)}-{rand(rng, string.ascii_lowercase + string.digits, 5)}",
        "btc": "1" + rand(rng, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33),
        "bech32": "bc1q" + rand(rng, "023456789acdefghjklmnpqrstuvwxyz", 38),
        "eth": "0x" + rand(rng, HEXL + "ABCDEF", 40),
        "img": f"IMG_{rng.randrange(2019, 2025)}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}_{rng.randrange(100000, 999999)}.jpg",
        "short": "https://bit.ly/" + rand(rng, ALNUM, 7),
        "asin": "B0" + rand(rng, string.ascii_uppercase + string.digits, 8),
        "playlist": "PL" + rand(rng, B64URL, 32),
        "firebase": "-N" + rand(rng, B64URL, 18),
        "b64text": base64.b64encode(
            rng.choice([b"hello world, this is a test", b"user:ana role:admin", b'{"page": 2, "size": 50}'])
        ).decode(),
    }


def build(split: str) -> list[dict[str, Any]]:
    """The split's messages, in a fixed order."""
    rng = random.Random(SEEDS[split])
    positive, negative = POSITIVE[split], NEGATIVE[split]
    out: list[dict[str, Any]] = []
    for kind, templates in positive.items():
        for i in range(PER_KIND):
            value = SECRETS[kind](rng)
            text = templates[i % len(templates)].format(
                s=value,
                u=rng.choice(["admin", "deploy", "ana"]),
                h=rng.choice(["db.internal", "10.0.0.7", "ftp.example.org"]),
            )
            label_kind = "password" if kind == "url-password" else kind
            if kind == "slack-token" and value.startswith("https://hooks"):
                label_kind = "slack-webhook"
            out.append({"category": "secret", "text": text, "secrets": [{"kind": label_kind, "value": value}]})
    out.extend(multi_secret(positive, rng) for _ in range(MULTI))
    for category, templates in negative.items():
        for i in range(PER_LOOKALIKE):
            text = templates[i % len(templates)].format(**lookalike_values(rng))
            out.append({"category": category, "text": text, "secrets": []})
    for number, item in enumerate(out):
        item["id"] = f"{split}-{number:04d}"
        if any(label["value"] not in item["text"] for label in item["secrets"]):
            msg = f"a label is not in its message: {item}"
            raise ValueError(msg)
    return out


def multi_secret(positive: dict[str, list[str]], rng: random.Random) -> dict[str, Any]:
    """A message of two lines, each holding a secret of a different kind."""
    kinds = rng.sample([k for k in positive if k != "url-password"], 2)
    values = [SECRETS[kind](rng) for kind in kinds]
    lines = [
        rng.choice(positive[kind]).format(s=value, u="root", h="db.internal")
        for kind, value in zip(kinds, values, strict=True)
    ]
    labels = [
        {"kind": "slack-webhook" if value.startswith("https://hooks") else kind, "value": value}
        for kind, value in zip(kinds, values, strict=True)
    ]
    return {"category": "secret", "text": "\n".join(lines), "secrets": labels}


def generate(splits: tuple[str, ...] = ("tune", "holdout")) -> dict[str, Any]:
    """Every split's messages, with their seeds."""
    return {"seeds": SEEDS, "splits": {split: build(split) for split in splits}}


def main() -> None:
    """Write the messages of both splits as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "secrets_data.json")
    args = parser.parse_args()
    data = generate()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    counts = {split: len(items) for split, items in data["splits"].items()}
    print(f"wrote {args.out}: {counts}")


if __name__ == "__main__":
    main()
