"""A brute-force cron oracle, written from docs/schedules.md and decision 0010 alone.

It reads the expression's text itself and shares no code with `tickwheel.core`: every local
day is tested against the day fields (a search over the month's real dates for the Quartz
terms), every hour, minute and second of a matching day against the time fields, and each
matching local wall is resolved to UTC with `zoneinfo` under the DST policy. Slow and plain
on purpose; its only cleverness is stopping once the next instants are settled.

It reads only what the grammar accepts (the fuzzer's strategy writes nothing else), so it
has no error messages: a text outside the grammar may raise anything.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

MACROS = {  # decision 0011
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

DayTest = Callable[[date], bool]


def _number(text: str, names: dict[str, int]) -> int:
    return names[text.upper()] if text.upper() in names else int(text)


def _walk(a: int, b: int, low: int, high: int) -> list[int]:
    """a, a+1, ..., b, going on from `low` after `high` when b < a (a range that wraps)."""
    out = [a]
    while out[-1] != b:
        out.append(low if out[-1] == high else out[-1] + 1)
    return out


def values(item: str, low: int, high: int, names: dict[str, int], weekday: bool) -> set[int]:
    """The values one plain list item selects (§1.1). For day-of-week `high` is 6 and 7 is
    Sunday: as a range's end it is the week's end (`5-7`, `7-7`), as its start Sunday (`7-2`)."""
    base, slash, step = item.partition("/")
    if base in ("*", "?"):
        seq = list(range(low, high + 1))
    elif "-" in base:
        a, b = (_number(x, names) for x in base.split("-"))
        if weekday and b == 7:
            seq = list(range(a, 8))
        else:
            seq = _walk(0 if weekday and a == 7 else a, b, low, high)
    else:
        a = _number(base, names)
        seq = list(range(a, high + 1)) if slash else [a]  # `a/n`: from a to the field's end
    picked = seq[:: int(step) if slash else 1]
    return {0 if weekday and v == 7 else v for v in picked}


def _weekday(d: date) -> int:
    return d.isoweekday() % 7  # 0 = Sunday, as cron counts


@lru_cache(maxsize=4096)
def _dates(year: int, month: int) -> tuple[date, ...]:
    return tuple(date(year, month, i) for i in range(1, calendar.monthrange(year, month)[1] + 1))


def _month(d: date) -> tuple[date, ...]:
    return _dates(d.year, d.month)


def _workdays(d: date) -> list[date]:
    return [x for x in _month(d) if 1 <= _weekday(x) <= 5]


def dom_test(item: str) -> DayTest:
    """One day-of-month list item as a test of a date (§1.2 for the terms)."""
    up = item.upper()
    if up == "L":
        return lambda d: d == _month(d)[-1]
    if up == "LW":
        return lambda d: d == _workdays(d)[-1]
    if m := re.fullmatch(r"L-(\d+)", up):
        n = int(m.group(1))
        return lambda d: d.day == len(_month(d)) - n
    if m := re.fullmatch(r"(\d+)W", up):
        n = int(m.group(1))
        # The weekday nearest day n within the month; a month without day n has none.
        return lambda d: (
            n <= len(_month(d)) and d == min(_workdays(d), key=lambda x: abs(x.day - n))
        )
    days = values(item, 1, 31, {}, weekday=False)
    return lambda d: d.day in days


def dow_test(item: str) -> DayTest:
    """One day-of-week list item as a test of a date (§1.2 for the terms)."""
    up = item.upper()
    if m := re.fullmatch(r"(\w+)#(\d+)", up):
        w, n = _number(m.group(1), DAYS) % 7, int(m.group(2))
        return lambda d: (
            _weekday(d) == w and [x for x in _month(d) if _weekday(x) == w].index(d) == n - 1
        )
    if (m := re.fullmatch(r"(\w+)L", up)) or (m := re.fullmatch(r"L(\w+)", up)):
        w = _number(m.group(1), DAYS) % 7
        return lambda d: d == [x for x in _month(d) if _weekday(x) == w][-1]
    days = values(item, 0, 6, DAYS, weekday=True)
    return lambda d: _weekday(d) in days


class OracleCron:
    """One expression as the written rules read it."""

    def __init__(self, expression: str) -> None:
        text = " ".join(expression.split())
        fields = MACROS[text.lower()].split() if text.startswith("@") else text.split()
        if len(fields) == 5:
            fields = ["0", *fields]
        second, minute, hour, dom, month, dow = fields

        def plain(field: str, low: int, high: int, names: dict[str, int]) -> list[int]:
            chosen = set().union(*(values(i, low, high, names, False) for i in field.split(",")))
            return sorted(chosen)

        self.seconds = plain(second, 0, 59, {})
        self.minutes = plain(minute, 0, 59, {})
        self.hours = plain(hour, 0, 23, {})
        self.months = plain(month, 1, 12, MONTHS)
        self.dom = [dom_test(i) for i in dom.split(",")]
        self.dow = [dow_test(i) for i in dow.split(",")]
        # Vixie's rule (§1.3): a day field is restricted unless it starts with * or ?.
        self.either = not dom.startswith(("*", "?")) and not dow.startswith(("*", "?"))
        self._years: dict[int, list[date]] = {}

    def day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom = any(test(d) for test in self.dom)
        dow = any(test(d) for test in self.dow)
        return (dom or dow) if self.either else (dom and dow)

    def days_of(self, year: int) -> list[date]:
        """The matching dates of a year, each of its days tested (kept: every zone asks)."""
        if year not in self._years:
            d, found = date(year, 1, 1), []
            while d.year == year:
                if self.day_matches(d):
                    found.append(d)
                d += timedelta(days=1)
            self._years[year] = found
        return self._years[year]

    def fires_ever(self) -> bool:
        """Whether any date matches: every month's shape (length, weekday of the 1st) occurs
        in 2000-2027 (`test_every_month_shape_occurs_in_2000_to_2027`)."""
        has_time = self.seconds and self.minutes and self.hours
        return bool(has_time) and any(self.days_of(year) for year in range(2000, 2028))

    def walls(self, since: datetime, last: date) -> Iterator[datetime]:
        """Every matching local wall from `since` to the end of day `last`, in order."""
        for year in range(since.year, last.year + 1):
            for day in self.days_of(year):
                if day < since.date() or day > last:
                    continue
                # On the first day, only the times from `since` on.
                first = (since.hour, since.minute, since.second) if day == since.date() else ()
                for h in self.hours:
                    if (h,) < first[:1]:
                        continue
                    for m in self.minutes:
                        if (h, m) < first[:2]:
                            continue
                        for s in self.seconds:
                            if (h, m, s) >= first:
                                yield datetime(day.year, day.month, day.day, h, m, s)

    def policy(self, name: str) -> tuple[str, str]:
        """(gap, fold) of a dstPolicy (decision 0010): `auto` follows the hour field."""
        name = {"fixed": "shift_earlier", "timeline": "skip_both"}.get(name, name)
        if name == "auto":
            name = "skip_both" if self.hours == list(range(24)) else "shift_earlier"
        gap, fold = name.split("_")
        return gap, fold

    def fire_times(
        self, zone: str, policy: str, after_s: int, count: int, until_s: int
    ) -> list[int]:
        """The first `count` instants (UTC seconds) in (after_s, until_s]."""
        tz = ZoneInfo(zone)
        gap, fold = self.policy(policy)
        # A wall before `after_s` plus the zone's smallest offset in the next day (a fold
        # repeats walls of at most a few hours) fires before `after_s`.
        lowest = min(_offset(after_s + h * 3600, tz) for h in range(25))
        since = datetime(1970, 1, 1) + timedelta(seconds=after_s + lowest)
        last = (EPOCH + timedelta(seconds=until_s)).astimezone(tz).date() + timedelta(days=2)
        found: set[int] = set()
        settled_at: int | None = None
        for wall in self.walls(since, last):
            naive_s = int((wall.replace(tzinfo=UTC) - EPOCH).total_seconds())
            if naive_s - 14 * 3600 > until_s:  # no UTC offset reaches back further
                break
            if settled_at is not None and naive_s > settled_at:
                break
            found.update(u for u in resolve(wall, tz, gap, fold) if after_s < u <= until_s)
            if settled_at is None and len(found) >= count:
                # A later wall may still resolve before the count-th instant (a fold), but
                # only by the largest offset of the day before it: walk on past that wall.
                kth = sorted(found)[count - 1]
                settled_at = kth + max(_offset(kth - h * 3600, tz) for h in range(25))
        return sorted(found)[:count]


def _offset(u: int, tz: ZoneInfo) -> int:
    offset = (EPOCH + timedelta(seconds=u)).astimezone(tz).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def resolve(wall: datetime, tz: ZoneInfo, gap: str, fold: str) -> list[int]:
    """The instants (UTC seconds) a matching wall fires at, by decision 0010: a wall read
    back from both of zoneinfo's folds is real once or twice (a repeated hour); a wall in
    a spring-forward gap fires at the gap's end (`shift`) or not at all (`skip`)."""
    guesses = [int((wall.replace(tzinfo=tz, fold=f) - EPOCH).total_seconds()) for f in (0, 1)]
    if guesses[0] == guesses[1]:  # both folds read it alike: an ordinary wall
        return guesses[:1]
    real = sorted(
        {
            u
            for u in guesses
            if (EPOCH + timedelta(seconds=u)).astimezone(tz).replace(tzinfo=None) == wall
        }
    )
    if not real:
        if gap == "skip":
            return []
        # The transition: the first second after which the offset is the later one.
        lo, hi = min(guesses), max(guesses)
        after = _offset(hi, tz)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _offset(mid, tz) == after else (mid, hi)
        return [hi]
    if len(real) == 2 and fold != "both":
        return [real[0] if fold == "earlier" else real[1]]
    return real
