"""A differential fuzzer: every cron text the grammar accepts, the core against an oracle.

Each drawn expression (`_cron_grammar.EXPRESSION`: the whole accepted grammar) is compiled by
the core and read by the brute-force oracle (`_cron_oracle`, written from docs/schedules.md
and decision 0010, sharing no code with the parser), and their next 50 fire times must be the
same in each of the zones below, from a start just before one of the zone's clock changes,
under a drawn DST policy. A text the core refuses must be one the oracle finds never fires,
and the job definition's own check (`validate_definition`, behind `jobs create`, the SDK and
the API) must accept and refuse exactly what the parser does.

croniter is a second opinion on the UTC fire times, wherever it reads a text as the written
rules do; `CRONITER_DIFFERS` names every place where it does not, with the rule that decides.

Profiles: on every `make test` / `make unit` a fixed, derandomised run of a few seconds (40
drawn expressions and the hand-picked `@example`s; `TICKWHEEL_FUZZ_EXAMPLES` changes the
count); `make test-fuzz` runs a long random one (`TICKWHEEL_FUZZ=long`, 2,000 expressions by
default, a longer horizon) and its statistics say how many it tried and what it compared.
"""

from __future__ import annotations

import calendar
import os
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.unit.core._cron_grammar import EXPRESSION
from tests.unit.core._cron_oracle import DAYS, EPOCH, MACROS, MONTHS, OracleCron, values
from tickwheel.core.definition import validate_definition
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.schedule import DST_POLICIES, compile_schedule, parse_schedule
from tickwheel.errors import InvalidInput

LONG = os.environ.get("TICKWHEEL_FUZZ") == "long"
EXAMPLES = int(os.environ.get("TICKWHEEL_FUZZ_EXAMPLES", "2000" if LONG else "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,  # the unit tier draws the same expressions on every run
    database=None,
    suppress_health_check=list(HealthCheck),
)
COUNT = 50
# How far the oracle walks for the 50 fire times: a yearly job needs 50 years; rarer ones
# (Feb 29 on a weekday, 40 years apart) are compared on what falls within the horizon.
HORIZON_S = (100 if LONG else 60) * 366 * 86_400

# Zones with a spring-forward gap and an autumn fold at different hours and sizes, midnight
# changes (Santiago, Havana), a 30-minute one (Lord Howe), odd offsets (Chatham +12:45,
# St John's -03:30, Kolkata +05:30), a negative "DST" (Casablanca), and none (UTC, Kolkata).
ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Santiago",
    "America/Havana",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/St_Johns",
    "Africa/Casablanca",
]


def _offset(u: int, tz: ZoneInfo) -> timedelta | None:
    return (EPOCH + timedelta(seconds=u)).astimezone(tz).utcoffset()


def _changes(zone: str) -> list[int]:
    """The instants (UTC seconds) the zone's offset changed at, 2020-2035: a day-by-day scan,
    then a bisection to the second."""
    tz, out = ZoneInfo(zone), []
    u = int((datetime(2020, 1, 1, tzinfo=UTC) - EPOCH).total_seconds())
    while u < int((datetime(2036, 1, 1, tzinfo=UTC) - EPOCH).total_seconds()):
        if _offset(u, tz) != _offset(u + 86_400, tz):
            lo, hi = u, u + 86_400
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _offset(mid, tz) == _offset(lo, tz) else (lo, mid)
            out.append(hi)
        u += 86_400
    return out or [
        int((datetime(2020 + i, 3, 1, tzinfo=UTC) - EPOCH).total_seconds()) for i in range(16)
    ]


CHANGES = {zone: _changes(zone) for zone in ZONES}
# How long before a clock change the walk starts: a few seconds (a per-second job crosses
# it within its 50 fire times), minutes, hours, days, or months (a rare job reaches it).
LEAD = st.one_of(
    st.integers(0, 60),
    st.integers(0, 3 * 3600),
    st.integers(0, 3 * 86_400),
    st.integers(0, 400 * 86_400),
)


# -- croniter, the second opinion ----------------------------------------------------------

# (low, high, names) of each field in the 6-field order; croniter's own day-of-week end is 6.
_SPECS = [(0, 59, {}), (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, MONTHS), (0, 6, DAYS)]
_TERM = re.compile(r"L|LW|L-\d+|\d+W|\w+L|L\w+|\w+#\d+", re.IGNORECASE)


def _fields(text: str) -> list[str]:
    """The six fields of a text the grammar accepts (seconds `0` added, macros expanded)."""
    normal = " ".join(text.split())
    fields = MACROS.get(normal.lower(), normal).split()
    return fields if len(fields) == 6 else ["0", *fields]


