"""Privacy: secrets (keys, tokens, passwords, card numbers, IBANs) found and redacted before storage."""

from langchain_session_rag.privacy.redaction import (
    SECRET_KINDS,
    FoundSecret,
    RedactedText,
    find_secrets,
    redact_secrets,
)

__all__ = ["SECRET_KINDS", "FoundSecret", "RedactedText", "find_secrets", "redact_secrets"]
