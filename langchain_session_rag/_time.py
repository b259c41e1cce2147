"""Timestamp parsing shared by ingestion and retrieval filters."""

from __future__ import annotations

from datetime import date, datetime, timezone

from langchain_session_rag.errors import InvalidTimestampError

TimestampLike = datetime | date | str | int | float


def parse_timestamp(value: TimestampLike, *, what: str = "timestamp") -> datetime:
    """Parse an ISO 8601 string, a ``datetime``/``date`` or epoch seconds into an aware datetime.

    Naive values are taken as UTC.

    Raises:
        InvalidTimestampError: If the value cannot be parsed.
    """
    parsed: datetime
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)  # noqa: DTZ001 - made aware below
    elif isinstance(value, bool):
        msg = f"Invalid {what} {value!r}: expected ISO 8601 text, a datetime or epoch seconds."
        raise InvalidTimestampError(msg)
    elif isinstance(value, int | float):
        try:
            parsed = datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:
            msg = f"Invalid {what} {value!r}: epoch seconds out of range."
            raise InvalidTimestampError(msg) from exc
    elif isinstance(value, str):
        parsed = _from_text(value, what)
    else:
        msg = (
            f"Invalid {what} {value!r} of type {type(value).__name__}: "
            "expected ISO 8601 text, a datetime or epoch seconds."
        )
        raise InvalidTimestampError(msg)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        parsed.astimezone(timezone.utc)  # every comparison is in UTC: a time with no UTC equivalent is refused here
    except OverflowError as exc:
        msg = f"Invalid {what} {value!r}: in UTC it falls outside the years 1 to 9999."
        raise InvalidTimestampError(msg) from exc
    return parsed


def _from_text(value: str, what: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError as exc:
        msg = (
            f"Invalid {what} {value!r}: expected ISO 8601 such as '2026-02-06T10:00:00' or '2026-02-06T10:00:00+01:00'."
        )
        raise InvalidTimestampError(msg) from exc


def utcnow() -> datetime:
    """Return the current time, aware, in UTC."""
    return datetime.now(tz=timezone.utc)
