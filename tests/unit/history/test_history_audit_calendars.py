"""The schedule audit owes a calendar job's slots where the timer fired them: compiled from the
recorded record with the calendar version in force at the time (decisions 0110, 0111), so a
holiday-moved slot is not reported `missing` at its unmoved instant. Pure: rows in, slots out.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.timefmt import format_utc, parse_iso_ms
from tickwheel.history import expected_slots, schedules_in_force
from tickwheel.sdk.jobs import validate_job

CREATED = parse_iso_ms("2026-06-01T00:00:00Z", "created")
SPEC = {"jobId": "payout", "type": "noop", "cron": "0 18 L * *", "timezone": "Europe/London",
        "calendar": "uk", "businessDays": "previous", "jitter": "0s"}  # fmt: skip
WINDOW = (parse_iso_ms("2026-07-01T00:00:00Z", "from"), parse_iso_ms("2026-10-01T00:00:00Z", "to"))
JULY, SEPTEMBER = "2026-07-31T17:00:00Z", "2026-09-30T17:00:00Z"
MOVED, UNMOVED = "2026-08-28T17:00:00Z", "2026-08-31T17:00:00Z"  # 31 Aug: a bank holiday


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_time": dt.datetime.fromtimestamp(record["updatedAt"] / 1000, dt.UTC),
        "version": record["version"], "deleted": False, "enabled": True,
        "schedule_kind": "cron", "cron": record["cron"], "timezone": record["timezone"],
        "run_at": None, "definition": json.dumps(record),
    }  # fmt: skip


def _uk(*dates: str) -> Any:
    return make_calendar("uk", [parse_date(d, "uk") for d in dates])


def _owed(calendars: dict[str, Any] | None) -> list[str]:
    rows = [_row(validate_job(dict(SPEC), CREATED))]
    owed, paused = expected_slots(schedules_in_force(rows, *WINDOW, calendars))
    assert paused == []
    return [format_utc(s) for s in owed]


def test_a_slot_moved_by_the_calendar_in_force_is_owed_where_it_fired() -> None:
    # The holiday was in the calendar from before the window: August's slot is the 28th.
    versions = {"uk": [(CREATED, _uk("2026-08-31"))]}
    assert _owed(versions) == [JULY, MOVED, SEPTEMBER]


def test_a_calendar_edit_counts_from_when_it_was_made() -> None:
    # Made on 20 August, before the 28th: August is owed on the 28th.
    early = parse_iso_ms("2026-08-20T00:00:00Z", "edit")
    assert _owed({"uk": [(CREATED, _uk()), (early, _uk("2026-08-31"))]}) == [
        JULY, MOVED, SEPTEMBER,
    ]  # fmt: skip
    # Made on 29 August: the old version's slot (the 31st) falls after the edit, the new one's
    # (the 28th) before it, so neither owes August; the timer's catch-up of the 28th is its
    # misfire policy's business, not a promise the audit checks.
    late = parse_iso_ms("2026-08-29T00:00:00Z", "edit")
    assert _owed({"uk": [(CREATED, _uk()), (late, _uk("2026-08-31"))]}) == [JULY, SEPTEMBER]


def test_a_deleted_calendar_owes_nothing_and_an_unrecorded_one_counts_weekends() -> None:
    deleted = parse_iso_ms("2026-08-01T00:00:00Z", "delete")
    assert _owed({"uk": [(CREATED, _uk("2026-08-31")), (deleted, None)]}) == [JULY]
    assert _owed(None) == [JULY, UNMOVED, SEPTEMBER]
