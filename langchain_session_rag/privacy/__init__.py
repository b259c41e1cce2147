"""Privacy: encryption at rest with per-user keys (erasure by destroying them), secrets redacted before storage."""

from langchain_session_rag.privacy.keyring import (
    MASTER_KEY_ENV,
    Keyring,
    ShredReceipt,
    generate_master_key,
)
from langchain_session_rag.privacy.redaction import (
    SECRET_KINDS,
    FoundSecret,
    RedactedText,
    find_secrets,
    redact_secrets,
)

__all__ = [
    "MASTER_KEY_ENV",
    "SECRET_KINDS",
    "FoundSecret",
    "Keyring",
    "RedactedText",
    "ShredReceipt",
    "find_secrets",
    "generate_master_key",
    "redact_secrets",
]