def _items(text: str) -> list[tuple[int, str]]:
    """(field, item) of every list item."""
    return [(f, item) for f, field in enumerate(_fields(text)) for item in field.split(",")]


def _is_term(item: str) -> bool:
    return _TERM.fullmatch(item) is not None


def _value(token: str, field: int) -> int:
    names = _SPECS[field][2]
    return names[token.upper()] if token.upper() in names else int(token)


def _ranges(text: str) -> list[tuple[int, int, int, int]]:
    """(field, a, b, step) of every range item `a-b[/n]`."""
    out = []
    for f, item in _items(text):
        base, _, step = item.partition("/")
        if "-" in base and not _is_term(item):
            a, b = base.split("-")
            out.append((f, _value(a, f), _value(b, f), int(step or 1)))
    return out


def _wraps(field: int, a: int, b: int) -> bool:
    """Whether `a-b` wraps past the field's end (day-of-week: `7-2` starts at Sunday)."""
    return (0 if field == 5 and a == 7 and b != 7 else a) > b


def _selected(text: str, field: int) -> set[int]:
    low, high, names = _SPECS[field]
    items = [i for i in _fields(text)[field].split(",") if not _is_term(i)]
    return set().union(*(values(i, low, high, names, field == 5) for i in items))


def _restricted(text: str) -> list[bool]:
    """Vixie's rule for the two day fields: restricted unless the text starts with * or ?."""
    return [not _fields(text)[f].startswith(("*", "?")) for f in (3, 5)]


def _terms(text: str) -> list[str]:
    return [item for f, item in _items(text) if f in (3, 5) and _is_term(item)]


def equal_range(text: str) -> bool:
    starts = [(f, item.partition("/")[0]) for f, item in _items(text) if "/" in item]
    return any(a == b or (f == 5 and a % 7 == b % 7) for f, a, b, _ in _ranges(text)) or any(
        base not in ("*", "?") and "-" not in base and _value(base, f) >= _SPECS[f][1]
        for f, base in starts
    )


def question_mark_in_a_list(text: str) -> bool:
    return any("?" in _fields(text)[f] and _fields(text)[f] != "?" for f in (3, 5))


def terms_croniter_lacks(text: str) -> bool:
    lacks = re.compile(r"L-\d+|\d+W|LW|\w+L", re.IGNORECASE)
    return any(lacks.fullmatch(item) and not item.upper().startswith("L#") for item in _terms(text))


def terms_mixed_with_values(text: str) -> bool:
    fields = [_fields(text)[f].split(",") for f in (3, 5)]
    return any(any(map(_is_term, f)) and not all(map(_is_term, f)) for f in fields)


def terms_with_both_fields_restricted(text: str) -> bool:
    return bool(_terms(text)) and all(_restricted(text))


def terms_beside_a_star_started_field(text: str) -> bool:
    day_fields = [_fields(text)[f] for f in (3, 5)]
    star_started = [f.startswith(("*", "?")) and f not in ("*", "?") for f in day_fields]
    return bool(_terms(text)) and any(star_started)


def restricted_by_text(text: str) -> bool:
    """croniter ORs the day fields unless one holds a bare `*` item, or selects every value
    while the other's text holds a `*` (its `expand`); Vixie decides by the first character."""
    fields = _fields(text)
    every = [_selected(text, 3) >= set(range(1, 32)), _selected(text, 5) >= set(range(7))]
    theirs = [
        not ({"*", "?"} & set(fields[f].split(",")) or (all_ and "*" in fields[8 - f]))
        for f, all_ in ((3, every[0]), (5, every[1]))
    ]
    return not _terms(text) and all(_restricted(text)) != all(theirs)


def a_step_across_a_wrap(text: str) -> bool:
    return any(_wraps(f, a, b) and n > 1 for f, a, b, n in _ranges(text))


def a_day_of_month_wrap_past_the_28th(text: str) -> bool:
    return any(f == 3 and _wraps(f, a, b) and a > 28 for f, a, b, _ in _ranges(text))


def a_day_the_months_never_have(text: str) -> bool:
    if _terms(text) or not all(_restricted(text)):
        return False
    longest = max(calendar.monthrange(2024, m)[1] for m in _selected(text, 4))  # Feb: 29
    return min(_selected(text, 3)) > longest


def days_february_lacks(text: str) -> bool:
    days = _selected(text, 3)
    return 2 in _selected(text, 4) and max(days, default=0) > 28 and len(days) < 31


