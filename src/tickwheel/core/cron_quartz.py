"""Quartz day terms (`L`, `L-n`, `nW`, `LW`, `dL`, `d#n`) and which days of a month match.

The exact semantics are in docs/schedules.md. Every day term depends only on the month's
*shape* (its length and the weekday of its 1st), so `month_days` is a function of
(month, length, weekday of the 1st): a matcher computes each of the 91 shapes once, and
whether an expression can ever fire is decided exactly by trying them all (every shape
occurs in the 400-year Gregorian cycle, Feb 29 included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tickwheel.core.errors import InvalidSchedule

__all__ = [
    "NO_SPECIALS",
    "DaySpecials",
    "DayTerms",
    "month_days",
    "month_lengths",
    "parse_dom_special",
    "parse_dow_special",
    "shapes_can_fire",
]

_DOW_NAMES = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_DOM_TERM = re.compile(r"^(?:L(?:-(\d{1,2}))?|(\d{1,2})W|LW)$")
_DOW_LAST = re.compile(r"^(?:([0-7]|[A-Z]{3})L|L([0-7]))$")
_DOW_NTH = re.compile(r"^([0-7]|[A-Z]{3})#(\d{1,2})$")
DOM_TERMS_HELP = "L, L-n (n 0-30), nW (n 1-31), LW"
DOW_TERMS_HELP = "dL or Ld (last weekday d of the month, e.g. 5L, FRIL), d#n (n 1-5, e.g. MON#1)"


@dataclass(frozen=True, slots=True)
class DaySpecials:
    """The Quartz terms of an expression's two day fields.

    `dom_last` holds n for each `L-n` (`L` is 0); `dom_nearest` n for each `nW`;
    `dom_last_weekday` is `LW`; `dow_last` the weekdays d of `dL`; `dow_nth` the
    (weekday, n) pairs of `d#n`. Weekdays are 0 = Sunday … 6 = Saturday.
    """

    dom_last: tuple[int, ...] = ()
    dom_nearest: tuple[int, ...] = ()
    dom_last_weekday: bool = False
    dow_last: tuple[int, ...] = ()
    dow_nth: tuple[tuple[int, int], ...] = ()

    @property
    def any(self) -> bool:
        """True when the expression uses any Quartz day term."""
        return bool(
            self.dom_last
            or self.dom_nearest
            or self.dom_last_weekday
            or self.dow_last
            or self.dow_nth
        )


NO_SPECIALS = DaySpecials()


def _fail(message: str) -> InvalidSchedule:
    return InvalidSchedule("cron", message)


def parse_dom_special(token: str, raw: str) -> tuple[str, int] | None:
    """A day-of-month Quartz term as ("last", n) / ("nearest", n) / ("lastweekday", 0);
    None when `token` is not one."""
    match = _DOM_TERM.match(token.upper())
    if match is None:
        return None
    offset, near = match.groups()
    if token.upper() == "LW":
        return ("lastweekday", 0)
    if near is not None:
        n = int(near)
        if not 1 <= n <= 31:
            raise _fail(
                f"day-of-month field {raw!r}: {token!r} names day {n}; accepted: nW with n 1-31"
            )
        return ("nearest", n)
    n = 0 if offset is None else int(offset)
    if n > 30:
        raise _fail(
            f"day-of-month field {raw!r}: {token!r} reaches before the 1st of every month; "
            "accepted: L-n with n 0-30"
        )
    return ("last", n)


def _weekday(text: str, raw: str) -> int:
    if text.isdigit():
        return int(text) % 7
    if text in _DOW_NAMES:
        return _DOW_NAMES[text]
    raise _fail(f"day-of-week field {raw!r}: {text!r} is not a weekday; accepted: 0-7 or SUN-SAT")


def parse_dow_special(token: str, raw: str) -> tuple[str, int, int] | None:
    """A day-of-week Quartz term as ("last", d, 0) or ("nth", d, n); None when `token` is
    not one. A bare `L` is refused: Quartz reads it as Saturday, others as the last day."""
    upper = token.upper()
    if upper == "L":
        raise _fail(
            f"day-of-week field {raw!r}: a bare 'L' is ambiguous (Quartz reads it as Saturday); "
            f"accepted: {DOW_TERMS_HELP}, or 'L' in the day-of-month field for the last day"
        )
    match = _DOW_LAST.match(upper)
    if match is not None:
        return ("last", _weekday(match.group(1) or match.group(2), raw), 0)
    match = _DOW_NTH.match(upper)
    if match is not None:
        n = int(match.group(2))
        if not 1 <= n <= 5:
            raise _fail(
                f"day-of-week field {raw!r}: {token!r} asks for occurrence {n} of a weekday; "
                "accepted: d#n with n 1-5 (a month has at most five of each weekday)"
            )
        return ("nth", _weekday(match.group(1), raw), n)
    return None


@dataclass(slots=True)
class DayTerms:
    """Collects the Quartz terms of the two day fields while they are parsed."""

    dom_last: set[int] = field(default_factory=set)
    dom_nearest: set[int] = field(default_factory=set)
    dom_last_weekday: bool = False
    dow_last: set[int] = field(default_factory=set)
    dow_nth: set[tuple[int, int]] = field(default_factory=set)

    def add_dom(self, token: str, raw: str) -> bool:
        """Record a day-of-month term; False when `token` is not one."""
        term = parse_dom_special(token, raw)
        if term is None:
            return False
        kind, n = term
        if kind == "last":
            self.dom_last.add(n)
        elif kind == "nearest":
            self.dom_nearest.add(n)
        else:
            self.dom_last_weekday = True
        return True

    def add_dow(self, token: str, raw: str) -> bool:
        """Record a day-of-week term; False when `token` is not one."""
        term = parse_dow_special(token, raw)
        if term is None:
            return False
        kind, day, n = term
        if kind == "last":
            self.dow_last.add(day)
        else:
            self.dow_nth.add((day, n))
        return True

    def build(self) -> DaySpecials:
        """The collected terms, frozen and sorted (equal expressions compare equal)."""
        return DaySpecials(
            dom_last=tuple(sorted(self.dom_last)),
            dom_nearest=tuple(sorted(self.dom_nearest)),
            dom_last_weekday=self.dom_last_weekday,
            dow_last=tuple(sorted(self.dow_last)),
            dow_nth=tuple(sorted(self.dow_nth)),
        )


def month_lengths(month: int) -> tuple[int, ...]:
    """The lengths a month can have (February: 28 or 29)."""
    if month == 2:
        return (28, 29)
    return (30,) if month in (4, 6, 9, 11) else (31,)


def _nearest_weekday(n: int, length: int, first_weekday: int) -> int | None:
    if n > length:
        return None
    wd = (first_weekday + n - 1) % 7
    if wd == 6:  # Saturday: the Friday before, unless that leaves the month
        return n + 2 if n == 1 else n - 1
    if wd == 0:  # Sunday: the Monday after, unless that leaves the month
        return n - 2 if n == length else n + 1
    return n


def _dom_special_days(s: DaySpecials, length: int, first_weekday: int) -> set[int]:
    days = {length - n for n in s.dom_last if length - n >= 1}
    for n in s.dom_nearest:
        day = _nearest_weekday(n, length, first_weekday)
        if day is not None:
            days.add(day)
    if s.dom_last_weekday:
        wd = (first_weekday + length - 1) % 7
        days.add(length - {6: 1, 0: 2}.get(wd, 0))
    return days


def _dow_special_days(s: DaySpecials, length: int, first_weekday: int) -> set[int]:
    last_weekday = (first_weekday + length - 1) % 7
    days = {length - (last_weekday - d) % 7 for d in s.dow_last}
    for d, n in s.dow_nth:
        day = 1 + (d - first_weekday) % 7 + 7 * (n - 1)
        if day <= length:
            days.add(day)
    return days


def month_days(
    days_of_month: frozenset[int],
    days_of_week: frozenset[int],
    either: bool,
    specials: DaySpecials,
    length: int,
    first_weekday: int,
) -> tuple[int, ...]:
    """The matching days (1-based) of a month of `length` days whose 1st falls on
    `first_weekday` (0 = Sunday). A day-of-month term and a day-of-week term each match
    on their own; `either` (both day fields restricted) ORs the two fields, else AND."""
    dom_extra = _dom_special_days(specials, length, first_weekday) if specials.any else set()
    dow_extra = _dow_special_days(specials, length, first_weekday) if specials.any else set()
    out: list[int] = []
    for day in range(1, length + 1):
        dom_ok = day in days_of_month or day in dom_extra
        dow_ok = (first_weekday + day - 1) % 7 in days_of_week or day in dow_extra
        if (dom_ok or dow_ok) if either else (dom_ok and dow_ok):
            out.append(day)
    return tuple(out)


def shapes_can_fire(
    months: tuple[int, ...],
    days_of_month: frozenset[int],
    days_of_week: frozenset[int],
    either: bool,
    specials: DaySpecials,
) -> bool:
    """Whether any date matches: exact, since every (month, length, weekday of the 1st)
    occurs within one 400-year cycle."""
    return any(
        month_days(days_of_month, days_of_week, either, specials, length, wd)
        for month in set(months)
        if 1 <= month <= 12
        for length in month_lengths(month)
        for wd in range(7)
    )
