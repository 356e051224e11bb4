"""Schedules in words: a pure English rendering of any accepted schedule.

Rendered from the parsed fields (never the text), so two spellings of one schedule read
the same. Common shapes get plain phrases ("at 02:00 every day", "every 5 minutes", "at
18:00 on the last weekday of every month"); anything else falls back to listing each
field, which is exact if less elegant. The zone is named unless it is UTC; the DST
policy is named when it is not the default for the schedule.
"""

from __future__ import annotations

import itertools

from tickwheel.core.cron import CronFields
from tickwheel.core.schedule import Schedule
from tickwheel.core.timefmt import format_utc
from tickwheel.durations import format_duration_ms

__all__ = ["describe"]

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_NTH = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}
_UNITS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def _list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _times(f: CronFields) -> str:
    if len(f.hours) == 24 and len(f.minutes) == 60 and len(f.seconds) == 60:
        return "every second"
    if len(f.hours) == 24 and len(f.minutes) == 60 and f.seconds == (0,):
        return "every minute"
    if len(f.hours) == 24 and len(f.minutes) == 60:  # a six-field cron: by the second
        every = _step(f.seconds, 60)
        if every and f.seconds[0] == 0:
            return f"every {every} seconds"
        unit = "second" if len(f.seconds) == 1 else "seconds"
        return f"every minute at {unit} " + _list([str(s) for s in f.seconds])
    step = _step(f.minutes, 60)
    if len(f.hours) == 24 and step and f.seconds == (0,) and f.minutes[0] == 0:
        return f"every {step} minutes"
    if len(f.hours) == 24 and f.seconds == (0,) and len(f.minutes) <= 4:
        return "every hour at minute " + _list([str(m) for m in f.minutes])
    if len(f.hours) * len(f.minutes) * len(f.seconds) <= 6:
        sec = f.has_seconds and any(f.seconds)
        shown = [
            f"{h:02d}:{m:02d}" + (f":{s:02d}" if sec else "")
            for h in f.hours
            for m in f.minutes
            for s in f.seconds
        ]
        return "at " + _list(shown)
    seconds = "" if f.seconds == (0,) else f"at second(s) {_list([str(s) for s in f.seconds])} of "
    return (
        f"{seconds or 'at '}minute(s) {_list([str(m) for m in f.minutes])} of hour(s) "
        f"{_list([str(h) for h in f.hours])}"
    )


def _step(values: tuple[int, ...], size: int) -> int | None:
    if len(values) < 2:
        return None
    step = values[1] - values[0]
    ok = all(b - a == step for a, b in itertools.pairwise(values))
    return step if ok and size % step == 0 and len(values) == size // step else None


def _dom_terms(f: CronFields) -> list[str]:
    s = f.specials
    out = [f"the {_ordinal(d)}" for d in f.days_of_month] if len(f.days_of_month) < 31 else []
    out += ["the last day" if n == 0 else f"{n} days before the last day" for n in s.dom_last]
    out += [f"the weekday nearest the {_ordinal(n)}" for n in s.dom_nearest]
    out += ["the last weekday"] if s.dom_last_weekday else []
    return out


def _dow_terms(f: CronFields) -> list[str]:
    s = f.specials
    if f.days_of_week == (1, 2, 3, 4, 5):
        out = ["weekdays"]
    else:
        out = [_DAYS[d] for d in f.days_of_week] if len(f.days_of_week) < 7 else []
    out += [f"the last {_DAYS[d]}" for d in s.dow_last]
    out += [f"the {_NTH[n]} {_DAYS[d]}" for d, n in s.dow_nth]
    return out


def _days(f: CronFields) -> str:
    dom = _dom_terms(f) if f.dom_restricted or len(f.days_of_month) < 31 else []
    dow = _dow_terms(f) if f.dow_restricted or len(f.days_of_week) < 7 else []
    months = "" if len(f.months) == 12 else " in " + _list([_MONTHS[m - 1] for m in f.months])
    period = "of every month" if not months else ""
    if not dom and not dow:
        return "every day" + months
    joiner = " or " if f.dom_restricted and f.dow_restricted else " if it is also "
    parts = []
    if dom:
        parts.append(f"on {_list(dom)}" + (f" {period}" if period else ""))
    if dow:
        parts.append(
            ("on " if not dom else "") + _list(dow) if dow != ["weekdays"] or dom else "on weekdays"
        )
    text = joiner.join(parts) if dom else parts[0]
    return text + months


