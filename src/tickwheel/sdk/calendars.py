"""Holiday calendars on the cluster: put, get, list and delete them by name.

    from tickwheel.sdk.calendars import put_calendar
    put_calendar("uk", ["2026-12-25", "2026-12-28"], description="England and Wales")

A calendar is a `Calendar` record on the compacted `calendars` topic (key = its name): the
timer reads them all and compiles every job that names one in `calendar` with it, so a
changed calendar moves the next slots of those jobs without a restart (docs/schedules.md §5).
Dates are local dates (`YYYY-MM-DD`) in each job's own zone; the weekend is Saturday and
Sunday unless given.
"""

from __future__ import annotations

from collections.abc import Iterable

from tickwheel.clock import Clock, SystemClock
from tickwheel.core.calendars import (
    DEFAULT_WEEKEND,
    BusinessCalendar,
    calendar_from_record,
    calendar_record,
    check_calendar_name,
    parse_date,
)
from tickwheel.errors import TickwheelError
from tickwheel.records import Calendar

__all__ = [
    "UnknownCalendar",
    "delete_calendar",
    "get_calendar",
    "list_calendars",
    "load_calendars",
    "put_calendar",
]


class UnknownCalendar(TickwheelError, LookupError):
    """No calendar of that name is on the `calendars` topic."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no calendar named {name!r}; `tickwheel calendars list` shows them")
        self.name = name


def _topic() -> str:
    from tickwheel.topology import topic_name

    return topic_name("calendars")


def _latest(bootstrap: str | None) -> dict[str, Calendar | None]:
    """Every calendar's latest record by name (None: deleted); undecodable records left out."""
    # Imported here so `import tickwheel.sdk.calendars` stays cheap for previews.
    from tickwheel.adapters.avro import UndecodableRecord, decode_as
    from tickwheel.adapters.kafka.reader import read_to_end

    latest: dict[str, Calendar | None] = {}
    for record in read_to_end(_topic(), None, bootstrap):
        if record.key is None or not record.key_is_text:
            continue
        if record.value is None:
            latest[record.key] = None
            continue
        try:
            latest[record.key] = decode_as(Calendar, record.value)
        except UndecodableRecord:
            continue
    return latest


def get_calendar(name: str, *, bootstrap: str | None = None) -> Calendar:
    """The current `Calendar` record of `name`, or `UnknownCalendar`."""
    check_calendar_name(name, "name")
    record = _latest(bootstrap).get(name)
    if record is None:
        raise UnknownCalendar(name)
    return record


def list_calendars(*, bootstrap: str | None = None) -> list[Calendar]:
    """Every current calendar record, by name."""
    return sorted(
        (r for r in _latest(bootstrap).values() if r is not None), key=lambda r: r["name"]
    )


def load_calendars(*, bootstrap: str | None = None) -> dict[str, BusinessCalendar]:
    """Every current calendar as the core uses it (for previews that match the timer)."""
    out: dict[str, BusinessCalendar] = {}
    for record in list_calendars(bootstrap=bootstrap):
        out[record["name"]] = calendar_from_record(record)
    return out


def _publish(key: str, value: bytes | None, bootstrap: str | None) -> None:
    from tickwheel.adapters.kafka.producer import EventProducer

    producer = EventProducer(bootstrap)
    producer.send(_topic(), key, value)
    producer.flush()


def put_calendar(
    name: str,
    dates: Iterable[str],
    *,
    weekend: Iterable[int] = DEFAULT_WEEKEND,
    description: str | None = None,
    bootstrap: str | None = None,
    clock: Clock | None = None,
) -> Calendar:
    """Publish calendar `name` with these `YYYY-MM-DD` dates (replacing all of its dates), as
    its next version; returns the record once the broker has it. `InvalidInput` names a bad
    name or date."""
    from tickwheel.adapters.avro import encode

    check_calendar_name(name, "name")
    days = [parse_date(d, "dates") for d in dates]
    previous = _latest(bootstrap).get(name)
    record = calendar_record(
        name,
        days,
        weekend=weekend,
        version=1 if previous is None else int(previous["version"]) + 1,
        now_ms=int((clock or SystemClock()).now() * 1000),
        description=description,
    )
    _publish(name, encode("Calendar", record), bootstrap)
    return record


def delete_calendar(name: str, *, bootstrap: str | None = None) -> None:
    """Remove calendar `name` (a tombstone); jobs naming it stop firing until it is put again
    (the timer never guesses a calendar's holidays). `UnknownCalendar` if there is none."""
    get_calendar(name, bootstrap=bootstrap)
    _publish(name, None, bootstrap)
