"""Bad input is rejected quickly, with a message saying what is wrong and what is accepted."""

from __future__ import annotations

import pytest

from tickwheel.core.cron import MAX_CRON_LENGTH, parse_cron
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.errors import TickwheelError

BAD_CRON: list[tuple[str, str]] = [
    ("60 * * * *", "cron: minute field '60': 60 is out of range; accepted: 0-59"),
    ("* 24 * * *", "cron: hour field '24': 24 is out of range; accepted: 0-23"),
    ("* * * 13 *", "cron: month field '13': 13 is out of range; accepted: 1-12 or JAN-DEC"),
    ("* * 0 * *", "cron: day-of-month field '0': 0 is out of range; accepted: 1-31"),
    (
        "* * * * 8",
        "cron: day-of-week field '8': 8 is out of range; accepted: 0-7 (0 and 7 are Sunday) "
        "or SUN-SAT",
    ),
    ("60 * * * * *", "cron: second field '60': 60 is out of range; accepted: 0-59"),
    (
        "*/0 * * * *",
        "cron: minute field '*/0': step 0 is not allowed; accepted: a step from 1 to 59",
    ),
    ("* */0 * * *", "cron: hour field '*/0': step 0 is not allowed; accepted: a step from 1 to 23"),
    (
        "*/90 * * * *",
        "cron: minute field '*/90': step 90 is larger than the field's range 0-59; accepted: a "
        "step from 1 to 59 (a cron step does not carry into the next unit)",
    ),
    (
        "0 0 31 2 *",
        "cron: '0 0 31 2 *' can never fire: day-of-month 31 never occurs in FEB (FEB has at most "
        "29 days); accepted: a day-of-month from 1 to 29 for these months",
    ),
    (
        "0 0 30 2 *",
        "cron: '0 0 30 2 *' can never fire: day-of-month 30 never occurs in FEB (FEB has at most "
        "29 days); accepted: a day-of-month from 1 to 29 for these months",
    ),
    (
        "0 0 31 4,6 *",
        "cron: '0 0 31 4,6 *' can never fire: day-of-month 31 never occurs in APR,JUN (APR has "
        "at most 30 days, JUN has at most 30 days); accepted: a day-of-month from 1 to 30 for "
        "these months",
    ),
    (
        "* * * *",
        "cron: got 4 fields; accepted: 5 fields (minute hour day-of-month month day-of-week) "
        "or 6 with leading seconds",
    ),
    (
        "* * * * * * *",
        "cron: got 7 fields: a year field (Quartz's 7th) is not supported; accepted: 5 fields "
        "(minute hour day-of-month month day-of-week) or 6 with leading seconds",
    ),
    (
        "   ",
        "cron: expression is empty; accepted: 5 fields (minute hour day-of-month month "
        "day-of-week) or 6 with leading seconds",
    ),
    (
        "0 0 * * * 30",
        "cron: the 6th field '30' is read as day-of-week, where it is out of range: seconds in "
        "the last position (croniter's 6-field form) are not supported; accepted: 5 fields "
        "(minute hour day-of-month month day-of-week) or 6 with leading seconds, e.g. "
        "'30 0 9 * * *' for 09:00:30",
    ),
    (
        "H 2 * * *",
        "cron: minute field 'H': Jenkins' hashed 'H' is not supported (tickwheel spreads jobs "
        "with deterministic jitter instead); accepted: 0-59, *, ranges a-b, steps /n and comma "
        "lists",
    ),
    (
        "H(0-29)/10 2 * * *",
        "cron: minute field 'H(0-29)/10': Jenkins' hashed 'H' is not supported (tickwheel "
        "spreads jobs with deterministic jitter instead); accepted: 0-59, *, ranges a-b, steps "
        "/n and comma lists",
    ),
    ("x * * * *", "cron: minute field 'x': 'x' is not a number; accepted: 0-59"),
    (
        "1,,2 * * * *",
        "cron: minute field '1,,2': empty list item; accepted: comma-separated values",
    ),
    (
        "? * * * *",
        "cron: minute field '?': '?' is only allowed in the day fields; accepted: 0-59 or *",
    ),
    (
        "0 0 L/2 * *",
        "cron: day-of-month field 'L/2': 'L' (Quartz L/W/# syntax) takes no step or range; "
        "accepted: 1-31, *, ranges a-b, steps /n and comma lists, or on its own L, L-n "
        "(n 0-30), nW (n 1-31), LW",
    ),
    (
        "0 L * * *",
        "cron: hour field 'L': 'L' (Quartz L/W/# syntax) is only accepted in the day fields; "
        "accepted: 0-23, *, ranges a-b, steps /n and comma lists",
    ),
    (
        "0 0 * * 5#6",
        "cron: day-of-week field '5#6': '5#6' asks for occurrence 6 of a weekday; accepted: "
        "d#n with n 1-5 (a month has at most five of each weekday)",
    ),
    (
        "0 0 * * L",
        "cron: day-of-week field 'L': a bare 'L' is ambiguous (Quartz reads it as Saturday); "
        "accepted: dL or Ld (last weekday d of the month, e.g. 5L, FRIL), d#n (n 1-5, e.g. "
        "MON#1), or 'L' in the day-of-month field for the last day",
    ),
    (
        "0 0 L-31 * *",
        "cron: day-of-month field 'L-31': 'L-31' reaches before the 1st of every month; "
        "accepted: L-n with n 0-30",
    ),
    (
        "0 0 30W 2 *",
        "cron: '0 0 30W 2 *' can never fire: no day of FEB matches day-of-month '30W' with "
        "day-of-week '*' in any year; accepted: an expression some date matches (e.g. 30W or "
        "L-29 need a month that long)",
    ),
    (
        "0 0 L-29 2 *",
        "cron: '0 0 L-29 2 *' can never fire: no day of FEB matches day-of-month 'L-29' with "
        "day-of-week '*' in any year; accepted: an expression some date matches (e.g. 30W or "
        "L-29 need a month that long)",
    ),
    (
        "@reboot",
        "cron: unknown macro '@reboot'; accepted: @yearly, @annually, @monthly, @weekly, "
        "@daily, @midnight, @hourly",
    ),
    (
        "0 9 * * l\u00fcn",
        "cron: expression contains the non-ASCII character '\u00fc' at position 9; accepted: "
        "ASCII digits, letters, spaces and the symbols * ? , - / #",
    ),
    (
        "0 9 * * *\u00a0",
        "cron: expression contains the non-ASCII character '\\xa0' at position 9; accepted: "
        "ASCII digits, letters, spaces and the symbols * ? , - / #",
    ),
    (
        "1," * 200 + "1 * * * *",
        f"cron: expression is {len('1,' * 200 + '1 * * * *')} characters long; accepted: at "
        f"most {MAX_CRON_LENGTH}",
    ),
]


