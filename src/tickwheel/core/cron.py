"""Parse and validate cron expressions into sets of wall-clock field values.

Accepted: 5 fields (minute hour day-of-month month day-of-week) or 6 with leading
seconds; in each field `*`, numbers, names (JAN-DEC, SUN-SAT), ranges `a-b` (a range with
a > b wraps around the field's end: `FRI-MON`, `22-2`), steps `*/n`, `a-b/n`, `a/n`, and
comma lists; `?` as `*` in the day fields; 7 as Sunday; Quartz's day terms `L`, `L-n`,
`nW`, `LW` (day-of-month) and `dL`, `d#n` (day-of-week, see `cron_quartz`); the macros
@yearly @annually @monthly @weekly @daily @midnight @hourly. docs/schedules.md is the
written specification.

Standard (Vixie) cron day semantics: when both day-of-month and day-of-week are
restricted, a day matches if *either* matches. A day field counts as unrestricted when
it starts with `*` or `?` (so `*/2` in day-of-month combines with day-of-week by AND),
exactly as Vixie cron and croniter do.

Parsing is linear in the input, which is capped at `MAX_CRON_LENGTH` characters, so no
expression can make it hang.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

from tickwheel.core.cron_quartz import (
    DOM_TERMS_HELP,
    DOW_TERMS_HELP,
    NO_SPECIALS,
    DaySpecials,
    DayTerms,
    shapes_can_fire,
)
from tickwheel.core.errors import InvalidSchedule

MAX_CRON_LENGTH = 256

MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTH_NAMES = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
_DOW_NAMES = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_MONTH_ABBR = {i: name for name, i in _MONTH_NAMES.items()}
# The most days each month can have (February in a leap year).
_MAX_MONTH_DAYS = {
    1: 31,
    2: 29,
    3: 31,
    4: 30,
    5: 31,
    6: 30,
    7: 31,
    8: 31,
    9: 30,
    10: 31,
    11: 30,
    12: 31,
}
_QUARTZ = re.compile(r"^(\w*L|\d+W|LW|\w+#\d+|L-\d+|L\d)$")
_JENKINS = re.compile(r"^H(\(|/|$)")
_SYMBOLS_HELP = "ASCII digits, letters, spaces and the symbols * ? , - / #"
_FIELDS_HELP = "5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds"


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    accepted: str
    names: dict[str, int] | None = None
    question_mark: bool = False


_SECOND = _FieldSpec("second", 0, 59, "0-59")
_MINUTE = _FieldSpec("minute", 0, 59, "0-59")
_HOUR = _FieldSpec("hour", 0, 23, "0-23")
_DOM = _FieldSpec("day-of-month", 1, 31, "1-31", question_mark=True)
_MONTH = _FieldSpec("month", 1, 12, "1-12 or JAN-DEC", names=_MONTH_NAMES)
_DOW = _FieldSpec(
    "day-of-week", 0, 7, "0-7 (0 and 7 are Sunday) or SUN-SAT", names=_DOW_NAMES, question_mark=True
)


@dataclass(frozen=True, slots=True)
class CronFields:
    """A validated cron expression as sorted tuples of the values each field allows.

    `days_of_week` uses 0 = Sunday … 6 = Saturday. `dom_restricted`/`dow_restricted`
    follow the Vixie rule above. `expression` is the normalised text (single spaces,
    macros kept as written) and is what schedules are keyed and shared by.
    """

    expression: str
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days_of_month: tuple[int, ...]
    months: tuple[int, ...]
    days_of_week: tuple[int, ...]
    dom_restricted: bool
    dow_restricted: bool
    has_seconds: bool
    specials: DaySpecials = NO_SPECIALS

    @property
    def can_fire(self) -> bool:
        """True when some instant matches, as decided from the field sets alone.

        Exact, and it needs no search: the weekday of a given (month, day) runs through
        all seven days within the 400-year Gregorian cycle (Feb 29 included), so the day
        fields combine freely. Values outside a field's range (a `CronFields` built by
        hand) never match. With Quartz day terms every month shape is tried (exact too).
        """
        if self.specials.any:
            return fields_can_fire(
                self.seconds, self.minutes, self.hours, (1,), (1,), (0,), either_day=False
            ) and shapes_can_fire(
                self.months,
                frozenset(self.days_of_month),
                frozenset(self.days_of_week),
                self.dom_restricted and self.dow_restricted,
                self.specials,
            )
        return fields_can_fire(
            self.seconds,
            self.minutes,
            self.hours,
            self.days_of_month,
            self.months,
            self.days_of_week,
            either_day=self.dom_restricted and self.dow_restricted,
        )

    @property
    def every_hour(self) -> bool:
        """True when the hour field allows all 24 hours (the `*` case of the DST policy)."""
        return len(self.hours) == 24


def fields_can_fire(
    seconds: tuple[int, ...],
    minutes: tuple[int, ...],
    hours: tuple[int, ...],
    days_of_month: tuple[int, ...],
    months: tuple[int, ...],
    days_of_week: tuple[int, ...],
    *,
    either_day: bool,
) -> bool:
    """Whether these field sets match any instant (see `CronFields.can_fire`)."""
    if not (
        any(0 <= s <= 59 for s in seconds)
        and any(0 <= m <= 59 for m in minutes)
        and any(0 <= h <= 23 for h in hours)
    ):
        return False
    month_ok = [m for m in months if m in _MAX_MONTH_DAYS]
    some_date = any(1 <= d <= _MAX_MONTH_DAYS[m] for m in month_ok for d in days_of_month)
    some_weekday = bool(month_ok) and any(0 <= w <= 6 for w in days_of_week)
    return (some_date or some_weekday) if either_day else (some_date and some_weekday)


def _fail(message: str) -> InvalidSchedule:
    return InvalidSchedule("cron", message)


def _check_text(expression: str) -> None:
    if len(expression) > MAX_CRON_LENGTH:
        raise _fail(
            f"expression is {len(expression)} characters long; accepted: at most {MAX_CRON_LENGTH}"
        )
    for position, char in enumerate(expression):
        if not char.isascii():
            raise _fail(
                f"expression contains the non-ASCII character {char!r} at position {position}; "
                f"accepted: {_SYMBOLS_HELP}"
            )


def _number(token: str, spec: _FieldSpec, raw: str) -> int:
    upper = token.upper()
    if spec.names is not None and upper in spec.names:
        return spec.names[upper]
    if not token.isdigit():
        if _QUARTZ.match(upper):
            where = (
                "takes no step or range"
                if spec in (_DOM, _DOW)
                else "is only accepted in the day fields"
            )
            raise _fail(
                f"{spec.name} field {raw!r}: {token!r} (Quartz L/W/# syntax) {where}; "
                f"accepted: {spec.accepted}, *, ranges a-b, steps /n and comma lists"
                + (f", or on its own {DOM_TERMS_HELP}" if spec is _DOM else "")
                + (f", or on its own {DOW_TERMS_HELP}" if spec is _DOW else "")
            )
        raise _fail(
            f"{spec.name} field {raw!r}: {token!r} is not a number; accepted: {spec.accepted}"
        )
    value = int(token)
    if not spec.low <= value <= spec.high:
        raise _fail(
            f"{spec.name} field {raw!r}: {value} is out of range; accepted: {spec.accepted}"
        )
    return value


def _parse_field(
    raw: str, spec: _FieldSpec, terms: DayTerms | None = None
) -> tuple[tuple[int, ...], bool]:
    """Return the allowed values and whether the field is restricted (Vixie rule).
    Quartz day terms go into `specials` (day fields only)."""
    restricted = not raw.startswith(("*", "?"))
    # Steps run over the field's own range; for day-of-week that is 0-6 (7 is an alias).
    high = 6 if spec is _DOW else spec.high
    span = high - spec.low
    values: set[int] = set()
    found_special = False
    for item in raw.split(","):
        if not item:
            raise _fail(
                f"{spec.name} field {raw!r}: empty list item; accepted: comma-separated values"
            )
        if _JENKINS.match(item.upper()):
            raise _fail(
                f"{spec.name} field {raw!r}: Jenkins' hashed 'H' is not supported (tickwheel "
                "spreads jobs with deterministic jitter instead); accepted: "
                f"{spec.accepted}, *, ranges a-b, steps /n and comma lists"
            )
        if terms is not None and (terms.add_dom if spec is _DOM else terms.add_dow)(item, raw):
            found_special = True
            continue
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit():
                raise _fail(
                    f"{spec.name} field {raw!r}: step {step_text!r} is not a number; "
                    f"accepted: a step from 1 to {span}"
                )
            step = int(step_text)
            if step == 0:
                raise _fail(
                    f"{spec.name} field {raw!r}: step 0 is not allowed; accepted: a step from 1 to {span}"
                )
            if step > span:
                raise _fail(
                    f"{spec.name} field {raw!r}: step {step} is larger than the field's range "
                    f"{spec.low}-{high}; accepted: a step from 1 to {span} "
                    "(a cron step does not carry into the next unit)"
                )
        if base in {"*", "?"}:
            if base == "?" and not spec.question_mark:
                raise _fail(
                    f"{spec.name} field {raw!r}: '?' is only allowed in the day fields; "
                    f"accepted: {spec.accepted} or *"
                )
            values.update(range(spec.low, high + 1, step))
        elif "-" in base:
            left, _, right = base.partition("-")
            low, top = _number(left, spec, raw), _number(right, spec, raw)
            if spec is _DOW and low == 7 and top != 7:
                # `7-2` is Sunday to Tuesday, as croniter reads it. `7-7` stays 7 alone, which
                # folds into Sunday below, as Vixie reads it (read as 0-7 it was every day).
                low = 0
            if low <= top:
                values.update(range(low, top + 1, step))
            else:
                # A range past the field's end wraps to its start; the step runs on across
                # the wrap (`22-2/2` is 22, 0, 2), as croniter does.
                wrapped = [*range(low, high + 1), *range(spec.low, top + 1)]
                values.update(wrapped[::step])
        else:
            low = _number(base, spec, raw)
            # `a/n` means "from a to the end of the range every n" (Quartz, croniter).
            values.update(range(low, (high if slash else low) + 1, step))
    if spec is _DOW and 7 in values:
        values.discard(7)
        values.add(0)
    if not values and not found_special:
        # Only `7/n` in day-of-week gets here: its steps start past the range's end (0-6).
        raise _fail(
            f"{spec.name} field {raw!r} selects no value, so the expression never fires; "
            f"accepted: a step start from {spec.low} to {high} ({spec.name} 7 means Sunday only "
            "on its own or as the end of a range)"
        )
    return tuple(sorted(values)), restricted


def _describe_months(months: tuple[int, ...]) -> str:
    return ",".join(_MONTH_ABBR[m] for m in months)


def _check_field_count(fields: list[str]) -> None:
    if len(fields) == 7:
        raise _fail(
            f"got 7 fields: a year field (Quartz's 7th) is not supported; accepted: {_FIELDS_HELP}"
        )
    if len(fields) not in (5, 6):
        raise _fail(f"got {len(fields)} fields; accepted: {_FIELDS_HELP}")
    last = fields[-1]
    if len(fields) == 6 and re.fullmatch(r"[\d,/*-]+", last):
        numbers = [int(n) for n in re.findall(r"\d+", last)]
        if any(n > 7 for n in numbers) and not re.search(r"/", last):
            raise _fail(
                f"the 6th field {last!r} is read as day-of-week, where it is out of range: "
                "seconds in the last position (croniter's 6-field form) are not supported; "
                f"accepted: {_FIELDS_HELP}, e.g. '30 0 9 * * *' for 09:00:30"
            )


def parse_cron(expression: str) -> CronFields:
    """Parse and validate a cron expression (see the module docstring for the grammar).

    Raises `InvalidSchedule` (field `cron`) saying what is wrong and what is accepted.
    """
    _check_text(expression)
    text = " ".join(expression.split())
    if not text:
        raise _fail(f"expression is empty; accepted: {_FIELDS_HELP}")
    fields = text.split(" ")
    if text.startswith("@"):
        macro = MACROS.get(text.lower())
        if macro is None:
            raise _fail(f"unknown macro {text!r}; accepted: {', '.join(MACROS)}")
        fields = macro.split(" ")
    _check_field_count(fields)
    has_seconds = len(fields) == 6
    if not has_seconds:
        fields = ["0", *fields]
    terms = DayTerms()
    seconds, _ = _parse_field(fields[0], _SECOND)
    minutes, _ = _parse_field(fields[1], _MINUTE)
    hours, _ = _parse_field(fields[2], _HOUR)
    doms, dom_restricted = _parse_field(fields[3], _DOM, terms)
    months, _ = _parse_field(fields[4], _MONTH)
    dows, dow_restricted = _parse_field(fields[5], _DOW, terms)
    specials = terms.build()
    # With both day fields restricted, either may match, and a day-of-week always occurs.
    either = dom_restricted and dow_restricted
    if (
        not specials.any
        and not either
        and not any(d <= _MAX_MONTH_DAYS[m] for m in months for d in doms)
    ):
        longest = max(_MAX_MONTH_DAYS[m] for m in months)
        sizes = ", ".join(f"{_MONTH_ABBR[m]} has at most {_MAX_MONTH_DAYS[m]} days" for m in months)
        raise _fail(
            f"{text!r} can never fire: day-of-month {fields[3]} never occurs in "
            f"{_describe_months(months)} ({sizes}); accepted: a day-of-month from 1 to {longest} "
            "for these months"
        )
    parsed = CronFields(
        expression=text,
        seconds=seconds,
        minutes=minutes,
        hours=hours,
        days_of_month=doms,
        months=months,
        days_of_week=dows,
        dom_restricted=dom_restricted,
        dow_restricted=dow_restricted,
        has_seconds=has_seconds,
        specials=specials,
    )
    if not parsed.can_fire:
        raise _fail(
            f"{text!r} can never fire: no day of {_describe_months(months)} matches "
            f"day-of-month {fields[3]!r} with day-of-week {fields[5]!r} in any year; accepted: "
            "an expression some date matches (e.g. 30W or L-29 need a month that long)"
        )
    return parsed
