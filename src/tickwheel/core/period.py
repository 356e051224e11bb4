"""The period an occurrence stands for, and payload templates that use it.

The period of a recurring occurrence is [previous occurrence, this occurrence): the
stretch that has just ended when it fires (a daily 02:00 report covers the 24 hours up
to 02:00). A backfill of eleven missed days is then eleven occurrences with eleven
explicit periods. A one-off has the empty period [run_at, run_at).

Payload templates: `{{ name }}` or `{{ name | filter }}`, `parse_template` is the grammar
(one place, so a filter is added to `FILTERS` and `_render_value` and nowhere else).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from tickwheel.core.errors import NotAnOccurrence
from tickwheel.core.schedule import CompiledSchedule
from tickwheel.core.timefmt import format_utc, to_datetime
from tickwheel.errors import InvalidInput

PLACEHOLDERS = ("periodStart", "periodEnd", "scheduledTime")
# Filters transform a placeholder's instant; each is (name, what it renders, how).
FILTERS = ("date",)
_ACCEPTED = (
    ", ".join(f"{{{{ {p} }}}}" for p in PLACEHOLDERS)
    + ", each optionally with a filter: "
    + ", ".join(f"{{{{ periodStart | {f} }}}}" for f in FILTERS)
)
_OPEN, _CLOSE = "{{", "}}"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Sample instants for checking what a template renders to (any instants would do: every
# placeholder renders to text of the same shape).
_SAMPLE_MS = (1_704_067_200_000, 1_704_153_600_000, 1_704_153_600_000)


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One `{{ name | filter | ... }}` of a template, at `start`..`end` in its text."""

    start: int
    end: int
    name: str
    filters: tuple[str, ...]


def _bad(message: str) -> InvalidInput:
    return InvalidInput("payloadTemplate", f"{message}; accepted: {_ACCEPTED}")


def parse_template(template: str) -> tuple[Placeholder, ...]:
    """Every placeholder of `template`, checked: the one place the template grammar lives.

    `{{` always opens a placeholder (a JSON text can hold it nowhere else than inside a
    string, which is where placeholders go); `}}` alone is JSON nesting and left as is.
    Raises `InvalidInput` (field `payloadTemplate`) for an unclosed, empty or unknown
    placeholder or filter.
    """
    found: list[Placeholder] = []
    position = 0
    while (start := template.find(_OPEN, position)) >= 0:
        end = template.find(_CLOSE, start + 2)
        inner_end = template.find(_OPEN, start + 2)
        if end < 0 or 0 <= inner_end < end:
            shown = template[start : start + 30]
            raise _bad(f"placeholder {shown!r}... at position {start} is not closed with }}}}")
        inner = template[start + 2 : end]
        parts = [part.strip() for part in inner.split("|")]
        name, filters = parts[0], tuple(parts[1:])
        if not name:
            raise _bad(f"empty placeholder {template[start : end + 2]!r} at position {start}")
        if name not in PLACEHOLDERS:
            known = _NAME.fullmatch(name) is not None
            raise _bad(
                f"unknown placeholder {{{{ {name} }}}}"
                if known
                else f"malformed placeholder {template[start : end + 2]!r} at position {start}"
            )
        for filter_name in filters:
            if filter_name not in FILTERS:
                raise _bad(
                    f"unknown filter {filter_name!r} in {template[start : end + 2]!r}"
                    if filter_name
                    else f"empty filter in {template[start : end + 2]!r}"
                )
        found.append(Placeholder(start, end + 2, name, filters))
        position = end + 2
    return tuple(found)


def _render_value(ms: int, filters: tuple[str, ...], timezone: str) -> str:
    if not filters:
        return format_utc(ms)
    # `date` is the only filter: the calendar day the instant falls on where the job runs.
    return to_datetime(ms).astimezone(ZoneInfo(timezone)).date().isoformat()


def period_of(compiled: CompiledSchedule, scheduled_ms: int) -> tuple[int, int]:
    """(period_start_ms, period_end_ms) of occurrence `scheduled_ms`; end is the slot itself.

    Raises `NotAnOccurrence` if `scheduled_ms` is not on the schedule's grid.
    """
    if compiled.next_after(scheduled_ms - 1) != scheduled_ms:
        raise NotAnOccurrence(scheduled_ms, repr(compiled))
    previous = compiled.period_start_before(scheduled_ms)
    return (scheduled_ms if previous is None else previous), scheduled_ms


def render_payload_template(
    template: str,
    *,
    period_start_ms: int,
    period_end_ms: int,
    scheduled_ms: int,
    timezone: str = "UTC",
) -> str:
    """Replace `{{ periodStart }}`, `{{ periodEnd }}`, `{{ scheduledTime }}` (spaces optional)
    with ISO 8601 UTC instants, and `{{ periodStart | date }}` (any of the three) with the
    instant's date in `timezone` (the job's zone), YYYY-MM-DD. Values go in as bare text:
    the template puts them inside JSON strings. Raises `InvalidInput` as `parse_template`.
    """
    values = {
        "periodStart": period_start_ms,
        "periodEnd": period_end_ms,
        "scheduledTime": scheduled_ms,
    }
    out: list[str] = []
    position = 0
    for placeholder in parse_template(template):
        out.append(template[position : placeholder.start])
        out.append(_render_value(values[placeholder.name], placeholder.filters, timezone))
        position = placeholder.end
    out.append(template[position:])
    return "".join(out)


def check_payload_template(template: str, timezone: str = "UTC") -> dict[str, object]:
    """The JSON object `template` renders to with sample instants, or `InvalidInput`
    (field `payloadTemplate`) saying why it would not render to one at fire time."""
    start, end, scheduled = _SAMPLE_MS
    text = render_payload_template(
        template,
        period_start_ms=start,
        period_end_ms=end,
        scheduled_ms=scheduled,
        timezone=timezone,
    )
    hint = (
        "placeholders insert bare text such as 2024-01-01T00:00:00Z, so write them inside a "
        'JSON string, e.g. {"day": "{{ periodStart }}"}'
    )
    try:
        rendered = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "payloadTemplate",
            f"does not render to JSON ({exc.msg} at position {exc.pos} of the rendering); "
            f"{hint}; accepted: a template that renders to a JSON object",
        ) from None
    if not isinstance(rendered, dict):
        raise InvalidInput(
            "payloadTemplate",
            f"renders to a JSON {type(rendered).__name__}, not an object; accepted: a template "
            "that renders to a JSON object",
        )
    return rendered