@pytest.mark.parametrize(("cron", "message"), BAD_CRON, ids=[c[:30] for c, _ in BAD_CRON])
def test_bad_cron_is_rejected_with_exact_message(cron: str, message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        parse_schedule(cron=cron, timezone="UTC")
    assert str(info.value) == message
    assert info.value.field == "cron"
    assert isinstance(info.value, TickwheelError) and isinstance(info.value, ValueError)


BAD_ZONES: list[tuple[str, str]] = [
    (
        "Mars/Olympus",
        "timezone: unknown time zone 'Mars/Olympus'; accepted: an IANA zone name such as "
        "'Europe/London', 'America/New_York' or 'UTC'",
    ),
    (
        "UTC+3",
        "timezone: 'UTC+3' is a fixed UTC offset, not an IANA time zone; accepted: an IANA zone "
        "name for the place, such as 'Europe/Moscow' or 'Asia/Kolkata', or 'Etc/GMT-3' for a "
        "fixed UTC+03:00 (the sign of Etc/GMT zones is inverted)",
    ),
    (
        "+05:30",
        "timezone: '+05:30' is a fixed UTC offset, not an IANA time zone; accepted: an IANA zone "
        "name for the place, such as 'Europe/Moscow' or 'Asia/Kolkata'",
    ),
    (
        "europe/london",
        "timezone: unknown time zone 'europe/london'; did you mean 'Europe/London'? accepted: "
        "an IANA zone name, spelled exactly (names are case-sensitive)",
    ),
    (
        "localtime",
        "timezone: 'localtime' is the host's zone, which differs between machines; accepted: an "
        "IANA zone name such as 'Europe/London', 'America/New_York' or 'UTC'",
    ),
    (
        "../../etc/passwd",
        "timezone: unknown time zone '../../etc/passwd'; accepted: an IANA zone name such as "
        "'Europe/London', 'America/New_York' or 'UTC'",
    ),
    (
        "",
        "timezone: time zone is empty; accepted: an IANA zone name such as 'Europe/London', "
        "'America/New_York' or 'UTC' (omit it for UTC)",
    ),
    (
        "Europe/Z\u00fcrich",
        "timezone: time zone name contains the non-ASCII character '\u00fc'; accepted: an IANA "
        "zone name such as 'Europe/London', 'America/New_York' or 'UTC'",
    ),
    (
        "A" * 65,
        "timezone: time zone name is 65 characters long; accepted: an IANA zone name of at most "
        "64 characters such as 'Europe/London', 'America/New_York' or 'UTC'",
    ),
]


@pytest.mark.parametrize(("zone", "message"), BAD_ZONES, ids=[z[:20] for z, _ in BAD_ZONES])
def test_bad_zone_is_rejected_with_exact_message(zone: str, message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        parse_schedule(cron="0 9 * * *", timezone=zone)
    assert str(info.value) == message
    assert info.value.field == "timezone"


BAD_OTHER: list[tuple[dict[str, object], str, str]] = [
    (
        {"cron": "0 9 * * *", "run_at": "2030-01-01T09:00:00Z"},
        "schedule",
        "schedule: both cron and runAt are set; accepted: exactly one of runAt, or cron with "
        "timezone",
    ),
    (
        {},
        "schedule",
        "schedule: neither cron nor runAt is set; accepted: exactly one of runAt (ISO 8601 with "
        "an offset), or cron with timezone, or every (a duration such as '90m')",
    ),
    (
        {"run_at": "2030-01-01T09:00:00"},
        "runAt",
        "runAt: '2030-01-01T09:00:00' has no UTC offset; accepted: ISO 8601 with an offset, e.g. "
        "2030-01-01T09:00:00Z or 2030-01-01T09:00:00+01:00",
    ),
    (
        {"run_at": "next tuesday"},
        "runAt",
        "runAt: 'next tuesday' is not an ISO 8601 date-time; accepted: e.g. 2030-01-01T09:00:00Z "
        "or 2030-01-01T09:00:00+01:00",
    ),
    (
        {"run_at": "2030-01-01T09:00:00Z", "timezone": "UTC"},
        "timezone",
        "timezone: a timezone applies only to cron schedules; accepted: runAt carrying its own "
        "offset (e.g. 2030-01-01T09:00:00+01:00) and no timezone",
    ),
    (
        {"cron": "0 9 * * *", "dst_policy": "sometimes"},
        "dstPolicy",
        "dstPolicy: unknown DST policy 'sometimes'; accepted: auto, fixed (= shift_earlier), "
        "timeline (= skip_both), or <gap>_<fold> with gap shift|skip and fold "
        "earlier|later|both (e.g. skip_earlier)",
    ),
    ({"cron": 5}, "cron", "cron: expected a string, got int"),
]


@pytest.mark.parametrize(
    ("kwargs", "field", "message"), BAD_OTHER, ids=[m[:40] for _, _, m in BAD_OTHER]
)
def test_other_bad_schedule_fields(kwargs: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        parse_schedule(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert info.value.field == field


def test_missing_zone_means_utc_explicitly() -> None:
    schedule = parse_schedule(cron="0 9 * * *")
    assert schedule.timezone == "UTC"
    compiled = compile_schedule(schedule)
    # 2024-01-01T00:00Z -> 09:00Z the same day, whatever the host's zone is.
    assert compiled.next_after(1_704_067_200_000) == 1_704_067_200_000 + 9 * 3_600_000


def test_run_at_with_offset_is_one_instant() -> None:
    compiled = compile_schedule(parse_schedule(run_at="2030-01-01T10:00:00+01:00"))
    instant = 1_893_488_400_000  # 2030-01-01T09:00:00Z
    assert compiled.next_after(instant - 1) == instant
    assert compiled.next_after(instant) is None
    assert compiled.occurrences(0, instant) == [instant]
    assert compiled.nominal_period_ms is None


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        # Both day fields restricted: either matching is enough (Vixie semantics).
        ("0 0 13 * 5", "either"),
        # A day field starting with * counts as unrestricted: both must match.
        ("0 0 */2 * 5", "both"),
        ("0 0 13 * *", "dom"),
        ("0 0 * * FRI", "dow"),
    ],
)
def test_day_of_month_and_day_of_week_combine_like_cron(cron: str, expected: str) -> None:
    compiled = compile_schedule(parse_schedule(cron=cron))
    # January 2026: the 13th is a Tuesday; Fridays are 2, 9, 16, 23, 30.
    start = 1_767_225_600_000 - 1  # 2026-01-01T00:00:00Z minus 1 ms
    days = [
        (ms - start) // 86_400_000 + 1
        for ms in compiled.occurrences(start, start + 31 * 86_400_000)
    ]
    fridays, odd_days = [2, 9, 16, 23, 30], list(range(1, 32, 2))
    want = {
        "either": sorted({13, *fridays}),
        "both": [d for d in fridays if d in odd_days],
        "dom": [13],
        "dow": fridays,
    }[expected]
    assert days == want


def test_six_field_macros_names_and_sunday_seven() -> None:
    fields = parse_cron("0 30 9 * jan-MAR mon-fri")
    assert fields.has_seconds and fields.hours == (9,) and fields.minutes == (30,)
    assert fields.months == (1, 2, 3) and fields.days_of_week == (1, 2, 3, 4, 5)
    assert parse_cron("0 0 * * 7").days_of_week == (0,)
    assert parse_cron("0 0 * * 5-7").days_of_week == (0, 5, 6)
    assert parse_cron("@hourly").minutes == (0,) and parse_cron("@hourly").every_hour
    assert parse_cron("15/20 * * * *").minutes == (15, 35, 55)
    assert parse_cron("0 0 31 2 MON").dom_restricted  # fires on February Mondays


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "cron",
    [
        "*/1," * 62 + "* * * * *",
        ",".join(["0-59/1"] * 30) + " * * * *",
        "9" * 250 + " * * * *",
        "1/1 " * 6,
    ],
)
def test_no_expression_hangs_the_parser(cron: str) -> None:
    try:
        parse_schedule(cron=cron, timezone="UTC")
    except InvalidSchedule as exc:
        assert exc.field == "cron" and "accepted" in exc.message
