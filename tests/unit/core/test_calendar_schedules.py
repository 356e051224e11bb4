"""Several specs, exclusions and business-day calendars, against an independent oracle.

The oracle (`_oracle`) is written from docs/schedules.md §4-§5 with `datetime`, `zoneinfo`
and croniter, day by day: it takes the specs' own slots (each spec is tested against its own
oracles in test_cron_quartz.py and test_interval_bounds.py) and decides on its own which
survive, where a moved one lands (its local time on the new date, resolved with zoneinfo)
and that slots landing together are one. The core's day-by-day search shares none of it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.core._settings import EXAMPLES, PROPS
from tickwheel.core.calendars import MAX_MOVE_DAYS, make_calendar
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.identity import execution_id
from tickwheel.core.schedule import Schedule, compile_schedule, parse_schedule
from tickwheel.core.wallclock import days_from_civil

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Europe/Berlin"]
CRONS = ["0 9 * * *", "30 2 * * *", "0 18 L * *", "0 */6 * * *", "15 10 * * MON-FRI",
         "0 0 1 * *", "0 18 LW * *", "30 1 * * SUN", "0 8 * * FRI#1"]  # fmt: skip
EXCLUDE_CRONS = ["0 9 * * MON", "* * 25 12 *", "0 12 * * *", "* 2 * * *"]
DAY_MS = 86_400_000


def _ms(d: datetime) -> int:
    return int((d - EPOCH).total_seconds() * 1000)


def _resolve(naive: datetime, zone: ZoneInfo) -> int:
    """The instant of a local wall time: the earlier of two, or the end of a gap."""
    candidates = []
    for fold in (0, 1):
        aware = naive.replace(tzinfo=zone, fold=fold)
        if aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == naive:
            candidates.append(_ms(aware.astimezone(UTC)))
    if candidates:
        return min(candidates)
    lo = _ms(naive.replace(tzinfo=zone, fold=1).astimezone(UTC)) // 1000
    hi = _ms(naive.replace(tzinfo=zone, fold=0).astimezone(UTC)) // 1000
    lo, hi = min(lo, hi), max(lo, hi)
    while hi - lo > 1:  # the first instant whose local time is past the gap
        mid = (lo + hi) // 2
        local = (EPOCH + timedelta(seconds=mid)).astimezone(zone).replace(tzinfo=None)
        if local >= naive:
            hi = mid
        else:
            lo = mid
    return hi * 1000


def _oracle(
    slots: list[int],
    zone_name: str,
    excluded_dates: set[date],
    exclude_crons: list[str],
    holidays: set[date],
    weekend: set[int],
    rule: str | None,
) -> list[int]:
    zone = ZoneInfo(zone_name)

    def business(d: date) -> bool:
        return d not in holidays and d.isoweekday() % 7 not in weekend

    out: set[int] = set()
    for ms in slots:
        local = (EPOCH + timedelta(milliseconds=ms)).astimezone(zone)
        naive = local.replace(tzinfo=None)
        if naive.date() in excluded_dates:
            continue
        if any(croniter.match(c, naive.replace(second=0)) for c in exclude_crons):
            continue
        if rule is None or business(naive.date()):
            out.add(ms)
            continue
        if rule == "skip":
            continue
        step = 1 if rule == "next" else -1
        for k in range(1, MAX_MOVE_DAYS + 1):
            day = naive.date() + timedelta(days=step * k)
            if business(day):
                out.add(_resolve(datetime.combine(day, naive.time()), zone))
                break
    return sorted(out)


def _days(dates: set[date]) -> list[int]:
    return [days_from_civil(d.year, d.month, d.day) for d in dates]


SPEC = st.one_of(
    st.sampled_from(CRONS).map(lambda c: {"cron": c}),
    st.sampled_from(["7h", "90m", "1d", "2d"]).map(lambda e: {"every": e}),
)


@settings(PROPS, max_examples=max(40, EXAMPLES // 2))
@given(
    specs=st.lists(SPEC, min_size=1, max_size=3),
    zone=st.sampled_from(ZONES),
    rule=st.sampled_from([None, "skip", "next", "previous"]),
    start=st.dates(date(2020, 1, 1), date(2035, 10, 1)),
    holiday_offsets=st.sets(st.integers(0, 70), max_size=12),
    excluded_offsets=st.sets(st.integers(0, 70), max_size=3),
    exclude_crons=st.lists(st.sampled_from(EXCLUDE_CRONS), max_size=2, unique=True),
    weekend=st.sampled_from([{0, 6}, {5, 6}, set(), {0}]),
)
def test_adjusted_slots_are_the_ones_the_oracle_keeps_2020_to_2035(
    specs: list[dict[str, str]],
    zone: str,
    rule: str | None,
    start: date,
    holiday_offsets: set[int],
    excluded_offsets: set[int],
    exclude_crons: list[str],
    weekend: set[int],
) -> None:
    holidays = {start + timedelta(days=k) for k in holiday_offsets}
    excluded = {start + timedelta(days=k) for k in excluded_offsets}
    exclude = sorted(d.isoformat() for d in excluded) + exclude_crons
    try:
        schedule = parse_schedule(
            timezone=zone,
            schedules=specs,
            exclude=exclude or None,
            calendar="cal" if rule is not None else None,
            business_days=rule,
        )
    except InvalidSchedule:
        return  # everything removed: refused, which test_never_firing_... pins
    calendar = make_calendar("cal", _days(holidays), weekend)
    compiled = compile_schedule(schedule, {"cal": calendar})
    lo = _ms(datetime(start.year, start.month, start.day, tzinfo=UTC)) + 20 * DAY_MS
    hi = lo + 40 * DAY_MS
    # The specs' own slots, with room for moves from either side of the window.
    union = compile_schedule(parse_schedule(timezone=zone, schedules=specs))
    base = union.occurrences(lo - (MAX_MOVE_DAYS + 2) * DAY_MS, hi + (MAX_MOVE_DAYS + 2) * DAY_MS)
    expected = [
        s
        for s in _oracle(base, zone, excluded, exclude_crons, holidays, weekend, rule)
        if lo < s <= hi
    ]
    assert compiled.occurrences(lo, hi) == expected
    assert compiled.count(lo, hi) == len(expected)
    walked, t = [], lo
    for _ in range(len(expected) + 1):  # bounded: one step per expected slot, and one more
        nxt = compiled.next_after(t)
        if nxt is None or nxt > hi:
            break
        walked.append(nxt)
        t = nxt
    assert walked == expected
    if expected:
        assert compiled.prev_before(hi + 1) == expected[-1]
        assert compiled.kth_after(lo, len(expected), hi) == expected[-1]


def test_the_last_business_day_of_the_month_at_18_london_skipping_uk_bank_holidays() -> None:
    uk = make_calendar(
        "uk",
        _days({date(2026, 8, 31), date(2026, 12, 25), date(2026, 12, 28), date(2027, 1, 1)}),
    )
    schedule = parse_schedule(
        cron="0 18 L * *", timezone="Europe/London", calendar="uk", business_days="previous"
    )
    compiled = compile_schedule(schedule, {"uk": uk})
    start = _ms(datetime(2026, 7, 1, tzinfo=UTC))
    got = [
        (EPOCH + timedelta(milliseconds=s)).astimezone(ZoneInfo("Europe/London")).isoformat()
        for s in compiled.first(start, start + 400 * DAY_MS, 7)
    ]
    assert got == [
        "2026-07-31T18:00:00+01:00",
        "2026-08-28T18:00:00+01:00",  # Monday 31 August is a bank holiday
        "2026-09-30T18:00:00+01:00",
        "2026-10-30T18:00:00+00:00",  # the 31st is a Saturday
        "2026-11-30T18:00:00+00:00",
        "2026-12-31T18:00:00+00:00",
        "2027-01-29T18:00:00+00:00",  # the 31st is a Sunday
    ]


def test_a_moved_slot_keeps_one_execution_id_however_it_is_computed() -> None:
    """A slot moved by a calendar is an occurrence like any other: its id derives from the
    instant it fires at, so a restore, a preview and a second compilation agree on it."""
    days = _days({date(2026, 12, 25)})
    spec = {"cron": "0 9 * * *", "timezone": "Europe/London", "business_days": "next"}
    first = compile_schedule(parse_schedule(**spec, calendar="x"), {"x": make_calendar("x", days)})
    again = compile_schedule(
        parse_schedule(**spec, calendar="x"), {"x": make_calendar("x", list(days))}
    )
    after = _ms(datetime(2026, 12, 24, 12, tzinfo=UTC))
    moved = first.next_after(after)
    assert moved == _ms(datetime(2026, 12, 28, 9, tzinfo=UTC))  # Fri 25th, then the weekend
    assert again.next_after(after) == moved
    assert first is again or first == again
    ids = {execution_id("payroll", 3, s) for s in (moved, again.next_after(after))}
    assert len(ids) == 1
    # Saturday's, Sunday's and Friday's slots landed on Monday 09:00 with Monday's own: once.
    assert first.occurrences(after, moved) == [moved]


def test_an_l_job_at_02_30_on_a_spring_forward_day_fires_once_after_the_gap() -> None:
    """2024-03-31 is the last day of March and Berlin's spring-forward day (02:00 → 03:00):
    02:30 does not exist, so the fixed-time policy fires once at 03:00 CEST (01:00 UTC) —
    with a calendar rule too, and a slot moved onto that day lands there as well."""
    berlin = "Europe/Berlin"
    plain = compile_schedule(parse_schedule(cron="30 2 L * *", timezone=berlin))
    start = _ms(datetime(2024, 3, 30, tzinfo=UTC))
    gap_end = _ms(datetime(2024, 3, 31, 1, 0, tzinfo=UTC))
    assert plain.next_after(start) == gap_end
    no_weekend = make_calendar("saturday-off", _days({date(2024, 3, 30)}), weekend=())
    moved = compile_schedule(
        parse_schedule(
            cron="30 2 * * *", timezone=berlin, calendar="saturday-off", business_days="next"
        ),
        {"saturday-off": no_weekend},
    )
    # Saturday's 02:30 moves to Sunday 02:30, which does not exist: it and Sunday's own slot
    # fire once, at the end of the gap.
    assert moved.first(start, start + 5 * DAY_MS, 2) == [
        gap_end,
        _ms(datetime(2024, 4, 1, 0, 30, tzinfo=UTC)),
    ]


def test_a_schedule_whose_exclusions_remove_every_slot_is_refused() -> None:
    with pytest.raises(InvalidSchedule) as caught:
        parse_schedule(cron="0 9 * * *", exclude=["0 9 * * *"])
    assert caught.value.field == "schedule"
    assert "never fires" in caught.value.message


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cron": "0 9 * * *", "exclude": ["2026-02-30"]}, "exclude[0]"),
        ({"cron": "0 9 * * *", "exclude": ["nonsense"]}, "exclude[0]"),
        ({"cron": "0 9 * * *", "exclude": "2026-12-25"}, "exclude"),
        ({"cron": "0 9 * * *", "calendar": "UK Holidays"}, "calendar"),
        ({"cron": "0 9 * * *", "business_days": "nearest"}, "businessDays"),
        ({"schedules": [{"cron": "0 9 * * *", "every": "1h"}]}, "schedules[0]"),
        ({"schedules": [{"cron": "61 9 * * *"}]}, "schedules[0].cron"),
        ({"cron": "0 9 * * *", "schedules": [{"every": "1x"}]}, "schedules[0].every"),
        ({"cron": "0 9 * * *", "schedules": []}, "schedules"),
        ({"cron": "0 9 * * *", "schedules": [{"cron": "0 1 * * *", "x": 1}]}, "schedules[0]"),
        ({"run_at": "2030-01-01T00:00:00Z", "calendar": "uk"}, "schedule"),
    ],
)
def test_bad_specs_exclusions_and_calendars_are_refused_naming_the_field(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        parse_schedule(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert "accepted" in caught.value.message


def test_an_unknown_calendar_has_no_slot_until_it_is_known() -> None:
    schedule: Schedule = parse_schedule(cron="0 9 * * *", calendar="uk")
    assert compile_schedule(schedule, {}).next_after(0) is None
    assert compile_schedule(schedule, {"uk": make_calendar("uk", [])}).next_after(0) is not None


def test_two_specs_fire_each_shared_slot_once() -> None:
    both = compile_schedule(
        parse_schedule(schedules=[{"cron": "0 */2 * * *"}, {"cron": "0 */3 * * *"}])
    )
    hours = [s // 3_600_000 for s in both.occurrences(-1, DAY_MS - 1)]
    assert hours == [0, 2, 3, 4, 6, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 22]
    assert both.nominal_period_ms == 3_600_000  # 2 and 3 are an hour apart
