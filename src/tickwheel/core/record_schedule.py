"""The schedule of a stored `JobDefinition` record: one function for the timer and the SDK.

Records carry instants as epoch milliseconds (`runAt`, `phase`, `startAt`, `endAt`, and the
`phase` of each entry of `schedules`); the JSON form as ISO text. Both go through `parse_schedule`, so a record compiles to exactly
the schedule its JSON form validated to. Cached: a million jobs share a few thousand
schedules, and a restore compiles each once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from tickwheel.core.bounds import parse_instant_field
from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.schedule import Schedule, compile_schedule, parse_schedule
from tickwheel.core.timefmt import format_utc

__all__ = [
    "compile_record_schedule",
    "freeze_specs",
    "record_adjustments",
    "record_schedule",
    "specs_as_json",
    "thaw_specs",
]


def _iso(value: object) -> str | None:
    return format_utc(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    one_off = record.get("runAt") is not None
    max_runs = record.get("maxRuns")
    # maxRuns without startAt counts from the job's creation; otherwise createdAt does not
    # matter, and leaving it out lets every job on the schedule share one entry.
    count_from = (
        record.get("createdAt") if max_runs is not None and record.get("startAt") is None else None
    )
    specs = record.get("schedules")
    exclude = record.get("exclude")
    return (
        record.get("cron"),
        None if one_off else record.get("timezone"),
        record.get("dstPolicy"),
        record.get("runAt"),
        record.get("every"),
        record.get("phase"),
        record.get("startAt"),
        record.get("endAt"),
        max_runs,
        count_from,
        None if specs is None else freeze_specs(specs_as_json(specs)),
        None if exclude is None else freeze_specs(exclude),
        record.get("calendar"),
        record.get("businessDays"),
    )


@lru_cache(maxsize=65_536)
def _schedule(
    cron: Any,
    timezone: Any,
    dst_policy: Any,
    run_at: Any,
    every: Any,
    phase: Any,
    start_at: Any,
    end_at: Any,
    max_runs: Any,
    count_from: Any,
    specs: Any = None,
    exclude: Any = None,
    calendar: Any = None,
    business_days: Any = None,
) -> Schedule:
    return parse_schedule(
        cron=cron,
        timezone=timezone,
        run_at=_iso(run_at) if run_at is not None else None,
        dst_policy=dst_policy,
        every=every,
        phase=_iso(phase) if phase is not None else None,
        start_at=_iso(start_at) if start_at is not None else None,
        end_at=_iso(end_at) if end_at is not None else None,
        max_runs=max_runs,
        count_from_ms=count_from,
        schedules=thaw_specs(specs),
        exclude=thaw_specs(exclude),
        calendar=calendar,
        business_days=business_days,
    )


def record_schedule(record: Mapping[str, Any]) -> Schedule:
    """The validated `Schedule` of a decoded record; raises `InvalidSchedule` as
    `parse_schedule` does (an instant that is not an int reads as absent and is refused
    there by the exactly-one rule or by `check_definition_record`)."""
    key = _key(record)
    try:
        return _schedule(*key)
    except TypeError:  # an unhashable field (a hand-made record): no caching
        return _schedule.__wrapped__(*key)


@lru_cache(maxsize=65_536)
def _compiled(schedule: Schedule) -> CompiledSchedule:
    return compile_schedule(schedule)


@lru_cache(maxsize=65_536)
def _compiled_by_key(*key: Any) -> CompiledSchedule:
    # Keyed by the record's schedule fields: hashing a `Schedule` (its cron field sets) on
    # every record cost a restore more than the lookup saved.
    return _compiled(_schedule(*key))


def compile_record_schedule(
    record: Mapping[str, Any], calendars: Mapping[str, BusinessCalendar] | None = None
) -> CompiledSchedule:
    """The shared compiled schedule of a decoded `JobDefinition` record (cached), with the
    holiday calendars known (None: weekends only, as validation sees them)."""
    key = _key(record)
    uses_calendar = record.get("calendar") is not None or record.get("businessDays") is not None
    try:
        if calendars is None or not uses_calendar:
            return _compiled_by_key(*key)
        name = record.get("calendar")
        return _compiled_with(key, name, None if name is None else calendars.get(name))
    except TypeError:  # an unhashable field (a hand-made record): no caching
        schedule = record_schedule(record)
        return compile_schedule(schedule, calendars) if uses_calendar else _compiled(schedule)


@lru_cache(maxsize=16_384)
def _compiled_with(
    key: tuple[Any, ...], name: str | None, calendar: BusinessCalendar | None
) -> CompiledSchedule:
    # Keyed by the calendar's content (its digest): an edited calendar compiles anew.
    known = {} if name is None or calendar is None else {name: calendar}
    return compile_schedule(_schedule(*key), known if name is not None else None)


def freeze_specs(value: Any) -> Any:
    """A list field (`schedules`, `exclude`) as nested tuples, so it can key a cache; other
    values as they are. `thaw_specs` undoes it."""
    if not isinstance(value, list):
        return value
    frozen = []
    for item in value:
        if isinstance(item, dict):
            if not all(isinstance(v, str | int | None) for v in item.values()):
                return value  # not hashable as it stands: checked uncached
            item = tuple(sorted(item.items(), key=lambda kv: str(kv[0])))
        elif not isinstance(item, str | int | None):
            return value
        frozen.append(item)
    return tuple(frozen)


def thaw_specs(value: Any) -> Any:
    """The JSON form of a `freeze_specs` result."""
    if not isinstance(value, tuple):
        return value
    return [dict(item) if isinstance(item, tuple) else item for item in value]


def specs_as_json(specs: Any) -> Any:
    """The record's `schedules` entries in their JSON form (`phase` as ISO text, absent
    fields left out); anything else as it is, for the validator to refuse."""
    if not isinstance(specs, list):
        return specs
    out: list[Any] = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            out.append(spec)
            continue
        entry = {k: v for k, v in spec.items() if v is not None}
        phase = entry.get("phase")
        if isinstance(phase, int) and not isinstance(phase, bool):
            entry["phase"] = format_utc(phase)
        out.append(entry)
    return out


def record_adjustments(spec: Mapping[str, Any], schedule: Schedule) -> dict[str, Any]:
    """The record fields of a validated JSON definition's `schedules`, `exclude`,
    `calendar` and `businessDays` (JobDefinition v5)."""
    specs = spec.get("schedules")
    return {
        "schedules": None
        if not specs
        else [
            {
                "cron": entry.get("cron"),
                "every": entry.get("every"),
                "phase": parse_instant_field(entry.get("phase"), "phase"),
            }
            for entry in specs
        ],
        "exclude": None if spec.get("exclude") is None else list(spec["exclude"]),
        "calendar": spec.get("calendar"),
        "businessDays": spec.get("businessDays"),
    }
