"""The schedule of a stored `JobDefinition` record: one function for the timer and the SDK.

Records carry instants as epoch milliseconds (`runAt`, `phase`, `startAt`, `endAt`); the
JSON form as ISO text. Both go through `parse_schedule`, so a record compiles to exactly
the schedule its JSON form validated to. Cached: a million jobs share a few thousand
schedules, and a restore compiles each once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.schedule import Schedule, compile_schedule, parse_schedule
from tickwheel.core.timefmt import format_utc

__all__ = ["compile_record_schedule", "record_schedule"]


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
    )


@lru_cache(maxsize=65_536)
def _schedule(
    cron: Any, timezone: Any, dst_policy: Any, run_at: Any, every: Any, phase: Any,
    start_at: Any, end_at: Any, max_runs: Any, count_from: Any,
) -> Schedule:  # fmt: skip
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


def compile_record_schedule(record: Mapping[str, Any]) -> CompiledSchedule:
    """The shared compiled schedule of a decoded `JobDefinition` record (cached)."""
    key = _key(record)
    try:
        return _compiled_by_key(*key)
    except TypeError:  # an unhashable field (a hand-made record): no caching
        return _compiled(record_schedule(record))
