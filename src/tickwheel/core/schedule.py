"""Schedules: parse and validate them, compile them, and compute their occurrences.

All instants are int epoch milliseconds UTC. A recurring schedule is a cron expression
in an IANA zone resolved through a written DST policy (docs/decisions/0010):

* Wall-clock candidates come from `WallMatcher` (our own compiled cron, no library).
* The zone's UTC timeline is a list of constant-offset segments (`ZoneTimeline`). Inside
  a segment, wall `w` is the instant `w - offset`.
* At a spring-forward gap, walls inside the gap exist in no segment. Policy `shift`
  fires them once at the first valid instant after the gap (the transition itself);
  `skip` does not fire them.
* At a fall-back fold, walls in the repeated stretch exist in two segments. Policy
  `earlier` fires them once at the earlier offset, `later` once at the later offset,
  `both` fires each real instant.
* `auto` (the default) is `shift_earlier` when the hour field is restricted (fixed local
  hours) and `skip_both` (the real timeline) when it allows all 24 hours.

Compiled schedules are cached and shared per (expression, zone, resolved policy), and
the wall matcher per expression, so a million jobs over a few thousand distinct
schedules cost a few thousand computations per window, not a million.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tickwheel.core.cron import CronFields, parse_cron
from tickwheel.core.errors import InvalidSchedule, OutOfRange
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.core.wallclock import CYCLE_DAYS, DAY_S, WallMatcher
from tickwheel.core.zones import (
    MAX_INSTANT_S,
    MIN_INSTANT_S,
    Segment,
    ZoneTimeline,
    check_instant_s,
    validate_zone,
    zone_timeline,
)
from tickwheel.errors import InvalidInput

__all__ = [
    "DST_POLICIES",
    "CompiledCron",
    "CompiledOneOff",
    "CompiledSchedule",
    "InvalidSchedule",
    "Schedule",
    "compile_schedule",
    "parse_schedule",
    "resolve_dst_policy",
]

GapRule = Literal["shift", "skip"]
FoldRule = Literal["earlier", "later", "both"]

_GAPS: tuple[GapRule, ...] = ("shift", "skip")
_FOLDS: tuple[FoldRule, ...] = ("earlier", "later", "both")
_ALIASES = {"fixed": "shift_earlier", "timeline": "skip_both"}
DST_POLICIES: tuple[str, ...] = (
    "auto",
    *_ALIASES,
    *(f"{gap}_{fold}" for gap in _GAPS for fold in _FOLDS),
)
_POLICY_HELP = (
    "auto, fixed (= shift_earlier), timeline (= skip_both), or <gap>_<fold> with gap "
    "shift|skip and fold earlier|later|both (e.g. skip_earlier)"
)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A validated schedule: a cron expression in a zone, or a one-off instant.

    `kind` is `cron` or `once`. For `cron`, `timezone` is the IANA key ("UTC" when none
    was given) and `dst_policy` the policy name as accepted (`auto` by default). For
    `once`, `run_at_ms` is the instant.
    """

    kind: Literal["cron", "once"]
    timezone: str
    dst_policy: str
    cron: CronFields | None = None
    run_at_ms: int | None = None

    @property
    def expression(self) -> str | None:
        """The normalised cron expression, or None for a one-off."""
        return None if self.cron is None else self.cron.expression


