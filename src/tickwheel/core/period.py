"""The period an occurrence stands for, and payload templates that use it.

The period of a recurring occurrence is [previous occurrence, this occurrence): the
stretch that has just ended when it fires (a daily 02:00 report covers the 24 hours up
to 02:00). A backfill of eleven missed days is then eleven occurrences with eleven
explicit periods. A one-off has the empty period [run_at, run_at).
"""

from __future__ import annotations

import re

from tickwheel.core.errors import NotAnOccurrence
from tickwheel.core.schedule import CompiledSchedule
from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput

PLACEHOLDERS = ("periodStart", "periodEnd", "scheduledTime")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def period_of(compiled: CompiledSchedule, scheduled_ms: int) -> tuple[int, int]:
    """(period_start_ms, period_end_ms) of occurrence `scheduled_ms`; end is the slot itself.

    Raises `NotAnOccurrence` if `scheduled_ms` is not on the schedule's grid.
    """
    if compiled.next_after(scheduled_ms - 1) != scheduled_ms:
        raise NotAnOccurrence(scheduled_ms, repr(compiled))
    previous = compiled.prev_before(scheduled_ms)
    return (scheduled_ms if previous is None else previous), scheduled_ms


def render_payload_template(
    template: str, *, period_start_ms: int, period_end_ms: int, scheduled_ms: int
) -> str:
    """Replace `{{ periodStart }}`, `{{ periodEnd }}`, `{{ scheduledTime }}` (spaces optional)
    with ISO 8601 UTC instants. Any other `{{ ... }}` is an error naming what is accepted.
    """
    values = {
        "periodStart": format_utc(period_start_ms),
        "periodEnd": format_utc(period_end_ms),
        "scheduledTime": format_utc(scheduled_ms),
    }

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise InvalidInput(
                "payloadTemplate",
                f"unknown placeholder {{{{ {name} }}}}; accepted: "
                + ", ".join(f"{{{{ {p} }}}}" for p in PLACEHOLDERS),
            )
        return values[name]

    return _PLACEHOLDER.sub(substitute, template)
