"""The expected-versus-actual audit of one recurring job over a window.

Expected occurrences come from the scheduling core (`parse_schedule` + `compile_schedule`),
applied to the definitions the history recorded for the job; what became of each comes from
`execution_events` (the `schedule_audit` query). Every expected slot ends up `fired`,
`skipped` (by policy, as the timer recorded it), `missing` (nothing recorded: a broken
promise), or `paused` (the job was disabled then, so nothing was owed).

How the definitions map to expected slots (`expected_slots`): version v is in force from its
`updatedAt` until the next recorded change; it owes the slots of its schedule strictly after
that instant (a job's first slot is strictly after its creation, as the timer computes it).
A disabled version owes nothing (its slots are reported as `paused`); a deletion ends the job.

A version is compiled from its recorded record as the timer compiles it (intervals, several
specs, exclusions, bounds), and one naming a holiday calendar with the calendar's version in
force at the time (`calendar_events`, decision 0110): a version's span is cut where its
calendar changed, each part compiled with the calendar then current, so a holiday-moved slot
is owed where the timer fired it. Before the first recorded version the first is assumed; a
calendar the history never recorded counts weekends only, as validation does.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tickwheel.core.calendars import BusinessCalendar, calendar_from_record
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.schedule import CompiledSchedule, compile_schedule, parse_schedule
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.history._queries import run_query
from tickwheel.history._reader import HistoryReader

#: The most slots one audit lists; a longer window is an error, not a slow query.
MAX_AUDIT_SLOTS = 100_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class ScheduleInForce:
    """One definition version's schedule over the part of the window it governed."""

    version: int
    from_ms: int  # exclusive: slots strictly after
    to_ms: int  # inclusive
    enabled: bool
    compiled: CompiledSchedule | None  # None once the job is deleted
    cron: str | None
    timezone: str | None


def _to_ms(value: dt.datetime) -> int:
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)


def _iso_ms(ms: int) -> str:
    return (_EPOCH + dt.timedelta(milliseconds=ms)).isoformat()


#: A calendar's recorded versions: (from when, epoch ms; the calendar, None once deleted).
CalendarVersions = Sequence[tuple[int, BusinessCalendar | None]]


def _definition(row: Mapping[str, Any]) -> dict[str, Any]:
    if not row.get("definition"):
        return {}
    try:
        value = json.loads(row["definition"])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _compile(
    row: Mapping[str, Any], calendars: Mapping[str, BusinessCalendar] | None = None
) -> CompiledSchedule | None:
    if row["deleted"]:
        return None
    definition = _definition(row)
    if definition.get("jobId") is not None:
        # The recorded record itself: the timer's own compile (every schedule field).
        try:
            return compile_record_schedule(definition, calendars)
        except (TickwheelError, KeyError, TypeError, ValueError):
            pass  # a record older than some field's rules: its cron, as before
    if row["schedule_kind"] == "cron" and row.get("cron"):
        schedule = parse_schedule(
            cron=row["cron"], timezone=row.get("timezone"), dst_policy=definition.get("dstPolicy")
        )
    elif row.get("run_at") is not None:
        schedule = parse_schedule(run_at=row["run_at"].isoformat())
    else:
        return None
    return compile_schedule(schedule)


def _calendar_cuts(
    name: str | None, versions: Mapping[str, CalendarVersions], lo: int, hi: int
) -> list[tuple[int, int, Mapping[str, BusinessCalendar] | None]]:
    """(from, to, calendars) parts of the span (lo, hi]: one per calendar version in force."""
    recorded = versions.get(name) if name is not None else None
    if not recorded:
        return [(lo, hi, None)]
    parts: list[tuple[int, int, Mapping[str, BusinessCalendar] | None]] = []
    for index, (since, calendar) in enumerate(recorded):
        begins = lo if index == 0 else max(lo, since)
        ends = hi if index + 1 == len(recorded) else min(hi, recorded[index + 1][0])
        if ends > begins:
            parts.append((begins, ends, {} if calendar is None else {calendar.name: calendar}))
    return parts


