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

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from tickwheel.core.bounds import (
    CompiledBounded,
    ScheduleBounds,
    parse_bounds,
    parse_instant_field,
)
from tickwheel.core.business_days import CompiledAdjusted
from tickwheel.core.calendars import (
    BusinessCalendar,
    ScheduleAdjustment,
    parse_adjustment,
    weekends_only,
)
from tickwheel.core.compiled import CompiledOneOff, CompiledSchedule
from tickwheel.core.compiled_cron import CompiledCron, FoldRule, GapRule, compile_cron
from tickwheel.core.cron import CronFields, parse_cron
from tickwheel.core.enumerated import CompiledNothing, CompiledUnion
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.interval import CompiledInterval, parse_every_ms
from tickwheel.core.specs import spec_list
from tickwheel.core.zones import MAX_INSTANT_S, MIN_INSTANT_S, validate_zone

__all__ = [
    "DST_POLICIES",
    "CompiledAdjusted",
    "CompiledBounded",
    "CompiledCron",
    "CompiledInterval",
    "CompiledNothing",
    "CompiledOneOff",
    "CompiledSchedule",
    "CompiledUnion",
    "InvalidSchedule",
    "Schedule",
    "compile_schedule",
    "parse_schedule",
    "resolve_dst_policy",
]

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
    schedules may have `extra` specs, an `adjustment` (exclusions, a calendar) and `bounds`
    (startAt, endAt, maxRuns), applied in that order.
    """

    kind: Literal["cron", "once", "every"]
    timezone: str
    dst_policy: str
    cron: CronFields | None = None
    run_at_ms: int | None = None
    every_ms: int | None = None
    phase_ms: int = 0
    bounds: ScheduleBounds | None = None
    # Further specs of the job (each a `cron` or `every` Schedule without bounds): the job's
    # slots are the union of all of them, each once.
    extra: tuple[Schedule, ...] = ()
    # Exclusions and the business-day rule, applied to the union (core/calendars.py).
    adjustment: ScheduleAdjustment | None = None

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


def _parse_one(
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
        return Schedule(
            kind="every",
            timezone=zone,
            dst_policy="auto",
            every_ms=every_ms,
            phase_ms=phase_ms,
            bounds=bounds,
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
    return Schedule(kind="cron", timezone=zone, dst_policy=policy, cron=fields, bounds=bounds)


def _extra(i: int, spec: tuple[Any, Any, Any], timezone: Any, dst_policy: Any) -> Schedule:
    cron, every, phase = spec
    try:
        return _parse_one(
            cron=cron,
            every=every,
            phase=phase,
            timezone=timezone,
            dst_policy=dst_policy if cron is not None else None,
        )
    except InvalidSchedule as exc:
        raise InvalidSchedule(f"schedules[{i}].{exc.field}", exc.message) from None


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
    schedules: object = None,
    exclude: object = None,
    calendar: object = None,
    business_days: object = None,
) -> Schedule:
    """Validate a job's schedule fields: exactly one of `cron`, `every` or `run_at`, or a
    list of `schedules` (cron/interval specs, with or without a `cron`/`every` of its own).

    A missing `timezone` means UTC (stated, never the host's zone). `run_at` is ISO 8601
    with an explicit offset and takes no `timezone`. `every` is a duration with an
    optional ISO `phase`; `start_at`/`end_at`/`max_runs` bound a recurring schedule
    (`count_from_ms` is where `max_runs` counts from without `start_at`). `exclude`,
    `calendar` and `business_days` adjust a recurring schedule's slots (core/calendars.py).
    Raises `InvalidSchedule` whose `field` names the offending field and whose message says
    what is accepted.
    """
    specs = spec_list(schedules)
    adjusted = (exclude, calendar, business_days) != (None, None, None)
    if run_at is not None and (specs or adjusted):
        raise InvalidSchedule(
            "schedule",
            "schedules, exclude, calendar and businessDays apply to recurring schedules; "
            "accepted: cron or every with them, or runAt alone",
        )
    extra_from = 0
    if specs and (cron, every, run_at) == (None, None, None):
        cron, every, phase = specs[0]  # the first spec stands for the job's own
        extra_from = 1
    try:
        primary = _parse_one(
            cron,
            timezone,
            run_at,
            dst_policy,
            every=every,
            phase=phase,
            start_at=start_at,
            end_at=end_at,
            max_runs=max_runs,
            count_from_ms=count_from_ms,
        )
    except InvalidSchedule as exc:
        if extra_from and exc.field in ("cron", "every", "phase"):
            raise InvalidSchedule(f"schedules[0].{exc.field}", exc.message) from None
        raise
    extra = tuple(
        _extra(i, spec, timezone, dst_policy) for i, spec in enumerate(specs) if i >= extra_from
    )
    adjustment = parse_adjustment(exclude, calendar, business_days)
    if extra or adjustment is not None:
        primary = replace(primary, extra=extra, adjustment=adjustment)
    return _checked(primary)


def _checked(schedule: Schedule) -> Schedule:
    """A bounded, combined or adjusted schedule must keep at least one slot (as a cron must
    fire); a calendar's own holidays are not known here, its weekends are."""
    if schedule.kind == "once" or (
        schedule.bounds is None and not schedule.extra and schedule.adjustment is None
    ):
        return schedule
    if compile_schedule(schedule).next_after(MIN_INSTANT_MS) is None:
        raise InvalidSchedule(
            "schedule",
            "no slot of the schedule lies between startAt and endAt, so it never fires; "
            "accepted: bounds that hold at least one slot"
            if schedule.adjustment is None
            else "its exclusions and business-day rule remove every slot, so it never fires; "
            "accepted: exclusions that leave at least one slot",
        )
    return schedule


def compile_schedule(
    schedule: Schedule, calendars: Mapping[str, BusinessCalendar] | None = None
) -> CompiledSchedule:
    """The shared compiled form of a validated schedule (cached per expression/zone/policy).

    `calendars` are the holiday calendars known (by name); a schedule naming one that is not
    among them has no slot until it is (`CompiledNothing`). None: validation, which knows
    weekends but no holidays.
    """
    if schedule.kind == "once":
        assert schedule.run_at_ms is not None
        return CompiledOneOff(schedule.run_at_ms)
    base = _compile_spec(schedule)
    if schedule.extra:
        base = _compile_union((base, *(_compile_spec(x) for x in schedule.extra)))
    adjustment = schedule.adjustment
    if adjustment is not None:
        calendar: BusinessCalendar | None = None
        if adjustment.rule is not None:
            name = adjustment.calendar
            if name is None or calendars is None:
                calendar = weekends_only(name or "")
            elif name in calendars:
                calendar = calendars[name]
            else:
                return CompiledNothing(f"calendar {name!r} not known")
        base = _compile_adjusted(base, schedule.timezone, adjustment, calendar)
    b = schedule.bounds
    if b is None:
        return base
    start = b.start_ms if b.start_ms is not None else b.count_from_ms
    return _compile_bounded(base, start, b.end_ms, b.max_runs)


def _compile_spec(schedule: Schedule) -> CompiledSchedule:
    if schedule.kind == "every":
        assert schedule.every_ms is not None
        return _compile_interval(schedule.every_ms, schedule.phase_ms)
    assert schedule.cron is not None
    gap, fold = resolve_dst_policy(schedule.dst_policy, schedule.cron)
    return compile_cron(schedule.cron, schedule.timezone, gap, fold)


@lru_cache(maxsize=4_096)
def _compile_union(parts: tuple[CompiledSchedule, ...]) -> CompiledUnion:
    return CompiledUnion(parts)


@lru_cache(maxsize=16_384)
def _compile_adjusted(
    base: CompiledSchedule,
    zone: str,
    adjustment: ScheduleAdjustment,
    calendar: BusinessCalendar | None,
) -> CompiledAdjusted:
    return CompiledAdjusted(base, zone, adjustment, calendar)


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
