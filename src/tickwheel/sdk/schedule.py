"""Schedules for job authors and producers: validate a schedule and preview it.

`preview` returns the next occurrences exactly as the timer will fire them (before
jitter; `preview_schedule` for a parsed `Schedule`, with the holiday calendars from
`tickwheel.sdk.calendars.load_calendars`); `parse_schedule` raises `InvalidSchedule` with the same messages the API and
CLI give.
"""

from __future__ import annotations

from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.preview import MAX_PREVIEW_COUNT, PreviewRow, preview, preview_schedule
from tickwheel.core.schedule import (
    DST_POLICIES,
    CompiledSchedule,
    Schedule,
    compile_schedule,
    parse_schedule,
)

__all__ = [
    "DST_POLICIES",
    "MAX_PREVIEW_COUNT",
    "CompiledSchedule",
    "InvalidSchedule",
    "PreviewRow",
    "Schedule",
    "compile_schedule",
    "parse_schedule",
    "preview",
    "preview_schedule",
]
