"""The event-time watermark of the watchdog's inputs.

Each input partition says how far event time has got on it: a partition read to its end
(its last stable offset: read_committed) has nothing older left to say, so it stands at the
watchdog's clock; one still behind stands at the newest record timestamp read from it. The
watermark is the lowest of them, less an allowance for records produced but not yet
readable. A watchdog that was down therefore evaluates its backlog in event time and raises
nothing for what went well meanwhile; a stopped producer holding a partition's end open is
caught up on what it let through, so the time it is stopped counts.
"""

from __future__ import annotations

from collections.abc import Mapping


def watermark(
    positions: Mapping[str, int],
    ends: Mapping[str, int],
    newest_ms: Mapping[str, int],
    now_ms: int,
    lateness_ms: int,
) -> int | None:
    """The watermark, or None while some partition behind its end has given no record yet."""
    lowest = now_ms
    for key, end in ends.items():
        position = positions.get(key, 0)
        if position >= end >= 0:
            continue
        newest = newest_ms.get(key)
        if newest is None:
            return None
        lowest = min(lowest, newest)
    return lowest - lateness_ms
