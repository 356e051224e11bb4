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

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tickwheel.core.bounds import (
    CompiledBounded,
    ScheduleBounds,
    parse_bounds,
    parse_instant_field,
)
from tickwheel.core.compiled import CompiledOneOff, CompiledSchedule
from tickwheel.core.cron import CronFields, parse_cron
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.interval import CompiledInterval, parse_every_ms
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

__all__ = [
    "DST_POLICIES",
    "CompiledBounded",
    "CompiledCron",
    "CompiledInterval",
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
    """A validated schedule: a cron expression in a zone, an interval, or a one-off instant.

    `kind` is `cron`, `every` or `once`. For `cron`, `timezone` is the IANA key ("UTC" when
    none was given) and `dst_policy` the policy name as accepted (`auto` by default). For
    `every`, `every_ms` and `phase_ms` (the anchor; 0 = the epoch) define the slots and
    `timezone` only how they are shown. For `once`, `run_at_ms` is the instant. Recurring
    schedules may be `bounds`-ed (startAt, endAt, maxRuns).
    """

    kind: Literal["cron", "once", "every"]
    timezone: str
    dst_policy: str
    cron: CronFields | None = None
    run_at_ms: int | None = None
    every_ms: int | None = None
    phase_ms: int = 0
    bounds: ScheduleBounds | None = None

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


_ONE_OF = "exactly one of runAt, cron with timezone, or every"


def parse_schedule(
    cron: str | None = None,
    timezone: str | None = None,
    run_at: str | None = None,
    dst_policy: str | None = None,
    *,
    every: str | None = None,
    phase: str | None = None,
    start_at: str | None = None,
    end_at: str | None = None,
    max_runs: int | None = None,
    count_from_ms: int | None = None,
) -> Schedule:
    """Validate a job's schedule fields; exactly one of `cron`, `every` or `run_at`.

    A missing `timezone` means UTC (stated, never the host's zone). `run_at` is ISO 8601
    with an explicit offset and takes no `timezone`. `every` is a duration with an
    optional ISO `phase`; `start_at`/`end_at`/`max_runs` bound a recurring schedule
    (`count_from_ms` is where `max_runs` counts from without `start_at`). Raises
    `InvalidSchedule` whose `field` names the offending field and whose message says
    what is accepted.
    """
    given = [
        name for name, v in (("cron", cron), ("runAt", run_at), ("every", every)) if v is not None
    ]
    if len(given) > 1:
        raise InvalidSchedule(
            "schedule",
            f"both {given[0]} and {given[1]} are set; accepted: {_ONE_OF}"
            if every is not None
            else "both cron and runAt are set; accepted: exactly one of runAt, or cron with "
            "timezone",
        )
    if not given:
        raise InvalidSchedule(
            "schedule",
            "neither cron nor runAt is set; accepted: exactly one of runAt (ISO 8601 with an "
            "offset), or cron with timezone, or every (a duration such as '90m')",
        )
    if phase is not None and every is None:
        raise InvalidSchedule("phase", "a phase applies only to every; accepted: every with phase")
    if run_at is not None and (start_at, end_at, max_runs) != (None, None, None):
        raise InvalidSchedule(
            "schedule",
            "startAt, endAt and maxRuns bound recurring schedules; accepted: cron or every "
            "with them, or runAt alone",
        )
    bounds = parse_bounds(start_at, end_at, max_runs, count_from_ms)
    if every is not None:
        if dst_policy not in (None, "auto"):
            raise InvalidSchedule(
                "dstPolicy",
                "a DST policy applies only to cron schedules (an interval is real elapsed "
                "time); accepted: none or auto",
            )
        every_ms = parse_every_ms(every)
        phase_ms = parse_instant_field(phase, "phase") or 0
        zone = validate_zone(None if timezone is None else _require_str(timezone, "timezone"))
        return _checked(
            Schedule(
                kind="every",
                timezone=zone,
                dst_policy="auto",
                every_ms=every_ms,
                phase_ms=phase_ms,
                bounds=bounds,
            )
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
        run_at_ms = parse_instant_field(run_at, "runAt")
        assert run_at_ms is not None
        return Schedule(kind="once", timezone="UTC", dst_policy="auto", run_at_ms=run_at_ms)
    fields = parse_cron(_require_str(cron, "cron"))
    if timezone is not None:
        timezone = _require_str(timezone, "timezone")
    zone = validate_zone(timezone)
    policy = _validate_dst_policy(dst_policy)
    return _checked(
        Schedule(kind="cron", timezone=zone, dst_policy=policy, cron=fields, bounds=bounds)
    )


def _checked(schedule: Schedule) -> Schedule:
    """A bounded schedule must keep at least one slot (as a cron must fire)."""
    if (
        schedule.bounds is not None
        and compile_schedule(schedule).next_after(MIN_INSTANT_MS) is None
    ):
        raise InvalidSchedule(
            "schedule",
            "no slot of the schedule lies between startAt and endAt, so it never fires; "
            "accepted: bounds that hold at least one slot",
        )
    return schedule


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
    base: CompiledSchedule
    if schedule.kind == "every":
        assert schedule.every_ms is not None
        base = _compile_interval(schedule.every_ms, schedule.phase_ms)
    else:
        assert schedule.cron is not None
        gap, fold = resolve_dst_policy(schedule.dst_policy, schedule.cron)
        base = _compile_cron(schedule.cron, schedule.timezone, gap, fold)
    b = schedule.bounds
    if b is None:
        return base
    start = b.start_ms if b.start_ms is not None else b.count_from_ms
    return _compile_bounded(base, start, b.end_ms, b.max_runs)


@lru_cache(maxsize=4_096)
def _compile_interval(every_ms: int, phase_ms: int) -> CompiledInterval:
    return CompiledInterval(every_ms, phase_ms)


@lru_cache(maxsize=16_384)
def _compile_bounded(
    base: CompiledSchedule, start_ms: int | None, end_ms: int | None, max_runs: int | None
) -> CompiledBounded:
    return CompiledBounded(base, start_ms, end_ms, max_runs)


# Re-exported so callers can bound their own loops the same way.
MIN_INSTANT_MS = MIN_INSTANT_S * 1000
MAX_INSTANT_MS = MAX_INSTANT_S * 1000