def seven_with_seconds(text: str) -> bool:
    return len(text.split()) == 6 and 7 in map(int, re.findall(r"\d+", _fields(text)[5]))


# Every place croniter 5 reads an accepted text differently, by name, with the rule that
# decides: most on purpose (the equal range, its restriction rule), two by faults of its own
# (the days February lacks, 7 with seconds). docs/schedules.md §1.6 lists them for users.
# A text none of these names must fire at the same UTC instants as croniter says.
CRONITER_DIFFERS: dict[str, tuple[Callable[[str], bool], str]] = {
    "equal range": (
        equal_range,
        "`a-a` is the value a (§1.1; Vixie). croniter reads an equal range as the whole "
        "cycle on purpose (its test_sunday_ranges_to): `7-7` every day, and so `a/n` with `a` "
        "the field's last value, which it expands to `a-a/n` (`59/46` is 0 and 46)",
    ),
    "question mark in a list": (
        question_mark_in_a_list,
        "`?` is `*` in the day fields, in a list or with a step too (decision 0011); "
        "croniter refuses it beside anything else",
    ),
    "Quartz terms croniter lacks": (
        terms_croniter_lacks,
        "`L-n`, `nW`, `LW` and `dL` are read as §1.2 says; croniter refuses them",
    ),
    "Quartz terms mixed with values": (
        terms_mixed_with_values,
        "a term is one list item beside plain values (§1.2: `L5,1`); croniter refuses mixing",
    ),
    "Quartz terms with both day fields restricted": (
        terms_with_both_fields_restricted,
        "Vixie's either-day rule holds for terms too (§1.3: `15 * 1#1` is the 15th or the "
        "first Monday); croniter ANDs them",
    ),
    "Quartz terms beside a *-started field": (
        terms_beside_a_star_started_field,
        "a day field starting with `*` still ANDs with its values (§1.3: `*/10` beside "
        "`1#1`); croniter ignores the field",
    ),
    "day fields restricted by their text": (
        restricted_by_text,
        "a day field is restricted when it does not start with `*` or `?` (Vixie, decision "
        "0011: `*/2` and `*/1` AND, `1-31` ORs); croniter decides by the values it expands "
        "to and the other field's text",
    ),
    "a step across a wrap": (
        a_step_across_a_wrap,
        "a step runs on across the wrap, counted from the start (§1.1: `21-1/2` is 21, 23, "
        "1); croniter drops the wrapped part or restarts the count",
    ),
    "a day-of-month wrap from past the 28th": (
        a_day_of_month_wrap_past_the_28th,
        "`30-1` is 30, 31 and 1 of every month having them (§1.1); croniter skips the 1st "
        "after a month without the 30th",
    ),
    "a day of the month the months never have": (
        a_day_the_months_never_have,
        "with both day fields restricted either may match (Vixie): `31 6 0` is June's "
        "Sundays; croniter finds no date when no day of the month occurs in the months",
    ),
    "days February lacks": (
        days_february_lacks,
        "a day a month lacks does not occur in it (§1.1): `*/3` is 1, 4, ... 28 of February "
        "and then 1 March; croniter, from late February, runs past the month's end into March "
        "and skips its first days (`0 0 */3 * *` after 2020-02-29 fires on 4 March)",
    ),
    "day-of-week 7 with seconds": (
        seven_with_seconds,
        "7 is Sunday in the 6-field form too; croniter's seconds-first form refuses it",
    ),
}


def croniter_differs(text: str) -> str | None:
    """The name of the first rule above that applies to `text`, or None."""
    return next((name for name, (applies, _) in CRONITER_DIFFERS.items() if applies(text)), None)


def _croniter_times(text: str, after_s: int, count: int, until_s: int) -> list[int]:
    six = len(text.split()) == 6
    it = croniter(text, datetime(1970, 1, 1) + timedelta(seconds=after_s), second_at_beginning=six)
    out: list[int] = []
    while len(out) < count:
        t = int((it.get_next(datetime) - datetime(1970, 1, 1)).total_seconds())
        if t > until_s:
            break
        out.append(t)
    return out


# -- the differential test ------------------------------------------------------------------


