"""A holiday calendar's history: every version recorded from the `calendars` topic, each with
the dates it added and removed (docs/history.md, "Calendar history"; decision 0110).

It runs `topology/clickhouse/queries/calendar_versions.sql` on a store or an owner client.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tickwheel.core.calendars import check_calendar_name
from tickwheel.errors import TickwheelError
from tickwheel.history._queries import run_query
from tickwheel.history._reader import HistoryReader

__all__ = ["CalendarNotRecorded", "calendar_history"]


class CalendarNotRecorded(TickwheelError, LookupError):
    """The history holds no record of this calendar."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"no calendar {name!r} in the history (never put, not yet recorded by the history "
            "sink, or older than the retention); `tickwheel calendars list` shows the current ones"
        )
        self.name = name


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def calendar_history(reader: HistoryReader, name: str) -> list[dict[str, Any]]:
    """Every recorded version of calendar `name`, oldest first, as JSON-able dicts: `version`,
    `event_time` (ISO 8601), `deleted`, `dates`, `weekend`, `description`, `added`, `removed`,
    `weekend_changed`. `InvalidInput` for a bad name; `CalendarNotRecorded` when there is none."""
    check_calendar_name(name, "name")
    rows = run_query(reader, "calendar_versions", {"name": name}).as_dicts()
    if not rows:
        raise CalendarNotRecorded(name)
    return [{key: _jsonable(value) for key, value in row.items()} for row in rows]
