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
from dataclasses import dataclass

from tickwheel.core.watchdog import Condition


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


@dataclass
class LagWatch:
    """The watchdog's own input lag as a condition: its clock minus its watermark above
    `threshold_ms`, continuously for `threshold_ms` of its own running time. A watchdog back
    from downtime starts far behind and catches up in seconds: that is not lagging, and must
    raise nothing (after downtime, nothing is raised for what went well meanwhile)."""

    threshold_ms: int
    behind_since: int | None = None

    def observe(self, now_ms: int, watermark_ms: int) -> Condition | None:
        lag = now_ms - watermark_ms
        if lag <= self.threshold_ms:
            self.behind_since = None
            return None
        if self.behind_since is None:
            self.behind_since = now_ms
        behind_for = now_ms - self.behind_since
        if behind_for < self.threshold_ms:
            return None
        return Condition(
            "watchdog_lagging",
            "watchdog",
            "warning",
            f"the watchdog's inputs are {lag // 1000} s behind its clock, for {behind_for // 1000} s:"
            " alerts are raised late (in event time, never falsely)",
            {"lag_ms": lag, "behind_since": self.behind_since, "threshold_ms": self.threshold_ms},
            summary="lagging",
        )
