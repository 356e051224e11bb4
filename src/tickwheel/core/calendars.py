"""Holiday calendars, exclusions and the business-day rule, as data (docs/schedules.md §4, §5).

A calendar is a named list of local dates (its holidays) and the weekdays of its weekend
(Saturday and Sunday unless it says otherwise). A job refers to one by name with a
business-day rule: `skip` drops a slot that falls on a weekend or holiday, `next` and
`previous` move it to the nearest business day after or before, at the same local time.
Exclusions remove a job's own slots: a date removes every slot on that local date, a cron
spec every slot whose local time it names. Pure: dates are day numbers (days since
1970-01-01, as `wallclock` counts them), never `datetime`s from a clock.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tickwheel.core.cron import CronFields, parse_cron
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.wallclock import civil_from_days, days_from_civil, weekday
from tickwheel.errors import InvalidInput
from tickwheel.records import Calendar

__all__ = [
    "BUSINESS_DAY_RULES",
    "CALENDAR_NAME",
    "DEFAULT_WEEKEND",
    "MAX_CALENDAR_DATES",
    "MAX_EXCLUSIONS",
    "MAX_MOVE_DAYS",
    "BusinessCalendar",
    "ScheduleAdjustment",
    "calendar_from_record",
    "calendar_record",
    "check_calendar_name",
    "format_day",
    "make_calendar",
    "parse_adjustment",
    "parse_date",
    "parse_dates_text",
    "parse_weekend",
    "weekends_only",
]

BUSINESS_DAY_RULES = ("skip", "next", "previous")
CALENDAR_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
DEFAULT_WEEKEND = (0, 6)  # Sunday and Saturday, numbered as cron numbers days of week
MAX_CALENDAR_DATES = 10_000
MAX_EXCLUSIONS = 1_000
# A slot is moved at most this many days; with no business day that close (a calendar of
# nothing but holidays) it is dropped, so every search stays bounded (decision 0078).
MAX_MOVE_DAYS = 14
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DAY_NAMES = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_MIN_DAY, _MAX_DAY = days_from_civil(1900, 1, 1), days_from_civil(8999, 12, 31)
_DATE_HELP = "a date as YYYY-MM-DD from 1900-01-01 to 8999-12-31, e.g. 2026-12-25"
_NAME_HELP = "1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"


def format_day(z: int) -> str:
    """`2026-12-25` for a day number."""
    y, m, d = civil_from_days(z)
    return f"{y:04d}-{m:02d}-{d:02d}"


def parse_date(text: object, field: str) -> int:
    """A `YYYY-MM-DD` date as a day number; `InvalidInput` naming `field` otherwise."""
    match = _DATE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(field, f"{str(text)[:40]!r} is not a date; accepted: {_DATE_HELP}")
    y, m, d = (int(g) for g in match.groups())
    z = days_from_civil(y, m, d) if 1 <= m <= 12 and 1 <= d <= 31 else None
    if z is None or civil_from_days(z) != (y, m, d) or not _MIN_DAY <= z <= _MAX_DAY:
        raise InvalidInput(field, f"{text!r} is not a day of the calendar; accepted: {_DATE_HELP}")
    return z


def check_calendar_name(name: object, field: str = "calendar") -> str:
    """A calendar's name as given, or `InvalidInput` saying what a name may be."""
    if not isinstance(name, str) or not CALENDAR_NAME.fullmatch(name):
        raise InvalidInput(field, f"{str(name)[:70]!r}; accepted: a calendar name of {_NAME_HELP}")
    return name


