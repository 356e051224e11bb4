"""`calendars` records as rows of `calendar_events`, and the query that reads them, without a
store or a broker (the real path is tests/integration/test_calendar_history.py)."""

from __future__ import annotations

import pytest

from tickwheel.history import analyst_queries
from tickwheel.services.history.calendar_rows import calendar_row, calendar_tombstone_row
from tickwheel.services.history.rows import Source, UnstorableRecord
from tickwheel.services.history.sink import default_routes

RECORD = {
    "name": "uk",
    "version": 3,
    "dates": ["2026-12-28", "2026-12-25"],
    "weekend": [6, 0],
    "description": "England and Wales",
    "updated_at": 1_790_000_000_000,
}


def test_a_put_is_a_row_with_the_whole_calendar_and_an_id_from_its_offset() -> None:
    row = calendar_row(RECORD, Source("p.calendars", 0, 41, 5))
    assert row["event_id"] == "calendar:uk:0/41"
    assert (row["name"], row["version"], row["deleted"]) == ("uk", 3, False)
    assert row["dates"] == ["2026-12-25", "2026-12-28"] and row["weekend"] == [0, 6]
    assert row["event_time"].timestamp() * 1000 == RECORD["updated_at"]
    # The same record redelivered is the same row; the next record is another.
    assert calendar_row(RECORD, Source("p.calendars", 0, 41, 9)) == row
    assert calendar_row(RECORD, Source("p.calendars", 0, 42, 5))["event_id"] != row["event_id"]


def test_a_delete_is_a_deleted_row_dated_by_its_kafka_timestamp() -> None:
    row = calendar_tombstone_row("uk", Source("p.calendars", 0, 43, 1_790_000_001_000))
    assert row["deleted"] and row["dates"] == [] and row["event_id"] == "calendar:uk:0/43"
    assert row["event_time"].timestamp() * 1000 == 1_790_000_001_000
    # A put and a delete of one calendar fill the same columns (one insert holds both).
    assert set(row) == set(calendar_row(RECORD, Source("p.calendars", 0, 41, 5)))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dates": ["2026-02-30"]}, "dates"),
        ({"name": "Bad Name"}, "name"),
        ({"weekend": [7]}, "weekend"),
    ],
)
def test_a_calendar_the_timer_would_refuse_is_unstorable(
    change: dict[str, object], field: str
) -> None:
    with pytest.raises(UnstorableRecord, match=field):
        calendar_row({**RECORD, **change}, Source("p.calendars", 0, 1, 0))


def test_the_sink_reads_the_calendars_topic_with_its_tombstones() -> None:
    routes = {route.table: route for route in default_routes().values()}
    assert routes["calendar_events"].tombstone is calendar_tombstone_row
    assert routes["job_definitions"].tombstone is not None
    assert routes["execution_events"].tombstone is None


def test_the_versions_query_binds_the_name_and_reads_final() -> None:
    query = analyst_queries()["calendar_versions"]
    assert set(query.params) == set(query.param_docs) == {"name"}
    assert "calendar_events FINAL" in query.sql