def _spec_words(schedule: Schedule, business_month_end: bool = False) -> str:
    """One spec (cron or interval) in words, without its zone."""
    if schedule.kind == "every":
        assert schedule.every_ms is not None
        text = format_duration_ms(schedule.every_ms)
        number, unit = text[:-1], _UNITS.get(text[-1], "")
        words = f"every {unit}" if number == "1" else f"every {number} {unit}s"
        if schedule.phase_ms:
            words += f" from {format_utc(schedule.phase_ms)}"
        return words
    f = schedule.cron
    assert f is not None
    times, days = _times(f), _days(f)
    if business_month_end:
        days = days.replace("on the last day", "on the last business day", 1)
    return f"{times} {days}" if days != "every day" or times.startswith("at") else times


def _is_month_end(schedule: Schedule) -> bool:
    """`L` alone in day-of-month (any day-of-week left open): with the `previous` rule, that
    is the last business day of the month."""
    f = schedule.cron
    return (
        f is not None
        and f.specials.dom_last == (0,)
        and not f.days_of_month
        and not f.dow_restricted
        and not (f.specials.dom_nearest or f.specials.dom_last_weekday)
    )


def _adjustment_words(schedule: Schedule, month_end: bool) -> str:
    adj = schedule.adjustment
    if adj is None:
        return ""
    words = ""
    if adj.exclude:
        dates = [e for e in adj.exclude if e.strip()[:1].isdigit() and len(e.strip()) == 10]
        crons = [e for e in adj.exclude if e not in dates]
        parts = [f"on {_list(dates)}"] if dates else []
        parts += [f"at '{c}'" for c in crons]
        words += ", except " + _list(parts)
    if adj.rule is not None:
        if month_end and adj.rule == "previous":
            # The business day is in "the last business day" already (the issue's own words).
            return words + (
                ", skipping weekends"
                if adj.calendar is None
                else f", skipping the {adj.calendar!r} calendar"
            )
        days_off = "weekends" + (
            "" if adj.calendar is None else f" and the {adj.calendar!r} calendar's holidays"
        )
        if adj.rule == "skip":
            words += f", skipping {days_off}"
        else:
            words += (
                f", moved to the {adj.rule} business day (at the same local time) on {days_off}"
            )
    return words


def describe(schedule: Schedule) -> str:
    """One English sentence for a validated schedule, e.g. "at 02:00 every day,
    Europe/London", "every 90 minutes from 2026-01-01T00:00:00Z", or "at 18:00 on the last
    business day of every month, Europe/London, skipping the 'uk' calendar"."""
    if schedule.kind == "once":
        assert schedule.run_at_ms is not None
        return f"once, at {format_utc(schedule.run_at_ms)}"
    adj = schedule.adjustment
    month_end = (
        adj is not None
        and adj.rule == "previous"
        and not schedule.extra
        and _is_month_end(schedule)
    )
    words = _list([_spec_words(s, month_end) for s in (schedule, *schedule.extra)])
    crons = [s for s in (schedule, *schedule.extra) if s.kind == "cron"]
    if schedule.timezone != "UTC" and (crons or adj is not None):
        words += f", {schedule.timezone}"
    if crons and schedule.dst_policy != "auto":
        words += f" (DST policy {schedule.dst_policy})"
    words += _adjustment_words(schedule, month_end)
    b = schedule.bounds
    if b is not None:
        if b.start_ms is not None:
            words += f", starting {format_utc(b.start_ms)}"
        if b.end_ms is not None:
            words += f", until {format_utc(b.end_ms)}"
        if b.max_runs is not None:
            words += f", at most {b.max_runs} run" + ("s" if b.max_runs != 1 else "")
    return words
