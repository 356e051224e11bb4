"""No cron expression, parsed or built by hand, can make an occurrence search hang.

Two promises, checked over generated expressions of the whole grammar (numbers, names,
ranges, steps including `a/n` with `a` at the top of the field, lists, `?`, 5 and 6
fields, macros):

* `parse_cron` either raises `InvalidSchedule` or accepts an expression that fires, and
  fires soon: within `FIRES_WITHIN_DAYS` of any instant. The longest gap of a Vixie
  expression is 13,148 days (36 years): Feb 29 on a Friday or a Sunday, AND-ed because
  the weekday field starts with `*` (`0 0 29 2 */5`). Quartz day terms can single out
  one weekday of a leap day (`0 0 29W 2 */4`: Feb 29 on a Thursday; `0 0 */7 2 5#5`), a
  gap of 14,609 days (40 years, across a skipped century leap day). Both are pinned
  below by scanning 1600-2400 for every pattern that can produce a long gap.
* `next_after`, `prev_before`, `first`, `count` and `occurrences` finish within
  `STEP_BOUND` steps, counted by instrumenting the three operations every search is
  made of (a year's list of matching days, a time-of-day lookup, a zone segment), not by
  timing. The bound follows from the search horizon: one 400-year Gregorian cycle
  (146,097 days) of at most 32-to-64-day zone segments, a few operations each.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from croniter import croniter
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.unit.core._quartz_oracle import quartz_day_matches
from tests.unit.core._settings import EXAMPLES, PROPS
from tickwheel.core.cron import MACROS, CronFields, parse_cron
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.misfire import walk_forward
from tickwheel.core.schedule import CompiledCron
from tickwheel.core.wallclock import WallMatcher
from tickwheel.core.zones import ZoneTimeline

DAY_MS = 86_400_000
FIRES_WITHIN_DAYS = 14_609 + 1
LONGEST_GAP_DAYS = 14_609
PLAIN_LONGEST_GAP_DAYS = 13_148
STEP_BOUND = 60_000
Y1990_MS = 631_152_000_000
Y2300_MS = 10_413_792_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


class Steps:
    """Counts the unit operations of every occurrence search while installed."""

    count = 0


@contextmanager
def counting() -> Iterator[type[Steps]]:
    originals: list[tuple[type, str, Any]] = []
    for owner, name in (
        (WallMatcher, "_days_of_year"),
        (WallMatcher, "next_tod"),
        (ZoneTimeline, "segment"),
    ):
        original = getattr(owner, name)
        originals.append((owner, name, original))

        def counted(self: object, *args: Any, _original: Any = original) -> Any:
            Steps.count += 1
            return _original(self, *args)

        setattr(owner, name, counted)
    Steps.count = 0
    try:
        yield Steps
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _field(
    low: int,
    high: int,
    names: list[str] | None,
    days: bool,
    *,
    plain: bool = False,
    wild: bool = False,
) -> st.SearchStrategy[str]:
    """Field text over [low, high]. `wild` adds values and steps one past the field's
    range (7 for day-of-week) and `?` outside the day fields, so refusals are generated
    too; `plain` keeps to what croniter reads as we do (numbers, ranges low < high,
    lists, `*`, `*/n`)."""
    span = high - low
    value = st.integers(low, high + 1) if wild else st.integers(low, high)
    token = value.map(str)
    if names and not plain:
        token = st.one_of(
            token, st.sampled_from(names).flatmap(lambda n: st.sampled_from([n, n.lower()]))
        )
    step = st.integers(1, span).map(str)
    if wild:
        step = st.one_of(step, st.sampled_from(["0", str(span + 1)]))
    ranged = st.tuples(value, value).filter(lambda t: t[0] < t[1]).map(lambda t: f"{t[0]}-{t[1]}")
    items = [token, ranged, st.just("*"), step.map(lambda n: f"*/{n}")]
    if not plain:
        items += [
            st.tuples(token, token).map("-".join),
            st.tuples(token, token, step).map(lambda t: f"{t[0]}-{t[1]}/{t[2]}"),
            st.tuples(token, step).map("/".join),
            # `a/n` with `a` at the top of the field: the `7/2` that once parsed to nothing.
            st.tuples(st.sampled_from([str(high - 1), str(high), str(high + 1)]), step).map(
                "/".join
            ),
        ]
        if days:
            items += [st.just("?"), step.map(lambda n: f"?/{n}")]
            items += _quartz_items(names is not None, wild)
        elif wild:
            items += [st.just("?")]
    return st.lists(st.one_of(*items), min_size=1, max_size=3).map(",".join)


def _quartz_items(weekdays: bool, wild: bool) -> list[st.SearchStrategy[str]]:
    """Quartz day terms; `wild` adds out-of-range counts so refusals are generated too."""
    if weekdays:
        day = st.one_of(st.integers(0, 7).map(str), st.sampled_from(_DAYS))
        nth = st.integers(0, 6) if wild else st.integers(1, 5)
        return [
            day.map(lambda d: f"{d}L"),
            st.integers(0, 7).map(lambda d: f"L{d}"),
            st.tuples(day, nth).map(lambda t: f"{t[0]}#{t[1]}"),
        ]
    offset = st.integers(0, 31) if wild else st.integers(0, 30)
    near = st.integers(0, 32) if wild else st.integers(1, 31)
    return [
        st.sampled_from(["L", "LW", "l", "lw"]),
        offset.map(lambda n: f"L-{n}"),
        near.map(lambda n: f"{n}W"),
    ]


def _cron5(wild: bool) -> st.SearchStrategy[str]:
    return st.tuples(
        _field(0, 59, None, False, wild=wild),
        _field(0, 23, None, False, wild=wild),
        _field(1, 31, None, True, wild=wild),
        _field(1, 12, _MONTHS, False, wild=wild),
        _field(0, 6, _DAYS, True, wild=wild),
    ).map(" ".join)


def _cron(wild: bool) -> st.SearchStrategy[str]:
    return st.one_of(
        _cron5(wild), st.tuples(_field(0, 59, None, False, wild=wild), _cron5(wild)).map(" ".join)
    )


# Mostly well-formed expressions (any one wild field refuses the whole expression).
CRON = st.one_of(
    _cron(False), _cron(False), _cron(False), _cron(True), st.sampled_from(sorted(MACROS))
)
# Expressions that fire rarely: the day fields and the month are where gaps come from.
SPARSE = st.tuples(
    _field(1, 31, None, True, wild=True),
    _field(1, 12, _MONTHS, False, wild=True),
    _field(0, 6, _DAYS, True, wild=True),
).map(lambda t: f"0 0 {t[0]} {t[1]} {t[2]}")
PLAIN = st.tuples(
    _field(0, 59, None, False, plain=True),
    _field(0, 23, None, False, plain=True),
    _field(1, 28, None, True, plain=True),
    _field(1, 12, None, False, plain=True),
    _field(0, 6, None, True, plain=True),
    st.booleans(),
).map(lambda t: " ".join(t[:2] + (("*", t[3], t[4]) if t[5] else (t[2], t[3], "*"))))
INSTANT = st.integers(Y1990_MS, Y2300_MS)
ZONES = st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe"])


def _wall(ms: int, zone: str) -> datetime:
    from zoneinfo import ZoneInfo

    return (EPOCH + timedelta(milliseconds=ms)).astimezone(ZoneInfo(zone))


def _matches_day(fields: CronFields, d: date) -> bool:
    """Vixie's day rule and Quartz's terms, written again from the definition (an oracle,
    not the code)."""
    return quartz_day_matches(fields, d)


def _searches(compiled: CompiledCron, t_ms: int) -> tuple[int | None, int | None]:
    with counting() as steps:
        nxt = compiled.next_after(t_ms)
        after_next = steps.count
        prev = compiled.prev_before(t_ms)
    assert after_next <= STEP_BOUND, (compiled, "next_after", after_next)
    assert steps.count - after_next <= STEP_BOUND, (compiled, "prev_before", steps.count)
    return nxt, prev


@PROPS
@given(CRON, INSTANT, ZONES)
def test_parse_refuses_or_accepts_an_expression_that_fires_soon(
    expression: str, t_ms: int, zone: str
) -> None:
    try:
        fields = parse_cron(expression)
    except InvalidSchedule as exc:
        assert exc.field == "cron"
        assert "accepted" in exc.message
        return
    assert fields.can_fire
    compiled = CompiledCron(fields, zone, "shift", "earlier")
    nxt, prev = _searches(compiled, t_ms)
    assert nxt is not None, expression
    assert t_ms < nxt <= t_ms + FIRES_WITHIN_DAYS * DAY_MS, expression
    assert prev is not None and prev < t_ms, expression
    if zone == "UTC":
        wall = _wall(nxt, zone)
        assert wall.second in fields.seconds and wall.minute in fields.minutes
        assert wall.hour in fields.hours and _matches_day(fields, wall.date())


@settings(PROPS, max_examples=max(20, EXAMPLES // 3))
@given(SPARSE)
def test_sparse_expressions_find_the_first_matching_date_a_brute_force_finds(
    expression: str,
) -> None:
    try:
        fields = parse_cron(expression)
    except InvalidSchedule:
        return
    start = date(2000, 1, 1)
    expected = next(
        (
            start + timedelta(days=i)
            for i in range(FIRES_WITHIN_DAYS)
            if _matches_day(fields, start + timedelta(days=i))
        ),
        None,
    )
    assert expected is not None, f"{expression} accepted but matches no date for 36 years"
    compiled = CompiledCron(fields, "UTC", "shift", "earlier")
    found = compiled.next_after(
        int((datetime(2000, 1, 1, tzinfo=UTC) - EPOCH).total_seconds()) * 1000 - 1
    )
    assert found is not None and _wall(found, "UTC").date() == expected


@PROPS
@given(PLAIN, INSTANT)
@example("0 0 */15 * *", 792_892_800_000)  # the slot croniter skips
def test_next_after_agrees_with_croniter_where_their_grammars_agree(
    expression: str, t_ms: int
) -> None:
    """croniter reads `a/n`, `?` and degenerate ranges its own way, and combines two
    restricted day fields differently; `PLAIN` avoids all of that (one day field is `*`),
    and there both must accept and find the same instant — except where croniter skips a
    slot: from 1995-02-16 it answers 1995-03-16 for `0 0 */15 * *` (and `1,16,31`), passing
    over 1995-03-01, which its own `match` accepts (a day list holding 31 after a short
    month; found by this test in CI). So ours must be a slot croniter's `match` accepts, after
    `t`, and never later than croniter's answer; equal wherever croniter skips nothing."""
    fields = parse_cron(expression)
    expected = croniter(expression, EPOCH + timedelta(milliseconds=t_ms)).get_next(datetime)
    expected_ms = int((expected - EPOCH).total_seconds() * 1000)
    compiled = CompiledCron(fields, "UTC", "shift", "earlier")
    found = compiled.next_after(t_ms)
    assert found is not None and t_ms < found <= expected_ms
    if found != expected_ms:
        assert croniter.match(expression, EPOCH + timedelta(milliseconds=found)), (found, expected)