def schedules_in_force(
    versions: Sequence[Mapping[str, Any]],
    start_ms: int,
    end_ms: int,
    calendar_versions: Mapping[str, CalendarVersions] | None = None,
) -> list[ScheduleInForce]:
    """The recorded definitions (rows of `job_definition_versions`, oldest first) cut to the
    window [start_ms, end_ms), and where a definition's calendar changed
    (`calendar_versions`: by name, oldest first)."""
    spans: list[ScheduleInForce] = []
    for index, row in enumerate(versions):
        begins = _to_ms(row["event_time"])
        ends = _to_ms(versions[index + 1]["event_time"]) if index + 1 < len(versions) else None
        lo = max(begins, start_ms - 1)
        hi = end_ms - 1 if ends is None else min(ends, end_ms - 1)
        if hi <= lo:
            continue
        name = None if row["deleted"] else _definition(row).get("calendar")
        for part_lo, part_hi, calendars in _calendar_cuts(name, calendar_versions or {}, lo, hi):
            spans.append(
                ScheduleInForce(
                    version=int(row["version"]),
                    from_ms=part_lo,
                    to_ms=part_hi,
                    enabled=bool(row["enabled"]) and not row["deleted"],
                    compiled=_compile(row, calendars),
                    cron=row.get("cron"),
                    timezone=row.get("timezone"),
                )
            )
    return spans


def recorded_calendars(reader: HistoryReader, names: Sequence[str]) -> dict[str, CalendarVersions]:
    """Each named calendar's versions as `calendar_events` recorded them (none: left out)."""
    from tickwheel.history._calendars import CalendarNotRecorded, calendar_history

    out: dict[str, CalendarVersions] = {}
    for name in sorted(set(names)):
        try:
            history = calendar_history(reader, name)
        except (CalendarNotRecorded, InvalidInput):
            continue
        out[name] = [
            (
                _to_ms(dt.datetime.fromisoformat(entry["event_time"])),
                None
                if entry["deleted"]
                else calendar_from_record(
                    {"name": name, "dates": entry["dates"], "weekend": entry["weekend"]}
                ),
            )
            for entry in history
        ]
    return out


def expected_slots(spans: Sequence[ScheduleInForce]) -> tuple[list[int], list[int]]:
    """(owed slots, paused slots) in the spans, each sorted; raises past `MAX_AUDIT_SLOTS`."""
    owed: set[int] = set()
    paused: set[int] = set()
    total = 0
    for span in spans:
        if span.compiled is None:
            continue
        total += span.compiled.count(span.from_ms, span.to_ms)
        if total > MAX_AUDIT_SLOTS:
            raise InvalidInput(
                "window",
                f"the audit would list over {MAX_AUDIT_SLOTS} occurrences; audit a shorter window",
            )
        slots = span.compiled.occurrences(span.from_ms, span.to_ms)
        (owed if span.enabled else paused).update(slots)
    return sorted(owed), sorted(paused - owed)


class AuditedSlot(NamedTuple):
    """What became of one expected slot (a row of the audit, before any formatting; a tuple:
    a month of a per-minute job is 43,200 of them, at half a frozen dataclass's cost)."""

    slot_ms: int
    status: str  # fired, skipped, missing, paused
    execution_id: str | None
    trigger: str | None
    fire_time: dt.datetime | None
    requested_at: dt.datetime | None
    lateness_ms: int | None
    outcome: str | None
    skip_reason: str | None


@dataclass(frozen=True)
class AuditedWindow:
    """The audit of one window as values: the schedules in force, how many slots were owed,
    and every expected slot (owed or paused) with what became of it, in slot order."""

    spans: list[ScheduleInForce]
    expected: int
    slots: list[AuditedSlot]


def _ms_of(value: dt.datetime) -> int:
    # An aware datetime's epoch ms: `timestamp()` is exact to the microsecond for any date
    # the history holds, and ten times cheaper than datetime arithmetic for 43,200 slots.
    return round(value.timestamp() * 1000)


