"""`previous` over one cron: `next_after` from **any** instant, not only from a slot, is the
independent oracle's first slot after it (decision 0112: the direct lookup of where a slot
lands must give the walk's answers, moved slots, DST days and dropped days included).

The oracle is `test_calendar_schedules._oracle` (zoneinfo and croniter, day by day); the
instants are drawn anywhere in the window, including just before, at and after a slot and
its moved landing, where the lookup and the walk part ways.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.core._settings import EXAMPLES, PROPS
from tests.unit.core.test_calendar_schedules import DAY_MS, _days, _ms, _oracle
from tickwheel.core.calendars import MAX_MOVE_DAYS, make_calendar
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.schedule import compile_schedule, parse_schedule

ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "America/Santiago"]
CRONS = ["0 18 L * *", "30 2 L * *", "30 1 * * *", "0 9,17 * * *", "0 */6 * * *",
         "15 2 LW * *", "0 0 L-1 * *", "59 23 * * FRI", "30 2 * * SUN", "0 1-3 * * *"]  # fmt: skip


@settings(PROPS, max_examples=max(60, EXAMPLES))
@given(
    cron=st.sampled_from(CRONS),
    zone=st.sampled_from(ZONES),
    start=st.dates(date(2020, 1, 1), date(2035, 10, 1)),
    holiday_offsets=st.sets(st.integers(0, 70), max_size=20),
    excluded_offsets=st.sets(st.integers(0, 70), max_size=2),
    weekend=st.sampled_from([{0, 6}, {5, 6}, set(), {1, 2, 3, 4, 5, 6}]),
    probes=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from([-1, 0, 1, -3_600_000])),
        min_size=1,
        max_size=40,
    ),
    anywhere=st.lists(st.integers(0, 40 * DAY_MS), max_size=20),
)
def test_previous_next_after_from_any_instant_is_the_oracles_next_slot(
    cron: str,
    zone: str,
    start: date,
    holiday_offsets: set[int],
    excluded_offsets: set[int],
    weekend: set[int],
    probes: list[tuple[int, int]],
    anywhere: list[int],
) -> None:
    holidays = {start + timedelta(days=k) for k in holiday_offsets}
    excluded = {start + timedelta(days=k) for k in excluded_offsets}
    exclude = sorted(d.isoformat() for d in excluded) or None
    try:
        schedule = parse_schedule(
            cron=cron, timezone=zone, exclude=exclude, calendar="cal", business_days="previous"
        )
    except InvalidSchedule:
        return  # every slot removed: refused (test_calendar_schedules pins it)
    compiled = compile_schedule(schedule, {"cal": make_calendar("cal", _days(holidays), weekend)})
    lo = _ms(datetime(start.year, start.month, start.day, tzinfo=UTC)) + 20 * DAY_MS
    hi = lo + 40 * DAY_MS
    base = compile_schedule(parse_schedule(cron=cron, timezone=zone))
    own = base.occurrences(lo - (MAX_MOVE_DAYS + 2) * DAY_MS, hi + (MAX_MOVE_DAYS + 2) * DAY_MS)
    expected = _oracle(own, zone, excluded, [], holidays, weekend, "previous")
    # Instants at and around the base's own slots and the oracle's (moved) ones, and anywhere.
    marks = sorted({s for s in own + expected if lo <= s <= hi - DAY_MS})
    instants = [lo + x for x in anywhere]
    if marks:
        instants += [marks[i % len(marks)] + delta for i, delta in probes]
    for t in instants:
        later = [s for s in expected if s > t]
        if not later or later[0] > hi:
            continue  # beyond what the oracle's window holds (moves from past it)
        assert compiled.next_after(t) == later[0], (t, cron, zone)