def _empty(fields: CronFields, **sets: tuple[int, ...]) -> CronFields:
    return dataclasses.replace(fields, **sets)


HAND_BUILT = [
    ("empty day-of-week", dict(days_of_week=())),
    ("empty seconds", dict(seconds=())),
    ("empty hours", dict(hours=())),
    ("empty months", dict(months=())),
    ("Feb 30 AND any weekday", dict(days_of_month=(30, 31), months=(2,), dow_restricted=False)),
    ("out-of-range values only", dict(hours=(24, 99), days_of_month=(0, 32))),
    ("month 13", dict(months=(13,))),
]


@pytest.mark.parametrize(("label", "sets"), HAND_BUILT, ids=[h[0] for h in HAND_BUILT])
@pytest.mark.parametrize("zone", ["UTC", "Europe/London", "Pacific/Chatham"])
def test_hand_built_fields_that_never_match_answer_within_the_bound(
    label: str, sets: dict[str, Any], zone: str
) -> None:
    fields = _empty(parse_cron("0 0 * * 1"), **sets)
    compiled = CompiledCron(fields, zone, "shift", "earlier")
    with counting() as steps:
        assert compiled.next_after(Y1990_MS) is None
        assert compiled.prev_before(Y2300_MS) is None
        assert compiled.first(Y1990_MS, Y2300_MS, 10) == []
        assert compiled.count(Y1990_MS, Y2300_MS) == 0
        assert compiled.occurrences(Y1990_MS, Y1990_MS + 400 * DAY_MS) == []
        assert compiled.kth_after(Y1990_MS, 1, Y2300_MS) is None
        assert compiled.nominal_period_ms is None
        walk = walk_forward(compiled, Y1990_MS, Y2300_MS, "catch_up", 10)
        assert walk.total == 0
    assert steps.count <= STEP_BOUND, (label, steps.count)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_the_search_horizon_holds_even_if_the_emptiness_check_were_wrong(zone: str) -> None:
    """Defence in depth: a matcher that claims to fire but matches no day still ends."""
    fields = _empty(parse_cron("0 0 * * 1"), days_of_week=())
    compiled = CompiledCron(fields, zone, "shift", "earlier")
    matcher = WallMatcher(fields)
    object.__setattr__(matcher, "_fires", True)
    compiled.matcher = matcher
    with counting() as steps:
        assert compiled.next_after(Y1990_MS) is None
        after_next = steps.count
        assert compiled.prev_before(Y2300_MS) is None
    assert after_next <= STEP_BOUND
    assert steps.count - after_next <= STEP_BOUND