def _core_times(text: str, zone: str, policy: str, after_s: int, until_s: int) -> list[int]:
    compiled = compile_schedule(parse_schedule(cron=text, timezone=zone, dst_policy=policy))
    out: list[int] = []
    t = after_s * 1000
    while len(out) < COUNT and (t := compiled.next_after(t)) is not None and t <= until_s * 1000:  # type: ignore[assignment]
        out.append(t // 1000)
    if out:  # the other ways the timer asks agree with the walk
        span = (after_s * 1000, out[-1] * 1000)
        assert compiled.occurrences(*span) == [s * 1000 for s in out], text
        assert compiled.count(*span) == len(out), text
    return out


def _door_accepts(text: str, zone: str, policy: str) -> bool:
    spec = {"jobId": "fuzz", "type": "noop", "cron": text, "timezone": zone, "dstPolicy": policy}
    try:
        validate_definition(spec, 1_767_225_600_000)
    except InvalidInput:
        return False
    return True


def compare(text: str, policy: str, change: int, lead: int) -> list[str]:
    """Check one drawn expression in every zone; what was checked, for the statistics."""
    oracle = OracleCron(text)
    try:
        parse_schedule(cron=text)
    except InvalidSchedule as exc:
        assert not oracle.fires_ever(), f"{text!r} refused: {exc.message}"
        assert "never fire" in exc.message, exc.message
        assert not _door_accepts(text, "UTC", policy)
        return ["refused: never fires"]
    assert _door_accepts(text, ZONES[change % len(ZONES)], policy), text
    checked = ["accepted"]
    for zone in ZONES:
        changes = CHANGES[zone]
        after = changes[change % len(changes)] - lead
        until = after + HORIZON_S
        expected = oracle.fire_times(zone, policy, after, COUNT, until)
        got = _core_times(text, zone, policy, after, until)
        assert got == expected, (text, zone, policy, _show(got, expected, zone))
        if zone == "UTC":
            rule = croniter_differs(text)
            checked.append(f"croniter: {rule or 'compared'}")
            if rule is None:
                theirs = _croniter_times(text, after, COUNT, until)
                assert theirs == expected, (text, "croniter", _show(theirs, expected, zone))
        if not expected:  # nothing within the horizon: rare, but it must fire some day
            assert oracle.fires_ever(), f"{text!r} accepted, but no date matches it"
    return checked


@FUZZ
@given(text=EXPRESSION, policy=st.sampled_from(DST_POLICIES), change=st.integers(0, 99), lead=LEAD)
# Issue 34: day-of-week 7 in ranges, steps and lists (`7-7` was every day).
@example(text="0 0 * * 7-7", policy="auto", change=0, lead=0)
@example(text="0 0 * * 5-7/2", policy="auto", change=1, lead=86_400)
@example(text="30 2 * * 7,1-2", policy="auto", change=2, lead=3 * 86_400)
@example(text="0,30 1 * * 0,7,7-7/3", policy="fixed", change=3, lead=86_400)
@example(text="*/20 * * * SUN-7", policy="auto", change=4, lead=1200)
# Terms croniter does not know, a stepped wrap, seconds inside a gap, a macro.
@example(text="0 30 1 LW,L-3,15W * 5L,MON#1", policy="shift_later", change=5, lead=40 * 86_400)
@example(text="*/10 * 2 * * *", policy="shift_both", change=6, lead=3600)
@example(text="0 21-1/2 * * *", policy="skip_earlier", change=7, lead=7200)
@example(text="@weekly", policy="auto", change=8, lead=0)
def test_the_core_fires_where_the_oracle_does_in_every_zone(
    text: str, policy: str, change: int, lead: int
) -> None:
    for label in compare(text, policy, change, lead):
        event(label)


def _show(got: list[int], expected: list[int], zone: str) -> str:
    """The first difference, as local times with their offsets."""
    tz = ZoneInfo(zone)
    for i, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            at = [(EPOCH + timedelta(seconds=x)).astimezone(tz).isoformat() for x in (a, b)]
            return f"#{i}: got {at[0]}, oracle {at[1]}"
    return f"got {len(got)} fire times, oracle {len(expected)}"


def test_every_month_shape_occurs_in_2000_to_2027() -> None:
    """`OracleCron.fires_ever` walks 2000-2027 only: every (month, length, weekday of the
    1st) occurs there, so a day pattern matching none of those dates matches no date."""
    shapes = set()
    d = date(2000, 1, 1)
    while d.year < 2028:
        if d.day == 1:
            length = ((d.replace(day=28) + timedelta(days=4)).replace(day=1) - d).days
            shapes.add((d.month, length, d.isoweekday() % 7))
        d += timedelta(days=1)
    assert len(shapes) == 12 * 7 + 7  # February twice: 28 and 29 days


def test_the_zones_change_their_clocks_in_the_years_walked() -> None:
    assert sum(1 for z in ZONES if len(CHANGES[z]) > 16) >= 8, {z: len(CHANGES[z]) for z in ZONES}
