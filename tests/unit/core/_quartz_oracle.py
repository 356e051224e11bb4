"""An oracle for Quartz day terms, written from docs/schedules.md by searching the month.

It shares nothing with `tickwheel.core.cron_quartz` but the parsed term lists: every rule
is a search over the month's real dates (`calendar`), not the shape arithmetic the core uses.
"""

from __future__ import annotations

import calendar
from datetime import date

from tickwheel.core.cron import CronFields


def _weekday(d: date) -> int:
    return d.isoweekday() % 7


def quartz_day_matches(fields: CronFields, d: date) -> bool:
    """Whether date `d` matches the day fields of `fields` (Vixie rule included)."""
    length = calendar.monthrange(d.year, d.month)[1]
    month = [date(d.year, d.month, i) for i in range(1, length + 1)]
    workdays = [x for x in month if 1 <= _weekday(x) <= 5]
    s = fields.specials
    dom_days = set(fields.days_of_month)
    dom_days |= {length - n for n in s.dom_last}
    for n in s.dom_nearest:
        if n <= length:
            dom_days.add(min(workdays, key=lambda x: abs(x.day - n)).day)
    if s.dom_last_weekday:
        dom_days.add(workdays[-1].day)
    dow_days: set[int] = set()
    for w in s.dow_last:
        dow_days.add([x for x in month if _weekday(x) == w][-1].day)
    for w, n in s.dow_nth:
        hits = [x for x in month if _weekday(x) == w]
        if n <= len(hits):
            dow_days.add(hits[n - 1].day)
    dom_ok = d.day in dom_days
    dow_ok = _weekday(d) in fields.days_of_week or d.day in dow_days
    either = fields.dom_restricted and fields.dow_restricted
    return d.month in fields.months and ((dom_ok or dow_ok) if either else (dom_ok and dow_ok))
