"""The holiday calendars the API compiles jobs with, so what it shows is what the timer fires.

A job naming a calendar (`calendar`) fires by that calendar's business days (decision 0079);
compiled without it, its next run, occurrences and preview would follow weekends only and
disagree with the timer on every holiday. The API reads the `calendars` topic like the timer
does (all of it, one partition, compacted) and keeps each calendar's last good version: a
record the timer refuses does not change what the timer follows, so it does not change what
the API shows either (decision 0111).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tickwheel.core.calendars import BusinessCalendar, calendar_from_record
from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.errors import InvalidInput

__all__ = ["CalendarSource", "CalendarsView", "compile_job", "uses_calendar"]

log = logging.getLogger("tickwheel.api")


class CalendarSource(Protocol):
    """Where the API reads calendars from: the topic, or a test's fixed set."""

    def known(self) -> Mapping[str, BusinessCalendar]: ...


class CalendarsView:
    """The `calendars` topic as `BusinessCalendar`s by name, read when first asked and brought
    up to the topic's end on every later ask (one watermark request when nothing is new), so a
    calendar put a moment ago is the one a preview uses."""

    def __init__(self, bootstrap: str | None) -> None:
        self.bootstrap = bootstrap
        self._offset = 0
        self._known: dict[str, BusinessCalendar] = {}
        self._lock = threading.Lock()

    def known(self) -> Mapping[str, BusinessCalendar]:
        from tickwheel.adapters.avro import UndecodableRecord, decode
        from tickwheel.adapters.kafka.reader import read_to_end
        from tickwheel.topology import topic_name

        with self._lock:
            topic = topic_name("calendars")
            for record in read_to_end(
                topic, [0], self.bootstrap, 30.0, from_offsets={0: self._offset}
            ):
                self._offset = record.offset + 1
                if record.key is None or not record.key_is_text:
                    continue
                if record.value is None:
                    self._known.pop(record.key, None)
                    continue
                try:
                    calendar = calendar_from_record(decode(record.value, "Calendar")[1])
                except (UndecodableRecord, InvalidInput) as exc:
                    log.warning(
                        "calendar record refused; its last good version stays",
                        extra={
                            "action": "api_calendar_refused",
                            "calendar": record.key,
                            "offset": record.offset,
                            "error": str(exc),
                        },
                    )
                    continue
                if calendar.name == record.key:
                    self._known[record.key] = calendar
            return dict(self._known)


def uses_calendar(record: Mapping[str, Any]) -> bool:
    """Whether a definition names a calendar (a business-day rule alone counts weekends only,
    and needs none)."""
    return record.get("calendar") is not None


def compile_job(
    known_calendars: Callable[[], Mapping[str, BusinessCalendar]], record: Mapping[str, Any]
) -> CompiledSchedule:
    """A stored definition's schedule as the timer compiles it: with its calendar from
    `known_calendars()` (`Backend.known_calendars`: read from the cluster), asked only when it
    names one (none known: no slot, as the timer gives none)."""
    if not uses_calendar(record):
        return compile_record_schedule(record)
    return compile_record_schedule(record, known_calendars())