def test_the_longest_gap_of_any_accepted_expression_is_36_years() -> None:
    """Long gaps need both day fields, AND-ed: a day-of-month list with a weekday field
    starting with `*` (always containing 0 and some n <= 6), or a day-of-month starting
    with `*` (always containing the 1st) with any weekday. Every such pattern for one
    month is scanned; more months or values only shorten gaps."""
    patterns = [f"0 0 {d} {m} */{n}" for n in range(1, 7) for d in (28, 29, 30, 31)
                for m in range(1, 13)]  # fmt: skip
    patterns += [f"0 0 */{n} {m} {w}" for n in range(1, 31) for m in range(1, 13)
                 for w in range(7)]  # fmt: skip
    worst = (0, "")
    for expression in patterns:
        try:
            matcher = WallMatcher(parse_cron(expression))
        except InvalidSchedule:
            continue
        days: list[int] = []
        for year in range(1600, 2401):
            days.extend(matcher._days_of_year(year))
        gap = max(b - a for a, b in itertools.pairwise(days))
        worst = max(worst, (gap, expression))
    assert worst == (PLAIN_LONGEST_GAP_DAYS, "0 0 29 2 */5")


def test_the_longest_gap_with_quartz_day_terms_is_40_years() -> None:
    """The same AND-ed shapes with a Quartz term on one side. Only February is scanned:
    a long gap needs a leap-day-only date, and every other month's (length, weekday of
    the 1st) shape recurs within a dozen years."""
    dom_terms = ["L", "LW", *(f"L-{k}" for k in range(31)), *(f"{k}W" for k in range(1, 32))]
    dow_terms = [f"{d}L" for d in range(7)] + [f"{d}#{k}" for d in range(7) for k in range(1, 6)]
    patterns = [f"0 0 {x} 2 */{n}" for x in dom_terms for n in range(1, 7)]
    patterns += [f"0 0 */{n} 2 {y}" for y in dow_terms for n in range(1, 31)]
    worst = (0, "")
    for expression in patterns:
        try:
            matcher = WallMatcher(parse_cron(expression))
        except InvalidSchedule:
            continue
        days: list[int] = []
        for year in range(1600, 2401):
            days.extend(matcher._days_of_year(year))
        worst = max(worst, (max(b - a for a, b in itertools.pairwise(days)), expression))
    assert worst[0] == LONGEST_GAP_DAYS, worst


@pytest.mark.parametrize(
    "expression",
    ["0 0 * * 7/2", "0 0 * * 7/1", "0 0 ? * 7/3", "0 0 0 * * 7/6", "0 0 1,7/2 * 7/2"],
)
def test_a_step_starting_past_the_weekdays_is_refused_as_never_firing(expression: str) -> None:
    with pytest.raises(InvalidSchedule, match="never fires; accepted: a step start from 0 to 6"):
        parse_cron(expression)


@pytest.mark.parametrize(
    "expression", ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 FEB *", "0 0 31 2 ?"]
)
def test_impossible_dates_stay_refused(expression: str) -> None:
    with pytest.raises(InvalidSchedule, match="can never fire"):
        parse_cron(expression)


@pytest.mark.parametrize("expression", ["0 0 * * 7", "0 0 * * 5-7", "0 0 * * 7-7/2"])
def test_seven_as_sunday_still_works(expression: str) -> None:
    assert 0 in parse_cron(expression).days_of_week