def _require_str(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidSchedule(field, f"expected a string, got {type(value).__name__}")
    return value


def _validate_dst_policy(value: object) -> str:
    if value is None:
        return "auto"
    text = _require_str(value, "dstPolicy")
    if text not in DST_POLICIES:
        shown = text[:40] + ("..." if len(text) > 40 else "")
        raise InvalidSchedule(
            "dstPolicy", f"unknown DST policy {shown!r}; accepted: {_POLICY_HELP}"
        )
    return text


def resolve_dst_policy(policy: str, fields: CronFields) -> tuple[GapRule, FoldRule]:
    """The (gap, fold) rules a policy name means for these cron fields."""
    name = _ALIASES.get(policy, policy)
    if name == "auto":
        name = "skip_both" if fields.every_hour else "shift_earlier"
    gap, _, fold = name.partition("_")
    assert gap in _GAPS and fold in _FOLDS, name
    return gap, fold


def parse_schedule(
    cron: str | None = None,
    timezone: str | None = None,
    run_at: str | None = None,
    dst_policy: str | None = None,
) -> Schedule:
    """Validate a job's schedule fields; exactly one of `cron` or `run_at` must be given.

    A missing `timezone` means UTC (stated, never the host's zone). `run_at` is ISO 8601
    with an explicit offset and takes no `timezone`. Raises `InvalidSchedule` whose
    `field` names the offending field and whose message says what is accepted.
    """
    if cron is not None and run_at is not None:
        raise InvalidSchedule(
            "schedule",
            "both cron and runAt are set; accepted: exactly one of runAt, or cron with timezone",
        )
    if cron is None and run_at is None:
        raise InvalidSchedule(
            "schedule",
            "neither cron nor runAt is set; accepted: exactly one of runAt (ISO 8601 with an "
            "offset), or cron with timezone",
        )
    if run_at is not None:
        if timezone is not None:
            raise InvalidSchedule(
                "timezone",
                "a timezone applies only to cron schedules; accepted: runAt carrying its own "
                "offset (e.g. 2030-01-01T09:00:00+01:00) and no timezone",
            )
        if dst_policy not in (None, "auto"):
            raise InvalidSchedule(
                "dstPolicy", "a DST policy applies only to cron schedules; accepted: none or auto"
            )
        try:
            run_at_ms = parse_iso_ms(run_at, "runAt")
            check_instant_s(run_at_ms // 1000)
        except OutOfRange:
            raise InvalidSchedule(
                "runAt", f"{run_at!r} is out of range; accepted: 1900-01-01 to 9000-01-01"
            ) from None
        except InvalidInput as exc:
            raise InvalidSchedule("runAt", exc.message) from None
        return Schedule(kind="once", timezone="UTC", dst_policy="auto", run_at_ms=run_at_ms)
    fields = parse_cron(_require_str(cron, "cron"))
    if timezone is not None:
        timezone = _require_str(timezone, "timezone")
    zone = validate_zone(timezone)
    policy = _validate_dst_policy(dst_policy)
    return Schedule(kind="cron", timezone=zone, dst_policy=policy, cron=fields)


class CompiledSchedule(ABC):
    """A schedule ready to compute occurrences; equal keys mean equal behaviour.

    Instances are immutable from the outside, hashable by `key`, and safe to share
    between any number of jobs.
    """

    key: tuple[str, str, str]

    @abstractmethod
    def next_after(self, t_ms: int) -> int | None:
        """The first occurrence strictly after `t_ms`, or None if there is none."""

    @abstractmethod
    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        """Occurrences in (start_ms, end_ms], strictly increasing."""

    @abstractmethod
    def count(self, start_ms: int, end_ms: int) -> int:
        """How many occurrences lie in (start_ms, end_ms], without listing them."""

    @abstractmethod
    def prev_before(self, t_ms: int) -> int | None:
        """The last occurrence strictly before `t_ms`, or None if there is none."""

    @property
    @abstractmethod
    def nominal_period_ms(self) -> int | None:
        """Smallest wall-clock distance between occurrences; None for a one-off (or a
        schedule that never fires)."""

    def first(self, start_ms: int, end_ms: int, limit: int) -> list[int]:
        """The first `limit` occurrences in (start_ms, end_ms]."""
        out: list[int] = []
        t = start_ms
        while len(out) < limit:
            nxt = self.next_after(t)
            if nxt is None or nxt > end_ms:
                break
            out.append(nxt)
            t = nxt
        return out

    def kth_after(self, start_ms: int, k: int, end_ms: int) -> int | None:
        """The k-th (1-based) occurrence in (start_ms, end_ms], found by bisecting `count`."""
        if k < 1 or self.count(start_ms, end_ms) < k:
            return None
        # Occurrences fall on whole seconds: bisect over seconds, smallest x with count >= k.
        lo, hi = start_ms // 1000, end_ms // 1000
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(start_ms, mid * 1000) >= k:
                hi = mid
            else:
                lo = mid
        return hi * 1000

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompiledSchedule) and other.key == self.key

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key!r}"


class CompiledOneOff(CompiledSchedule):
    """A one-off schedule: a single occurrence at `run_at_ms`."""

    __slots__ = ("key", "run_at_ms")

    def __init__(self, run_at_ms: int) -> None:
        self.run_at_ms = run_at_ms
        self.key = ("once", str(run_at_ms), "")

    def next_after(self, t_ms: int) -> int | None:
        return self.run_at_ms if self.run_at_ms > t_ms else None

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        return [self.run_at_ms] if start_ms < self.run_at_ms <= end_ms else []

    def count(self, start_ms: int, end_ms: int) -> int:
        return 1 if start_ms < self.run_at_ms <= end_ms else 0

    def prev_before(self, t_ms: int) -> int | None:
        return self.run_at_ms if self.run_at_ms < t_ms else None

    @property
    def nominal_period_ms(self) -> int | None:
        return None


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
def _compile_cron(fields: CronFields, zone: str, gap: GapRule, fold: FoldRule) -> CompiledCron:
    return CompiledCron(fields, zone, gap, fold)


def compile_schedule(schedule: Schedule) -> CompiledSchedule:
    """The shared compiled form of a validated schedule (cached per expression/zone/policy)."""
    if schedule.kind == "once":
        assert schedule.run_at_ms is not None
        return CompiledOneOff(schedule.run_at_ms)
    assert schedule.cron is not None
    gap, fold = resolve_dst_policy(schedule.dst_policy, schedule.cron)
    return _compile_cron(schedule.cron, schedule.timezone, gap, fold)


# Re-exported so callers can bound their own loops the same way.
MIN_INSTANT_MS = MIN_INSTANT_S * 1000
MAX_INSTANT_MS = MAX_INSTANT_S * 1000
