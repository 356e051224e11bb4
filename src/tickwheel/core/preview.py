"""User-facing preview: the next occurrences exactly as the timer will fire them.

Rows show the scheduled instant (before jitter) in UTC and in the schedule's zone with
the offset in effect, plus a note where the DST policy changed what a naive reading of
the cron expression suggests (a shifted non-existent time, a repeated hour) and where a
calendar moved slots onto it (from which days, and why they were not business days).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from tickwheel.core.bounds import CompiledBounded
from tickwheel.core.business_days import CompiledAdjusted
from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.enumerated import CompiledUnion
from tickwheel.core.schedule import CompiledCron, Schedule, compile_schedule, parse_schedule
from tickwheel.core.timefmt import format_local, format_utc, to_datetime
from tickwheel.core.wallclock import days_from_civil
from tickwheel.errors import InvalidInput

MAX_PREVIEW_COUNT = 1000


@dataclass(frozen=True, slots=True)
class PreviewRow:
    """One upcoming occurrence: `utc` like `2024-03-10T07:00:00Z`, `local` like
    `2024-03-10T03:00:00-04:00`, the zone's abbreviation, and an optional DST `note`."""

    scheduled_ms: int
    utc: str
    local: str
    abbreviation: str
    note: str | None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (camelCase keys, as the CLI prints with --json)."""
        return {
            "scheduledMs": self.scheduled_ms,
            "utc": self.utc,
            "local": self.local,
            "abbreviation": self.abbreviation,
            "note": self.note,
        }


def _parts(compiled: CompiledSchedule) -> tuple[CompiledAdjusted | None, list[CompiledSchedule]]:
    """The adjusted layer (if any) and the specs under it, bounds unwrapped."""
    if isinstance(compiled, CompiledBounded):
        compiled = compiled.base
    adjusted = compiled if isinstance(compiled, CompiledAdjusted) else None
    base = adjusted.base if adjusted is not None else compiled
    parts = list(base.parts) if isinstance(base, CompiledUnion) else [base]
    return adjusted, parts


_GAP_NOTE = (
    "the scheduled local time does not exist on this day (clocks went forward); "
    "fires at the first valid instant after the gap"
)


def _dst_note(compiled: CompiledCron, zone: ZoneInfo, ms: int) -> str | None:
    local = to_datetime(ms).astimezone(zone)
    naive = local.replace(tzinfo=None)
    wall = int((naive - datetime(1970, 1, 1)).total_seconds())
    if compiled.matcher.first_wall(wall, wall + 1) != wall:
        return _GAP_NOTE
    earlier = naive.replace(tzinfo=zone, fold=0).utcoffset()
    later = naive.replace(tzinfo=zone, fold=1).utcoffset()
    if earlier is not None and later is not None and earlier > later:
        which = "second" if local.fold else "first"
        rule = {
            "earlier": "fires only the first",
            "later": "fires only the second",
            "both": "fires both",
        }[compiled.fold]
        return (
            f"local time repeats (clocks went back): this is the {which} of the two; "
            f"the DST policy {rule}"
        )
    return None


def _move_note(adjusted: CompiledAdjusted, zone: ZoneInfo, ms: int) -> str | None:
    """Which slots a calendar moved onto `ms`, and why their days were not business days."""
    sources = [x for x in adjusted.sources_of(ms) if x != ms]
    if not sources:
        return None
    calendar = adjusted.calendar
    named = adjusted.adjustment.calendar
    described = []
    for x in sources:
        local = to_datetime(x).astimezone(zone)
        day = days_from_civil(local.year, local.month, local.day)
        why = "a weekend"
        if calendar is not None and day in calendar.holidays:
            why = f"a holiday in {named!r}"
        described.append(f"{local.strftime('%a %Y-%m-%d %H:%M')} ({why})")
    note = f"calendar: moved here from {', '.join(described)}"
    moved_wall = to_datetime(ms).astimezone(zone).strftime("%H:%M:%S")
    if any(to_datetime(x).astimezone(zone).strftime("%H:%M:%S") != moved_wall for x in sources):
        note += "; " + _GAP_NOTE
    return note


def _note(compiled: CompiledSchedule, zone: ZoneInfo, ms: int) -> str | None:
    adjusted, parts = _parts(compiled)
    notes: list[str] = []
    if adjusted is not None:
        moved = _move_note(adjusted, zone, ms)
        if moved is not None:
            notes.append(moved)
    for part in parts:
        # An interval is real elapsed time: clock changes do not move it.
        if isinstance(part, CompiledCron) and part.next_after(ms - 1) == ms:
            dst = _dst_note(part, zone, ms)
            if dst is not None and all(dst not in note for note in notes):
                notes.append(dst)
    return "; ".join(notes) or None


def slot_note(compiled: CompiledSchedule, timezone: str, ms: int) -> str | None:
    """The note `preview` gives slot `ms` of `compiled` (a DST shift, a repeated hour, the
    calendar moves onto it), for callers that walk the slots themselves (the API's
    occurrences)."""
    return _note(compiled, ZoneInfo(timezone), ms)


def preview_schedule(
    schedule: Schedule,
    from_ms: int,
    count: int,
    calendars: Mapping[str, BusinessCalendar] | None = None,
) -> list[PreviewRow]:
    """The next `count` occurrences of a validated schedule strictly after `from_ms`,
    before jitter, compiled with `calendars` exactly as the timer compiles it."""
    if not 1 <= count <= MAX_PREVIEW_COUNT:
        raise InvalidInput("count", f"{count} is out of range; accepted: 1 to {MAX_PREVIEW_COUNT}")
    compiled = compile_schedule(schedule, calendars)
    zone = ZoneInfo(schedule.timezone)
    rows: list[PreviewRow] = []
    t = from_ms
    for _ in range(count):
        nxt = compiled.next_after(t)
        if nxt is None:
            break
        rows.append(
            PreviewRow(
                scheduled_ms=nxt,
                utc=format_utc(nxt),
                local=format_local(nxt, zone),
                abbreviation=to_datetime(nxt).astimezone(zone).tzname() or "",
                note=_note(compiled, zone, nxt),
            )
        )
        t = nxt
    return rows


def preview(
    cron: str | None,
    timezone: str | None,
    from_ms: int,
    count: int,
    *,
    dst_policy: str | None = None,
    every: str | None = None,
    phase: str | None = None,
    schedules: object = None,
    exclude: object = None,
    calendar: str | None = None,
    business_days: str | None = None,
    calendars: Mapping[str, BusinessCalendar] | None = None,
) -> list[PreviewRow]:
    """The next `count` occurrences strictly after `from_ms`, before jitter.

    Validates like `parse_schedule` (raising `InvalidSchedule`); `count` must be 1-1000.
    `calendars` are the holiday calendars by name (None: weekends only).
    """
    if not 1 <= count <= MAX_PREVIEW_COUNT:
        raise InvalidInput("count", f"{count} is out of range; accepted: 1 to {MAX_PREVIEW_COUNT}")
    schedule = parse_schedule(
        cron=cron,
        timezone=timezone,
        dst_policy=dst_policy,
        every=every,
        phase=phase,
        schedules=schedules,
        exclude=exclude,
        calendar=calendar,
        business_days=business_days,
    )
    return preview_schedule(schedule, from_ms, count, calendars)
