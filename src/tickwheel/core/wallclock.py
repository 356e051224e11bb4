"""Wall-clock matching of a compiled cron expression, as plain integer arithmetic.

A *wall* is a naive local time written as seconds since 1970-01-01T00:00 on the local
calendar (no zone, no DST): day number `z = wall // 86400`, time of day `wall % 86400`.
`WallMatcher` answers "which walls in [lo, hi) match?" without a cron library and
without building datetimes: days are checked through a per-year list of matching day
numbers, times of day through the sorted hour/minute/second tuples. Time zones and the
DST policy are applied on top of this by `tickwheel.core.schedule`.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterator

from tickwheel.core.cron import CronFields
from tickwheel.core.cron_quartz import month_days

DAY_S = 86_400
# Times of day are materialised as one tuple when there are at most this many per day.
_TOD_TUPLE_LIMIT = 4096
# Dates and weekdays repeat every 400 years (146,097 days = 20,871 weeks): a day pattern
# that matches nothing in one cycle matches nothing ever, so no day search looks further.
CYCLE_DAYS = 146_097
_MAX_YEARS_AHEAD = 401
_YEAR_CACHE_LIMIT = 64


def days_from_civil(year: int, month: int, day: int) -> int:
    """Day number (days since 1970-01-01) of a proleptic Gregorian date (H. Hinnant)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of a day number (inverse of `days_from_civil`)."""
    z += 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def weekday(z: int) -> int:
    """Day of week of a day number, 0 = Sunday (1970-01-01 was a Thursday)."""
    return (z + 4) % 7


def _month_length(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _clean(values: tuple[int, ...], low: int, high: int) -> tuple[int, ...]:
    return tuple(sorted({v for v in values if low <= v <= high}))


def _min_step(values: tuple[int, ...]) -> int | None:
    if len(values) < 2:
        return None
    return min(b - a for a, b in itertools.pairwise(values))


class WallMatcher:
    """Answers which walls match one cron expression; cheap to share between schedules."""

    __slots__ = (
        "_all_days",
        "_dom",
        "_dom_r",
        "_dow",
        "_dow_r",
        "_fires",
        "_h",
        "_m",
        "_min_gap",
        "_months",
        "_s",
        "_shapes",
        "_specials",
        "_tod",
        "_tod_count",
        "_year_days",
    )

    def __init__(self, fields: CronFields) -> None:
        # `parse_cron` only yields in-range sorted sets; a CronFields built by hand might
        # not, and an out-of-range hour would turn into a wall on another day.
        self._h = _clean(fields.hours, 0, 23)
        self._m = _clean(fields.minutes, 0, 59)
        self._s = _clean(fields.seconds, 0, 59)
        self._fires = fields.can_fire
        self._tod_count = len(self._h) * len(self._m) * len(self._s)
        self._tod: tuple[int, ...] | None = None
        if self._tod_count <= _TOD_TUPLE_LIMIT:
            self._tod = tuple(
                h * 3600 + m * 60 + s for h in self._h for m in self._m for s in self._s
            )
        self._months = frozenset(m for m in fields.months if 1 <= m <= 12)
        self._dom = frozenset(fields.days_of_month)
        self._dow = frozenset(fields.days_of_week)
        self._dom_r = fields.dom_restricted
        self._dow_r = fields.dow_restricted
        self._specials = fields.specials
        self._all_days = len(self._months) == 12 and len(self._dom) == 31 and len(self._dow) == 7
        # A month's matching days depend only on its length and the weekday of its 1st.
        self._shapes: dict[tuple[int, int], tuple[int, ...]] = {}
        self._year_days: dict[int, list[int]] = {}
        self._min_gap: int | None = None

    @property
    def fires(self) -> bool:
        """False when no wall ever matches; every search then answers at once."""
        return self._fires

    # -- days -------------------------------------------------------------------------

    def _month_days(self, length: int, first_weekday: int) -> tuple[int, ...]:
        shape = (length, first_weekday)
        days = self._shapes.get(shape)
        if days is None:
            either = self._dom_r and self._dow_r
            days = month_days(self._dom, self._dow, either, self._specials, length, first_weekday)
            self._shapes[shape] = days
        return days

    def _days_of_year(self, year: int) -> list[int]:
        days = self._year_days.get(year)
        if days is None:
            days = []
            for month in sorted(self._months):
                first = days_from_civil(year, month, 1)
                for day in self._month_days(_month_length(year, month), weekday(first)):
                    days.append(first + day - 1)
            if len(self._year_days) >= _YEAR_CACHE_LIMIT:
                self._year_days.clear()
            self._year_days[year] = days
        return days

    def day_matches(self, z: int) -> bool:
        """True when day number `z` is a matching day."""
        if not self._fires:
            return False
        if self._all_days:
            return True
        year, month, day = civil_from_days(z)
        if month not in self._months:
            return False
        return day in self._month_days(_month_length(year, month), weekday(z - day + 1))

    def next_day(self, z: int, stop: int | None = None) -> int | None:
        """The first matching day number in [z, stop), or None.

        The scan covers at most one 400-year cycle whatever `stop` is (module constant
        `CYCLE_DAYS`): past it the pattern only repeats.
        """
        if not self._fires:
            return None
        if self._all_days:
            return z if stop is None or z < stop else None
        limit = z + CYCLE_DAYS if stop is None else min(stop, z + CYCLE_DAYS)
        year = civil_from_days(z)[0]
        last_year = civil_from_days(limit - 1)[0] if limit > z else year - 1
        for y in range(year, min(last_year + 1, year + _MAX_YEARS_AHEAD)):
            days = self._days_of_year(y)
            i = bisect_left(days, z)
            if i < len(days):
                return days[i] if days[i] < limit else None
        return None

    def count_days(self, z0: int, z1: int) -> int:
        """How many matching days lie in [z0, z1)."""
        if z1 <= z0 or not self._fires:
            return 0
        if self._all_days:
            return z1 - z0
        y0 = civil_from_days(z0)[0]
        y1 = civil_from_days(z1 - 1)[0]
        total = 0
        for y in range(y0, y1 + 1):
            days = self._days_of_year(y)
            total += bisect_left(days, z1) - bisect_left(days, z0)
        return total

    # -- times of day -------------------------------------------------------------------

    def next_tod(self, x: int) -> int | None:
        """The first matching time of day >= x seconds, or None if none is left today."""
        if self._tod is not None:
            i = bisect_left(self._tod, x)
            return self._tod[i] if i < len(self._tod) else None
        hours, minutes, seconds = self._h, self._m, self._s
        h, rest = divmod(x, 3600)
        m, s = divmod(rest, 60)
        i = bisect_left(hours, h)
        if i < len(hours) and hours[i] == h:
            j = bisect_left(minutes, m)
            if j < len(minutes) and minutes[j] == m:
                k = bisect_left(seconds, s)
                if k < len(seconds):
                    return h * 3600 + m * 60 + seconds[k]
                j += 1
            if j < len(minutes):
                return h * 3600 + minutes[j] * 60 + seconds[0]
            i += 1
        if i < len(hours):
            return hours[i] * 3600 + minutes[0] * 60 + seconds[0]
        return None

    def count_tod_below(self, x: int) -> int:
        """How many matching times of day are < x seconds (x in 0..86400)."""
        hours, minutes, seconds = self._h, self._m, self._s
        h, rest = divmod(x, 3600)
        m, s = divmod(rest, 60)
        i = bisect_left(hours, h)
        count = i * len(minutes) * len(seconds)
        if i < len(hours) and hours[i] == h:
            j = bisect_left(minutes, m)
            count += j * len(seconds)
            if j < len(minutes) and minutes[j] == m:
                count += bisect_left(seconds, s)
        return count

    def _iter_tod(self, start: int, stop: int) -> Iterator[int]:
        if self._tod is not None:
            tod = self._tod
            yield from tod[bisect_left(tod, start) : bisect_left(tod, stop)]
            return
        t = self.next_tod(start)
        while t is not None and t < stop:
            yield t
            t = self.next_tod(t + 1)

    # -- walls --------------------------------------------------------------------------

    def first_wall(self, lo: int, hi: int) -> int | None:
        """The first matching wall in [lo, hi), or None."""
        z = lo // DAY_S
        x = lo - z * DAY_S
        stop = -(-hi // DAY_S)
        while z * DAY_S < hi:
            nz = self.next_day(z, stop)
            if nz is None:
                return None
            if nz != z:
                z, x = nz, 0
                continue
            t = self.next_tod(x)
            if t is not None:
                wall = z * DAY_S + t
                return wall if wall < hi else None
            z, x = z + 1, 0
        return None

    def walls(self, lo: int, hi: int) -> list[int]:
        """Every matching wall in [lo, hi), ascending."""
        out: list[int] = []
        z = lo // DAY_S
        x = lo - z * DAY_S
        last = -(-hi // DAY_S)
        while z * DAY_S < hi:
            nz = self.next_day(z, last)
            if nz is None:
                break
            if nz != z:
                z, x = nz, 0
                continue
            base = z * DAY_S
            stop = min(hi - base, DAY_S)
            out.extend([base + t for t in self._iter_tod(x, stop)])
            z, x = z + 1, 0
        return out

    def count_walls(self, lo: int, hi: int) -> int:
        """How many matching walls lie in [lo, hi)."""
        if hi <= lo or not self._fires:
            return 0
        z0, z1 = lo // DAY_S, (hi - 1) // DAY_S
        below = self.count_tod_below
        if z0 == z1:
            if not self.day_matches(z0):
                return 0
            return below(hi - z0 * DAY_S) - below(lo - z0 * DAY_S)
        total = self.count_days(z0 + 1, z1) * self._tod_count
        if self.day_matches(z0):
            total += self._tod_count - below(lo - z0 * DAY_S)
        if self.day_matches(z1):
            total += below(hi - z1 * DAY_S)
        return total

    def min_gap_s(self) -> int | None:
        """The smallest distance between two consecutive matching walls, in seconds;
        None when nothing ever matches."""
        if not self._fires:
            return None
        if self._min_gap is None:
            h, m, s = self._h, self._m, self._s
            candidates: list[int] = []
            if (step := _min_step(s)) is not None:
                candidates.append(step)
            if (step := _min_step(m)) is not None:
                candidates.append(step * 60 - (s[-1] - s[0]))
            if (step := _min_step(h)) is not None:
                candidates.append(step * 3600 - (m[-1] * 60 + s[-1] - m[0] * 60 - s[0]))
            first = h[0] * 3600 + m[0] * 60 + s[0]
            last = h[-1] * 3600 + m[-1] * 60 + s[-1]
            candidates.append(self._min_day_gap() * DAY_S - (last - first))
            self._min_gap = min(candidates)
        return self._min_gap

    def _min_day_gap(self) -> int:
        if self._all_days:
            return 1
        # 2000-2028 holds every combination of weekday, month length and leap year
        # except the skipped century leap day, which only makes gaps longer.
        days: list[int] = []
        for year in range(2000, 2029):
            days.extend(self._days_of_year(year))
        if len(days) < 2:
            # Only contrived AND-combinations (a leap day on one weekday) get here.
            days = []
            for year in range(2000, 2401):
                days.extend(self._days_of_year(year))
            self._year_days.clear()
        # A pattern matching once per cycle recurs after the whole cycle.
        return min((b - a for a, b in itertools.pairwise(days)), default=CYCLE_DAYS)