def parse_weekend(value: object, field: str = "weekend") -> tuple[int, ...]:
    """Weekend days from `SAT,SUN`-style text or numbers 0-6 (0 = Sunday); may be empty."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence):
        raise InvalidInput(field, "accepted: day names such as SAT,SUN, or numbers 0-6")
    days: set[int] = set()
    for item in items:
        text = str(item).strip().upper()
        if not text:
            continue
        day = _DAY_NAMES.get(text[:3]) if not text.isdigit() else int(text)
        if day is None or not 0 <= day <= 6 or isinstance(item, bool):
            raise InvalidInput(
                field, f"{item!r} is not a day of the week; accepted: SUN-SAT or 0-6 (0 = Sunday)"
            )
        days.add(day)
    if len(days) == 7:
        raise InvalidInput(field, "every day is a weekend day; accepted: at most six of them")
    return tuple(sorted(days))


def parse_dates_text(text: str) -> list[int]:
    """The dates of a `dates.txt` file: one `YYYY-MM-DD` per line; blank lines and anything
    after `#` are ignored. A bad line is refused with its number."""
    days: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if content:
            days.append(parse_date(content, f"dates (line {number})"))
    return days


@dataclass(frozen=True, slots=True, eq=False)
class BusinessCalendar:
    """A calendar's holidays (day numbers) and weekend (weekdays, 0 = Sunday); `digest`
    names its content, so two calendars with one digest behave the same (compiled keys and
    caches use it)."""

    name: str
    holidays: frozenset[int]
    weekend: frozenset[int]
    digest: str

    def is_business_day(self, z: int) -> bool:
        return z not in self.holidays and weekday(z) not in self.weekend

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BusinessCalendar) and other.digest == self.digest


def make_calendar(
    name: str, days: Iterable[int], weekend: Iterable[int] = DEFAULT_WEEKEND
) -> BusinessCalendar:
    """A calendar from day numbers; refuses more than `MAX_CALENDAR_DATES` of them."""
    holidays = frozenset(days)
    if len(holidays) > MAX_CALENDAR_DATES:
        raise InvalidInput(
            "dates", f"{len(holidays)} dates; accepted: at most {MAX_CALENDAR_DATES} per calendar"
        )
    rest = frozenset(weekend)
    text = f"{name}|{','.join(map(str, sorted(rest)))}|{','.join(map(str, sorted(holidays)))}"
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return BusinessCalendar(name, holidays, rest, digest)


def weekends_only(name: str = "") -> BusinessCalendar:
    """Saturday and Sunday, no holidays: the business days of a rule without a calendar."""
    return make_calendar(name, ())


def calendar_record(
    name: str,
    days: Iterable[int],
    *,
    weekend: Iterable[int] = DEFAULT_WEEKEND,
    version: int,
    now_ms: int,
    description: str | None = None,
) -> Calendar:
    """The `Calendar` record published on the `calendars` topic (key = name)."""
    check_calendar_name(name, "name")
    calendar = make_calendar(name, days, weekend)
    return {
        "name": name,
        "version": version,
        "dates": [format_day(z) for z in sorted(calendar.holidays)],
        "weekend": sorted(calendar.weekend),
        "description": description,
        "updated_at": now_ms,
    }


def calendar_from_record(record: Mapping[str, Any]) -> BusinessCalendar:
    """A decoded `Calendar` record as a `BusinessCalendar`; `InvalidInput` when a field is bad
    (whoever published it)."""
    name = check_calendar_name(record.get("name"), "name")
    dates = record.get("dates")
    if not isinstance(dates, list):
        raise InvalidInput("dates", "accepted: a list of YYYY-MM-DD dates")
    days = [parse_date(d, "dates") for d in dates]
    return make_calendar(name, days, parse_weekend(record.get("weekend", list(DEFAULT_WEEKEND))))


@dataclass(frozen=True, slots=True)
class ScheduleAdjustment:
    """What a job does to its specs' slots: exclusions (local dates, cron specs whose slots
    are removed, as written in `exclude`) and an optional business-day rule with the name
    of its calendar (None: weekends only)."""

    dates: frozenset[int]
    crons: tuple[CronFields, ...]
    exclude: tuple[str, ...]
    calendar: str | None
    rule: str | None

    @property
    def moves(self) -> bool:
        return self.rule in ("next", "previous")


def parse_adjustment(
    exclude: object, calendar: object, business_days: object
) -> ScheduleAdjustment | None:
    """Validate `exclude`, `calendar` and `businessDays`; None when none is set. A calendar
    without a rule means `skip`; a rule without a calendar counts weekends only."""
    if exclude is None and calendar is None and business_days is None:
        return None
    try:
        return _adjustment(exclude, calendar, business_days)
    except InvalidSchedule:
        raise
    except InvalidInput as exc:  # a date or name check: the schedule's own error type
        raise InvalidSchedule(exc.field, exc.message) from None


def _adjustment(exclude: object, calendar: object, business_days: object) -> ScheduleAdjustment:
    if calendar is not None:
        check_calendar_name(calendar)
    rule = business_days
    if rule is None and calendar is not None:
        rule = "skip"
    if rule is not None and rule not in BUSINESS_DAY_RULES:
        raise InvalidSchedule(
            "businessDays", f"{str(rule)[:40]!r}; accepted: {', '.join(BUSINESS_DAY_RULES)}"
        )
    items: Sequence[Any] = () if exclude is None else exclude  # type: ignore[assignment]
    if not isinstance(items, list | tuple) or len(items) > MAX_EXCLUSIONS:
        raise InvalidSchedule(
            "exclude",
            f"accepted: a list of at most {MAX_EXCLUSIONS} dates (YYYY-MM-DD) or cron specs",
        )
    dates: set[int] = set()
    crons: list[CronFields] = []
    for i, item in enumerate(items):
        field = f"exclude[{i}]"
        if not isinstance(item, str):
            raise InvalidSchedule(field, f"{item!r}; accepted: a date (YYYY-MM-DD) or a cron spec")
        if _DATE.fullmatch(item.strip()):
            dates.add(parse_date(item, field))
            continue
        try:
            crons.append(parse_cron(item))
        except InvalidInput as exc:
            raise InvalidSchedule(
                field, f"neither a date (YYYY-MM-DD) nor a cron spec: {exc.message}"
            ) from None
    return ScheduleAdjustment(
        frozenset(dates),
        tuple(crons),
        tuple(items),
        None if calendar is None else str(calendar),
        None if rule is None else str(rule),
    )