def audit_window(
    reader: HistoryReader,
    job_id: str,
    start_ms: int,
    end_ms: int,
    *,
    cron: str | None = None,
    timezone: str | None = None,
    dst_policy: str | None = None,
) -> AuditedWindow:
    """`schedule_audit` as values, for a caller that draws the slots (the console's grid)
    rather than printing them: no ISO text built for each of a month's 43,200 slots."""
    if end_ms <= start_ms:
        raise InvalidInput("window", "--to must be after --from")
    if cron is not None:
        compiled = compile_schedule(
            parse_schedule(cron=cron, timezone=timezone, dst_policy=dst_policy)
        )
        spans = [
            ScheduleInForce(0, start_ms - 1, end_ms - 1, True, compiled, cron, timezone or "UTC")
        ]
    else:
        versions = run_query(reader, "job_definition_versions", {"job_id": job_id}).as_dicts()
        if not versions:
            raise InvalidInput(
                "job",
                f"the history has no definition of job {job_id!r}; pass --cron to audit "
                "a schedule anyway",
            )
        names = [n for row in versions if (n := _definition(row).get("calendar")) is not None]
        calendars = recorded_calendars(reader, names) if names else {}
        spans = schedules_in_force(versions, start_ms, end_ms, calendars)
    owed, paused = expected_slots(spans)
    out: list[AuditedSlot] = []
    slots = sorted(set(owed) | set(paused))
    if slots:
        result = run_query(reader, "schedule_audit", {"job_id": job_id, "expected": slots})
        paused_set = set(paused)
        at = {name: index for index, name in enumerate(result.columns)}
        i_time, i_status, i_exec = at["scheduled_time"], at["status"], at["execution_id"]
        i_trigger, i_fire, i_asked = at["trigger"], at["fire_time"], at["requested_at"]
        i_late, i_outcome, i_skip = at["lateness_ms"], at["outcome"], at["skip_reason"]
        for row in result.rows:
            slot_ms = _ms_of(row[i_time])
            status = row[i_status]
            if status == "missing" and slot_ms in paused_set:
                status = "paused"
            out.append(
                AuditedSlot(
                    slot_ms,
                    status,
                    row[i_exec] or None,
                    row[i_trigger] or None,
                    row[i_fire] or None,
                    row[i_asked] or None,
                    row[i_late],
                    row[i_outcome] or None,
                    row[i_skip] or None,
                )
            )
    return AuditedWindow(spans, len(owed), out)


def schedule_audit(
    reader: HistoryReader,
    job_id: str,
    start_ms: int,
    end_ms: int,
    *,
    cron: str | None = None,
    timezone: str | None = None,
    dst_policy: str | None = None,
) -> dict[str, Any]:
    """Every occurrence `job_id` owed in [start_ms, end_ms) and what became of it.

    Without `cron`, the schedules come from the job's recorded definitions; with `cron` (and
    `timezone`, `dst_policy`), that schedule is audited for the whole window instead.
    Returns a JSON-able dict: counts per status and one entry per occurrence.
    """
    window = audit_window(
        reader, job_id, start_ms, end_ms, cron=cron, timezone=timezone, dst_policy=dst_policy
    )
    rows: list[dict[str, Any]] = [
        {
            "scheduled_time": _iso_ms(slot.slot_ms),
            "status": slot.status,
            "execution_id": slot.execution_id,
            "trigger": slot.trigger,
            "fire_time": slot.fire_time.isoformat() if slot.fire_time else None,
            "requested_at": slot.requested_at.isoformat() if slot.requested_at else None,
            "lateness_ms": slot.lateness_ms,
            "outcome": slot.outcome,
            "skip_reason": slot.skip_reason,
        }
        for slot in window.slots
    ]
    counts = {status: 0 for status in ("fired", "skipped", "missing", "paused")}
    for slot in window.slots:
        counts[slot.status] += 1
    return {
        "job_id": job_id,
        "from": _iso_ms(start_ms),
        "to": _iso_ms(end_ms),
        "schedules": [
            {
                "version": span.version,
                "after": _iso_ms(span.from_ms),
                "through": _iso_ms(span.to_ms),
                "cron": span.cron,
                "timezone": span.timezone,
                "enabled": span.enabled,
            }
            for span in window.spans
        ],
        "expected": window.expected,
        **counts,
        "occurrences": rows,
    }
