"""ISO 8601 parsing and formatting of epoch-millisecond instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tickwheel.errors import InvalidInput

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
MAX_ISO_LENGTH = 64


def to_datetime(ms: int) -> datetime:
    """The aware UTC datetime of an epoch-millisecond instant."""
    return _EPOCH + timedelta(milliseconds=ms)


def format_utc(ms: int) -> str:
    """`2024-03-10T07:00:00Z`, with `.mmm` only when the instant has milliseconds."""
    dt = to_datetime(ms)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def format_local(ms: int, zone: ZoneInfo) -> str:
    """Local ISO 8601 with the offset in effect, e.g. `2024-03-10T03:00:00-04:00`."""
    dt = to_datetime(ms).astimezone(zone)
    return dt.isoformat(timespec="milliseconds" if ms % 1000 else "seconds")


def parse_iso_ms(text: object, field: str) -> int:
    """Parse ISO 8601 with an explicit offset (`Z` or `±HH:MM`) to epoch milliseconds.

    Sub-millisecond digits are truncated. Raises `InvalidInput` for the named `field`.
    """
    example = "e.g. 2030-01-01T09:00:00Z or 2030-01-01T09:00:00+01:00"
    if not isinstance(text, str):
        raise InvalidInput(
            field, f"expected an ISO 8601 string, got {type(text).__name__}; accepted: {example}"
        )
    if len(text) > MAX_ISO_LENGTH or not text.isascii():
        raise InvalidInput(
            field,
            f"{text[:MAX_ISO_LENGTH]!r} is not an ISO 8601 date-time (over-long or non-ASCII); "
            f"accepted: {example}",
        )
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInput(
            field, f"{text!r} is not an ISO 8601 date-time; accepted: {example}"
        ) from None
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise InvalidInput(
            field, f"{text!r} has no UTC offset; accepted: ISO 8601 with an offset, {example}"
        )
    return (dt - _EPOCH) // _MS
