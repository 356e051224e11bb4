"""User-facing preview: the next occurrences exactly as the timer will fire them.

Rows show the scheduled instant (before jitter) in UTC and in the schedule's zone with
the offset in effect, plus a note where the DST policy changed what a naive reading of
the cron expression suggests (a shifted non-existent time, a repeated hour).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from tickwheel.core.bounds import CompiledBounded
from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.schedule import CompiledCron, compile_schedule, parse_schedule
from tickwheel.core.timefmt import format_local, format_utc, to_datetime
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


def _note(compiled: CompiledSchedule, zone: ZoneInfo, ms: int) -> str | None:
    if isinstance(compiled, CompiledBounded):
        compiled = compiled.base
    if not isinstance(compiled, CompiledCron):
        return None  # an interval is real elapsed time: clock changes do not move it
    local = to_datetime(ms).astimezone(zone)
    naive = local.replace(tzinfo=None)
    wall = int((naive - datetime(1970, 1, 1)).total_seconds())
    if compiled.matcher.first_wall(wall, wall + 1) != wall:
        return (
            "the scheduled local time does not exist on this day (clocks went forward); "
            "fires at the first valid instant after the gap"
        )
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


def preview(
    cron: str | None,
    timezone: str | None,
    from_ms: int,
    count: int,
    *,
    dst_policy: str | None = None,
    every: str | None = None,
    phase: str | None = None,
) -> list[PreviewRow]:
    """The next `count` occurrences strictly after `from_ms`, before jitter.

    Validates like `parse_schedule` (raising `InvalidSchedule`); `count` must be 1-1000.
    """
    if not 1 <= count <= MAX_PREVIEW_COUNT:
        raise InvalidInput("count", f"{count} is out of range; accepted: 1 to {MAX_PREVIEW_COUNT}")
    schedule = parse_schedule(
        cron=cron, timezone=timezone, dst_policy=dst_policy, every=every, phase=phase
    )
    compiled = compile_schedule(schedule)
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
