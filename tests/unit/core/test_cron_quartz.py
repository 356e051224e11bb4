"""Quartz day terms and wrap-around ranges, against two oracles (docs/schedules.md).

* An independent oracle (`_quartz_oracle`, a search over each month's real dates) for
  every term, over 2020-2035 in several zones.
* croniter 5, where its semantics are ours: `L` in day-of-month, `Ld` and `d#n` in
  day-of-week with the other day field `*`, and ranges that wrap. Where they differ
  (croniter ANDs a restricted day-of-month with `#`/`L` weekday terms; it has no `W`,
  `L-n`, `LW`) the written semantics win, and the table below pins ours.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.core._quartz_oracle import quartz_day_matches
from tests.unit.core._settings import EXAMPLES, PROPS
from tickwheel.core.cron import parse_cron
from tickwheel.core.describe import describe
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.schedule import compile_schedule, parse_schedule

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Asia/Kolkata"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def _ms(d: datetime) -> int:
    return int((d - EPOCH).total_seconds() * 1000)


def _local(ms: int, zone: str) -> datetime:
    return (EPOCH + timedelta(milliseconds=ms)).astimezone(ZoneInfo(zone))


DOM_ITEM = st.one_of(
    st.integers(1, 31).map(str),
    st.sampled_from(["L", "LW"]),
    st.integers(0, 30).map(lambda n: f"L-{n}"),
    st.integers(1, 31).map(lambda n: f"{n}W"),
)
DOW_ITEM = st.one_of(
    st.integers(0, 6).map(str),
    st.one_of(st.integers(0, 7).map(str), st.sampled_from(_DAYS)).map(lambda d: f"{d}L"),
    st.tuples(st.sampled_from(_DAYS), st.integers(1, 5)).map(lambda t: f"{t[0]}#{t[1]}"),
)
DOM = st.one_of(st.just("*"), st.lists(DOM_ITEM, min_size=1, max_size=3).map(",".join))
DOW = st.one_of(st.just("*"), st.lists(DOW_ITEM, min_size=1, max_size=3).map(",".join))
MONTH = st.one_of(st.just("*"), st.lists(st.integers(1, 12), min_size=1, max_size=3).map(
    lambda ms: ",".join(map(str, ms))
))  # fmt: skip


@settings(PROPS, max_examples=max(30, EXAMPLES // 3))
@given(DOM, MONTH, DOW, st.sampled_from(ZONES))
def test_every_term_fires_on_the_dates_the_oracle_finds_2020_to_2035(
    dom: str, month: str, dow: str, zone: str
) -> None:
    expression = f"0 12 {dom} {month} {dow}"
    try:
        fields = parse_cron(expression)
    except InvalidSchedule as exc:
        # Only never-firing combinations are refused (e.g. 31W in February alone).
        assert "can never fire" in exc.message, exc.message
        return
    compiled = compile_schedule(parse_schedule(cron=expression, timezone=zone))
    start = datetime(2020, 1, 1, tzinfo=ZoneInfo(zone))
    end = datetime(2036, 1, 1, tzinfo=ZoneInfo(zone))
    got = [_local(ms, zone) for ms in compiled.occurrences(_ms(start), _ms(end))]
    assert all(t.hour == 12 and t.minute == 0 for t in got)
    expected = [
        date(2020, 1, 1) + timedelta(days=i)
        for i in range((date(2036, 1, 1) - date(2020, 1, 1)).days)
        if quartz_day_matches(fields, date(2020, 1, 1) + timedelta(days=i))
    ]
    assert [t.date() for t in got] == expected, expression


CRONITER_SAME = st.one_of(
    st.tuples(st.just("L"), MONTH, st.just("*")),
    st.tuples(st.just("*"), MONTH, st.integers(0, 7).map(lambda d: f"L{d}")),
    st.tuples(st.just("*"), MONTH, st.tuples(st.integers(0, 6), st.integers(1, 5)).map(
        lambda t: f"{t[0]}#{t[1]}"
    )),
    st.tuples(st.just("1,L"), MONTH, st.just("*")),
)  # fmt: skip
WRAPS = st.one_of(
    st.tuples(st.integers(31, 59), st.integers(0, 29)).map(lambda t: f"{t[0]}-{t[1]} 3 * * *"),
    # croniter steps across a wrap inconsistently (`22-2/2` is 22,0,2 but `21-1/2` is
    # 21,23): stepped wraps are pinned by hand below, not compared.
    st.tuples(st.integers(13, 23), st.integers(0, 11)).map(lambda t: f"0 {t[0]}-{t[1]} * * *"),
    # croniter drops days after a short month from `29-n`..`31-n` (`30-1` skips Mar 1 after
    # February): wrap starts past the 28th are pinned by hand, not compared.
    st.tuples(st.integers(16, 28), st.integers(1, 15)).map(lambda t: f"0 0 {t[0]}-{t[1]} * *"),
    st.tuples(st.integers(7, 12), st.integers(1, 6)).map(lambda t: f"0 0 1 {t[0]}-{t[1]} *"),
    st.tuples(st.sampled_from(_DAYS[3:]), st.sampled_from(_DAYS[:3])).map(
        lambda t: f"0 0 * * {t[0]}-{t[1]}"
    ),
)
INSTANT = st.integers(_ms(datetime(2020, 1, 1, tzinfo=UTC)), _ms(datetime(2035, 1, 1, tzinfo=UTC)))


@PROPS
@given(st.one_of(CRONITER_SAME.map(lambda t: f"0 6 {t[0]} {t[1]} {t[2]}"), WRAPS), INSTANT)
def test_next_after_agrees_with_croniter_where_their_semantics_agree(
    expression: str, t_ms: int
) -> None:
    compiled = compile_schedule(parse_schedule(cron=expression))
    it = croniter(expression, EPOCH + timedelta(milliseconds=t_ms))
    t = t_ms
    for _ in range(5):
        expected = _ms(it.get_next(datetime).replace(tzinfo=UTC))
        got = compiled.next_after(t)
        assert got == expected, expression
        t = expected


# Hand-worked: (expression, first five dates from 2024-01-01, UTC, 00:00).
TABLE = [
    ("0 0 L * *", ["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30", "2024-05-31"]),
    ("0 0 L-2 * *", ["2024-01-29", "2024-02-27", "2024-03-29", "2024-04-28", "2024-05-29"]),
    ("0 0 15W * *", ["2024-01-15", "2024-02-15", "2024-03-15", "2024-04-15", "2024-05-15"]),
    # June 1 2024 is a Saturday: 1W is Monday the 3rd (never May 31).
    ("0 0 1W 6 *", ["2024-06-03", "2025-06-02", "2026-06-01", "2027-06-01", "2028-06-01"]),
    # Mar 31 2024 is a Sunday: 31W is Friday the 29th (never April 1).
    ("0 0 31W 3 *", ["2024-03-29", "2025-03-31", "2026-03-31", "2027-03-31", "2028-03-31"]),
    ("0 0 LW * *", ["2024-01-31", "2024-02-29", "2024-03-29", "2024-04-30", "2024-05-31"]),
    ("0 0 * * 5L", ["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26", "2024-05-31"]),
    ("0 0 * * FRIL", ["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26", "2024-05-31"]),
    ("0 0 ? * MON#1", ["2024-01-01", "2024-02-05", "2024-03-04", "2024-04-01", "2024-05-06"]),
    ("0 0 * * 5#5", ["2024-03-29", "2024-05-31", "2024-08-30", "2024-11-29", "2025-01-31"]),
    # Vixie's either-day rule holds for Quartz terms too (croniter ANDs `15` with `1#1`).
    ("0 0 15 * 1#1", ["2024-01-01", "2024-01-15", "2024-02-05", "2024-02-15", "2024-03-04"]),
    ("0 0 L * 5#1", ["2024-01-05", "2024-01-31", "2024-02-02", "2024-02-29", "2024-03-01"]),
    # A day field starting with `*` ANDs (croniter ignores `*/10` beside `1#1`).
    ("0 0 */10 * 1#1", ["2024-01-01", "2024-04-01", "2024-07-01", "2025-09-01", "2025-12-01"]),
    ("0 0 1,L * *", ["2024-01-01", "2024-01-31", "2024-02-01", "2024-02-29", "2024-03-01"]),
    ("0 0 * * FRI-MON", ["2024-01-01", "2024-01-05", "2024-01-06", "2024-01-07", "2024-01-08"]),
    ("0 0 29-2 * *", ["2024-01-01", "2024-01-02", "2024-01-29", "2024-01-30", "2024-01-31"]),
    ("0 0 1 NOV-FEB *", ["2024-01-01", "2024-02-01", "2024-11-01", "2024-12-01", "2025-01-01"]),
    ("0 0 29W 2 *", ["2024-02-29", "2028-02-29", "2032-02-27", "2036-02-29", "2040-02-29"]),
]


@pytest.mark.parametrize(("expression", "dates"), TABLE, ids=[t[0] for t in TABLE])
def test_hand_worked_dates(expression: str, dates: list[str]) -> None:
    compiled = compile_schedule(parse_schedule(cron=expression))
    start = _ms(datetime(2024, 1, 1, tzinfo=UTC)) - 1
    got = [_local(ms, "UTC").date().isoformat() for ms in compiled.first(start, 2**60, 5)]
    assert got == dates


@pytest.mark.parametrize(
    ("expression", "hours"),
    [("0 22-2 * * *", [0, 1, 2, 22, 23]), ("0 22-2/2 * * *", [0, 2, 22]),
     ("0 21-1/2 * * *", [1, 21, 23]), ("0 23-3/3 * * *", [2, 23]), ("50-10/5 * * * *", None)],
)  # fmt: skip
def test_wrapped_ranges_run_past_the_field_end(expression: str, hours: list[int] | None) -> None:
    fields = parse_cron(expression)
    if hours is None:
        assert fields.minutes == (0, 5, 10, 50, 55)
    else:
        assert list(fields.hours) == hours


def test_seven_at_a_range_start_is_sunday_as_croniter_reads_it() -> None:
    assert parse_cron("0 0 * * 7-2").days_of_week == (0, 1, 2)
    assert parse_cron("0 0 * * SAT-SUN").days_of_week == (0, 6)


@pytest.mark.parametrize(
    ("dow", "days"),
    [
        ("7-7", (0,)),
        ("7-7/2", (0,)),
        ("7-SUN", (0,)),
        ("sun-7", tuple(range(7))),
        ("0-7", tuple(range(7))),
        ("5-7/2", (0, 5)),
        ("7,1-2", (0, 1, 2)),
        ("0,7", (0,)),
        ("7,0,7-7", (0,)),
        ("6-7", (0, 6)),
        ("3-7/2", (0, 3, 5)),
        ("7-3/2", (0, 2)),
    ],
)
def test_seven_is_sunday_in_every_position_as_vixie_reads_it(
    dow: str, days: tuple[int, ...]
) -> None:
    """Issue 34: `7-7` was read as `0-7`, every day. Vixie sets 7 to 7 and folds it into
    Sunday; a range starting at 7 and ending before it starts at Sunday (§1.1)."""
    assert parse_cron(f"0 0 * * {dow}").days_of_week == days


def test_a_sunday_range_fires_on_sundays_only_in_the_timers_core_and_its_words() -> None:
    schedule = parse_schedule(cron="0 0 * * 7-7", timezone="Europe/London")
    assert describe(schedule) == "at 00:00 on Sunday, Europe/London"
    start = _ms(datetime(2026, 12, 7, tzinfo=UTC))  # a Monday
    slots = compile_schedule(schedule).occurrences(start, start + 28 * 86_400_000)
    local = [_local(ms, "Europe/London") for ms in slots]
    assert [t.date().isoformat() for t in local] == [
        "2026-12-13",
        "2026-12-20",
        "2026-12-27",
        "2027-01-03",
    ]
    assert all(t.isoweekday() == 7 and (t.hour, t.minute) == (0, 0) for t in local)


@pytest.mark.parametrize(
    "expression", ["0 0 30W 2 *", "0 0 31W 4,6,9,11 *", "0 0 L-29 2 *", "0 0 L-30 4 *"]
)
def test_never_firing_terms_are_refused(expression: str) -> None:
    with pytest.raises(InvalidSchedule, match="can never fire"):
        parse_cron(expression)


@pytest.mark.parametrize(
    "expression", ["0 0 29W 2 *", "0 0 L-28 2 *", "0 0 * 2 MON#5", "0 0 L-30 1 *", "0 0 31W 4,5 *"]
)
def test_terms_that_fire_only_in_some_years_are_accepted(expression: str) -> None:
    assert parse_cron(expression).can_fire


# DST: (expression, zone, from, expected local times with offset, as printed).
DST = [
    # London springs forward at 01:00 on Sunday 31 Mar 2024, the last day of March.
    ("30 1 L 3 *", "Europe/London", "2024-03-01", ["2024-03-31 02:00:00+01:00",
     "2025-03-31 01:30:00+01:00"]),
    ("30 1 * 3 SUNL", "Europe/London", "2024-03-01", ["2024-03-31 02:00:00+01:00",
     "2025-03-30 02:00:00+01:00"]),
    # New York springs forward on the second Sunday of March.
    ("30 2 * 3 SUN#2", "America/New_York", "2024-03-01", ["2024-03-10 03:00:00-04:00",
     "2025-03-09 03:00:00-04:00"]),
    # Fall back: the last Sunday of October in London repeats 01:00-02:00; earlier fires.
    ("30 1 * 10 0L", "Europe/London", "2024-10-01", ["2024-10-27 01:30:00+01:00",
     "2025-10-26 01:30:00+01:00"]),
    # Hourly with a Quartz day term follows the real timeline: no 01:xx on spring day.
    ("30 * L 3 *", "Europe/London", "2024-03-31", ["2024-03-31 00:30:00+00:00",
     "2024-03-31 02:30:00+01:00"]),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "zone", "start", "expected"), DST)
def test_the_dst_policy_holds_for_quartz_terms(
    expression: str, zone: str, start: str, expected: list[str]
) -> None:
    compiled = compile_schedule(parse_schedule(cron=expression, timezone=zone))
    t0 = _ms(datetime.fromisoformat(start).replace(tzinfo=ZoneInfo(zone))) - 1
    got = [str(_local(ms, zone)) for ms in compiled.first(t0, 2**60, len(expected))]
    assert got == expected
