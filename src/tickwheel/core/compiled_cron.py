"""Cron schedules compiled in a zone under resolved (gap, fold) DST rules (decision 0010).

Split from `schedule.py` (which parses and dispatches); the algorithm is described there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.cron import CronFields
from tickwheel.core.wallclock import CYCLE_DAYS, DAY_S, WallMatcher
from tickwheel.core.zones import (
    MAX_INSTANT_S,
    MIN_INSTANT_S,
    Segment,
    ZoneTimeline,
    check_instant_s,
    zone_timeline,
)

__all__ = ["CompiledCron", "FoldRule", "GapRule", "compile_cron"]

GapRule = Literal["shift", "skip"]
FoldRule = Literal["earlier", "later", "both"]


class CompiledCron(CompiledSchedule):
    """A cron expression in a zone under resolved (gap, fold) DST rules."""

    __slots__ = ("fields", "fold", "gap", "key", "matcher", "timeline", "zone")

    def __init__(self, fields: CronFields, zone: str, gap: GapRule, fold: FoldRule) -> None:
        self.fields = fields
        self.zone = zone
        self.gap = gap
        self.fold = fold
        self.key = (fields.expression, zone, f"{gap}_{fold}")
        self.matcher: WallMatcher = _matcher(fields)
        self.timeline: ZoneTimeline = zone_timeline(zone)

    def _plan(self, seg: Segment, lo: int, hi: int) -> tuple[bool, int, int]:
        """For UTC seconds [lo, hi) inside `seg`: (fire at seg.start for a gap?, wall lo, wall hi)."""
        start, end, offset, before, after = seg
        wlo, whi = lo + offset, hi + offset
        shifted = False
        if before < offset and lo == start and self.gap == "shift":
            # Walls in the gap [start+before, start+offset), and the wall at its end, all
            # resolve to the first valid instant after the gap: fire once there.
            shifted = self.matcher.first_wall(start + before, start + offset + 1) is not None
            if shifted:
                wlo = start + offset + 1
        if self.fold == "earlier" and before > offset:
            wlo = max(wlo, start + before)  # the repeated walls belong to the earlier segment
        elif self.fold == "later" and after < offset:
            whi = min(whi, end + after)  # the repeated walls belong to the later segment
        return shifted, wlo, whi

    def next_after(self, t_ms: int) -> int | None:
        cursor = t_ms // 1000 + 1
        check_instant_s(cursor - 1)
        if not self.matcher.fires:
            return None
        # Nothing in one whole 400-year cycle (plus a day for offsets) means nothing ever.
        limit = min(MAX_INSTANT_S, cursor + _SEARCH_S)
        while cursor < limit:
            seg = self.timeline.segment(cursor)
            shifted, wlo, whi = self._plan(seg, cursor, seg.end)
            if shifted:
                return seg.start * 1000
            wall = self.matcher.first_wall(wlo, whi)
            if wall is not None:
                return (wall - seg.offset) * 1000
            cursor = seg.end
        return None

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        cursor, stop = self._bounds(start_ms, end_ms)
        out: list[int] = []
        while cursor < stop:
            seg = self.timeline.segment(cursor)
            hi = min(seg.end, stop)
            shifted, wlo, whi = self._plan(seg, cursor, hi)
            if shifted:
                out.append(seg.start * 1000)
            shift = seg.offset * 1000
            out.extend([w * 1000 - shift for w in self.matcher.walls(wlo, whi)])
            cursor = hi
        return out

    def count(self, start_ms: int, end_ms: int) -> int:
        cursor, stop = self._bounds(start_ms, end_ms)
        total = 0
        while cursor < stop:
            seg = self.timeline.segment(cursor)
            hi = min(seg.end, stop)
            shifted, wlo, whi = self._plan(seg, cursor, hi)
            total += shifted + self.matcher.count_walls(wlo, whi)
            cursor = hi
        return total

    def prev_before(self, t_ms: int) -> int | None:
        gap_s = self.matcher.min_gap_s()
        if gap_s is None:
            return None
        end = t_ms - 1
        width_s = 2 * gap_s + 2
        # As in next_after: looking back further than one cycle cannot find anything new.
        floor_ms = max(MIN_INSTANT_S * 1000, end - _SEARCH_S * 1000)
        while True:
            start = max(end - width_s * 1000, floor_ms)
            n = self.count(start, end)
            if n:
                return self.kth_after(start, n, end)
            if start <= floor_ms:
                return None
            width_s *= 2

    @property
    def nominal_period_ms(self) -> int | None:
        gap_s = self.matcher.min_gap_s()
        return None if gap_s is None else gap_s * 1000

    @staticmethod
    def _bounds(start_ms: int, end_ms: int) -> tuple[int, int]:
        """(start_ms, end_ms] as whole UTC seconds [cursor, stop), clipped to the range."""
        cursor = start_ms // 1000 + 1
        stop = end_ms // 1000 + 1
        check_instant_s(cursor - 1)
        return cursor, min(stop, MAX_INSTANT_S)


# One Gregorian cycle plus two days (the widest UTC offsets are under a day each way).
_SEARCH_S = (CYCLE_DAYS + 2) * DAY_S


@lru_cache(maxsize=16_384)
def _matcher(fields: CronFields) -> WallMatcher:
    return WallMatcher(fields)


@lru_cache(maxsize=65_536)
def compile_cron(fields: CronFields, zone: str, gap: GapRule, fold: FoldRule) -> CompiledCron:
    return CompiledCron(fields, zone, gap, fold)
