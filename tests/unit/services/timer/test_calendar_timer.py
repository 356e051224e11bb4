"""The timer fires calendar jobs exactly as the preview shows them, and follows a changed
calendar from the next slot on: a partition timer driven by a fake clock (plain ms)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.core._settings import EXAMPLES, PROPS
from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.preview import preview
from tickwheel.core.timefmt import format_utc, parse_iso_ms
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.calendars import CALENDARS, reapply
from tickwheel.services.timer.scheduler import PartitionTimer

HOUR = 3_600_000
START = parse_iso_ms("2027-01-20T00:00:00Z", "start")  # a Wednesday


def _calendar(name: str, *dates: str) -> Any:
    return make_calendar(name, [parse_date(d, "dates") for d in dates])


@pytest.fixture
def calendar_name() -> Iterator[str]:
    """A calendar name of the test's own, removed from the process's book afterwards."""
    name = "test-uk"
    yield name
    CALENDARS.put(name, None)


def _fired(timer: PartitionTimer, start: int, end: int) -> list[int]:
    slots = []
    for now in range(start, end + 1, HOUR // 4):  # bounded: one tick per quarter hour
        # First attempts only: with no worker here, dispatch deadlines re-issue each request.
        slots.extend(r["scheduled_time"] for r in timer.tick(now).requests if r["attempt"] == 1)
    return slots


def _timer(record: dict[str, Any], now: int) -> PartitionTimer:
    # Ticks of a minute: the wheel turns a slot per tick, and these jobs fire on whole minutes.
    timer = PartitionTimer(0, horizon_ms=HOUR, tick_ms=60_000, start_ms=now, max_batch=10_000)
    timer.load_definition(record["jobId"], record)
    timer.finish_restore(now)
    return timer


SPEC = {
    "type": "noop",
    "jitter": "0s",
    "cron": "0 9 * * *",
    "timezone": "Europe/London",
    "schedules": [{"cron": "30 17 L * *"}],
    "exclude": ["2027-02-03"],
    "businessDays": "next",
}


def test_the_timer_fires_every_slot_the_preview_shows_across_a_month_boundary(
    calendar_name: str,
) -> None:
    # Friday 29 January and Monday 1 February are holidays: the 29th's slots and the
    # weekend's move to Tuesday 2 February; 31 January's month-end slot (a Sunday) too.
    calendar = _calendar(calendar_name, "2027-01-29", "2027-02-01")
    CALENDARS.put(calendar_name, calendar)
    record = validate_job({"jobId": "payroll", "calendar": calendar_name, **SPEC}, START)
    timer = _timer(record, START)
    end = parse_iso_ms("2027-02-12T00:00:00Z", "end")
    fired = _fired(timer, START, end)
    rows = preview(
        "0 9 * * *", "Europe/London", START, 100, schedules=SPEC["schedules"],
        exclude=SPEC["exclude"], calendar=calendar_name, business_days="next",
        calendars={calendar_name: calendar},
    )  # fmt: skip
    shown = [r.scheduled_ms for r in rows if r.scheduled_ms <= end]
    assert fired == shown
    assert len(fired) == len(set(fired))
    days = [format_utc(s)[:10] for s in fired]
    assert "2027-01-29" not in days and "2027-02-01" not in days  # holidays
    assert "2027-02-03" not in days  # excluded
    assert "2027-01-30" not in days and "2027-01-31" not in days  # the weekend
    # Tuesday 2 February: its own 09:00, and 17:30 from the Sunday month end.
    assert [format_utc(s) for s in fired if format_utc(s).startswith("2027-02-02")] == [
        "2027-02-02T09:00:00Z",
        "2027-02-02T17:30:00Z",
    ]


def test_a_calendar_edit_moves_the_next_slots_without_a_restart(calendar_name: str) -> None:
    CALENDARS.put(calendar_name, _calendar(calendar_name))
    record = validate_job(
        {"jobId": "payout", "type": "noop", "jitter": "0s", "cron": "0 9 * * *",
         "timezone": "Europe/London", "calendar": calendar_name, "businessDays": "skip"},
        START,
    )  # fmt: skip
    timer = _timer(record, START)
    before = _fired(timer, START, parse_iso_ms("2027-01-25T12:00:00Z", "t"))
    assert [format_utc(s)[:10] for s in before] == [
        "2027-01-20", "2027-01-21", "2027-01-22", "2027-01-25",
    ]  # fmt: skip
    # Tuesday 26 and Wednesday 27 become holidays while the timer runs.
    now = parse_iso_ms("2027-01-25T12:00:00Z", "t")
    CALENDARS.put(calendar_name, _calendar(calendar_name, "2027-01-26", "2027-01-27"))
    emission = reapply(timer, CALENDARS, now)
    assert "payout" in emission.states  # the change is persisted with the job's state
    after = _fired(timer, now + 1, parse_iso_ms("2027-01-29T12:00:00Z", "t"))
    assert [format_utc(s)[:10] for s in after] == ["2027-01-28", "2027-01-29"]
    # Nothing it already fired fires again, and an unchanged book changes nothing.
    assert not set(before) & set(after)
    assert not reapply(timer, CALENDARS, now)


def test_a_job_whose_calendar_is_unknown_waits_then_owes_its_slots(calendar_name: str) -> None:
    record = validate_job(
        {"jobId": "late", "type": "noop", "jitter": "0s", "cron": "0 9 * * *",
         "calendar": calendar_name, "misfirePolicy": "catch_up"},
        START,
    )  # fmt: skip
    timer = _timer(record, START)
    noon = parse_iso_ms("2027-01-21T12:00:00Z", "t")
    assert _fired(timer, START, noon) == []  # no calendar, no guess
    CALENDARS.put(calendar_name, _calendar(calendar_name))
    emission = reapply(timer, CALENDARS, noon)
    assert [format_utc(r["scheduled_time"]) for r in emission.requests] == [
        "2027-01-20T09:00:00Z",
        "2027-01-21T09:00:00Z",
    ]
    assert all(r["trigger"] == "catch_up" for r in emission.requests)


YEAR_2026 = parse_iso_ms("2026-01-01T00:00:00Z", "t")
SPECS = [{"cron": "0 9 * * *"}, {"cron": "30 17 L * *"}, {"cron": "15 */6 * * MON-FRI"},
         {"every": "7h"}, {"cron": "30 2 * * SUN"}]  # fmt: skip


@settings(PROPS, max_examples=max(20, EXAMPLES // 6))
@given(
    specs=st.lists(st.sampled_from(SPECS), min_size=1, max_size=2, unique_by=str),
    zone=st.sampled_from(["Europe/London", "America/New_York", "Australia/Sydney"]),
    rule=st.sampled_from(["skip", "next", "previous"]),
    start=st.integers(0, 5 * 365).map(lambda d: YEAR_2026 + d * 86_400_000),
    holidays=st.sets(st.integers(0, 20), max_size=6),
    exclude_day=st.one_of(st.none(), st.integers(0, 20)),
)
def test_the_timer_and_the_preview_agree_on_every_slot(
    specs: list[dict[str, str]], zone: str, rule: str, start: int, holidays: set[int],
    exclude_day: int | None,
) -> None:  # fmt: skip
    name = "prop-cal"
    days = [format_utc(start + k * 86_400_000)[:10] for k in sorted(holidays)]
    calendar = _calendar(name, *days)
    CALENDARS.put(name, calendar)
    try:
        exclude = (
            None if exclude_day is None else [format_utc(start + exclude_day * 86_400_000)[:10]]
        )
        spec = {"type": "noop", "jitter": "0s", "timezone": zone, "schedules": specs,
                "calendar": name, "businessDays": rule, "exclude": exclude}  # fmt: skip
        try:
            record = validate_job({"jobId": "p", **{k: v for k, v in spec.items() if v}}, start)
        except InvalidInput:
            return  # nothing left to fire: refused (test_calendar_schedules pins it)
        end = start + 20 * 86_400_000
        fired = _fired(_timer(record, start), start, end)
        rows = preview(
            None, zone, start, 1000, schedules=specs, exclude=exclude, calendar=name,
            business_days=rule, calendars={name: calendar},
        )  # fmt: skip
        assert fired == [r.scheduled_ms for r in rows if r.scheduled_ms <= end]
    finally:
        CALENDARS.put(name, None)


class _Message:
    """What the follower reads from the calendars topic (a consumed Kafka message's surface)."""

    def __init__(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        self._key, self._value, self._offset = key, value, offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def topic(self) -> str:
        return "calendars"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def headers(self) -> None:
        return None

    def error(self) -> None:
        return None


def test_the_follower_keeps_the_last_good_calendar_and_dead_letters_a_bad_record() -> None:
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients, MemoryPartitionReader
    from tickwheel.core.calendars import calendar_record
    from tickwheel.services.timer.calendars import CalendarBook, CalendarFollower

    book = CalendarBook()
    rejected: list[tuple[Any, Exception]] = []
    broker = MemoryBroker()
    follower = CalendarFollower(
        MemoryClients(broker), MemoryPartitionReader(broker), "calendars", book,
        dead_letter=lambda r, e: rejected.append((r, e)),
    )  # fmt: skip
    try:
        good = calendar_record("uk", [parse_date("2027-01-29", "d")], version=1, now_ms=START)
        assert follower._apply(_Message(b"uk", encode("Calendar", good), 0))
        assert book.known["uk"].holidays == {parse_date("2027-01-29", "d")}
        generation = book.generation
        # Not a Calendar at all, then one whose name is not its key: both refused.
        assert not follower._apply(_Message(b"uk", b"\x00garbage", 1))
        renamed = {**good, "name": "de"}
        assert not follower._apply(_Message(b"uk", encode("Calendar", renamed), 2))
        assert [r.offset for r, _ in rejected] == [1, 2]
        assert book.generation == generation and "uk" in book.known
        assert not follower._apply(_Message(b"uk", encode("Calendar", good), 3))  # the same
        assert follower._apply(_Message(b"uk", None, 4))  # a tombstone deletes it
        assert "uk" not in book.known
    finally:
        follower.close()
