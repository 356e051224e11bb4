"""`calendars` records → rows of `calendar_events` (migration 0012, decision 0110). Pure.

A calendar's history is its records on the topic: each put is a row holding the whole
calendar at that version, each delete (a tombstone) a row with `deleted` set. Both take their
`event_id` from the record's place on the topic (one partition, compacted): the same record
redelivered is the same row, and two puts that raced to one version number stay two rows.
"""

from __future__ import annotations

from tickwheel.core.calendars import calendar_from_record
from tickwheel.errors import InvalidInput
from tickwheel.records import Calendar
from tickwheel.services.history.rows import Row, Source, UnstorableRecord, instant

__all__ = ["calendar_event_id", "calendar_row", "calendar_tombstone_row"]


def calendar_event_id(name: str, source: Source) -> str:
    """The id of one record of calendar `name`: its partition and offset."""
    return f"calendar:{name}:{source.partition}/{source.offset}"


def calendar_row(calendar: Calendar, source: Source) -> Row:
    """A `Calendar` record (a put) → a row of `calendar_events`, dated by its `updated_at`.

    A record the timer would refuse (a bad name or date) is `UnstorableRecord`: the history
    holds the versions jobs were compiled with, and the sink dead-letters the rest."""
    try:
        checked = calendar_from_record(calendar)
    except InvalidInput as exc:
        raise UnstorableRecord(f"calendar {exc.field}: {exc.message}") from None
    return {
        "event_id": calendar_event_id(checked.name, source),
        "event_time": instant(calendar["updated_at"], "updated_at"),
        "name": checked.name,
        "version": max(0, int(calendar["version"])),
        "deleted": False,
        "dates": sorted(str(date).strip() for date in calendar["dates"]),
        "weekend": sorted(checked.weekend),
        "description": calendar.get("description"),
        **source.columns(),
    }


def calendar_tombstone_row(name: str, source: Source) -> Row:
    """A tombstone on `calendars` (a delete) → a `deleted` row, dated by the record's Kafka
    timestamp (it carries no time of its own)."""
    return {
        "event_id": calendar_event_id(name, source),
        "event_time": instant(source.timestamp_ms, "timestamp"),
        "name": name,
        "version": 0,
        "deleted": True,
        "dates": [],
        "weekend": [],
        "description": None,
        **source.columns(),
    }
