"""Durations as people write them in job definitions: "30s", "5m", "26h", "7d", "1h30m"."""

from __future__ import annotations

import re

from tickwheel.errors import InvalidInput

_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str, field: str = "duration") -> int:
    """Milliseconds in `text`; raises InvalidInput saying what is accepted."""
    cleaned = text.strip().lower()
    if len(cleaned) > 32 or not cleaned:
        raise InvalidInput(
            field, f"{text!r} is not a duration; use e.g. '30s', '5m', '26h', '1h30m'"
        )
    position, total = 0, 0
    for match in _PART.finditer(cleaned):
        if match.start() != position:
            break
        total += int(match.group(1)) * _UNIT_MS[match.group(2)]
        position = match.end()
    if position != len(cleaned):
        raise InvalidInput(
            field,
            f"{text!r} is not a duration; use a number with ms, s, m, h or d, e.g. '30s', '26h'",
        )
    return total


def format_duration_ms(ms: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
