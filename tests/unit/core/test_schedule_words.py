"""Several specs, exclusions and calendars in words (`describe`) and in the preview's notes
(docs/schedules.md §6, §7)."""

from __future__ import annotations

import pytest

from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.describe import describe
from tickwheel.core.preview import preview
from tickwheel.core.schedule import parse_schedule
from tickwheel.core.timefmt import parse_iso_ms


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (
            {"cron": "0 2 L * *", "timezone": "Europe/London", "calendar": "uk",
             "business_days": "previous"},
            "at 02:00 on the last business day of every month, Europe/London, skipping the "
            "'uk' calendar",
        ),
        (
            {"schedules": [{"cron": "0 9 * * MON"}, {"cron": "0 17 * * FRI"}],
             "timezone": "America/New_York"},
            "at 09:00 on Monday and at 17:00 on Friday, America/New_York",
        ),
        (
            {"cron": "0 9 * * *", "exclude": ["2026-12-24", "0 9 * * MON"]},
            "at 09:00 every day, except on 2026-12-24 and at '0 9 * * MON'",
        ),
        (
            {"cron": "0 9 * * *", "calendar": "uk"},
            "at 09:00 every day, skipping weekends and the 'uk' calendar's holidays",
        ),
        (
            {"cron": "0 9 * * *", "business_days": "next", "timezone": "Europe/Paris"},
            "at 09:00 every day, Europe/Paris, moved to the next business day (at the same "
            "local time) on weekends",
        ),
        (
            {"every": "6h", "schedules": [{"cron": "30 12 * * *"}]},
            "every 6 hours and at 12:30 every day",
        ),
    ],
)  # fmt: skip
def test_extended_schedules_read_as_one_sentence(kwargs: dict[str, object], words: str) -> None:
    assert describe(parse_schedule(**kwargs)) == words  # type: ignore[arg-type]


def test_the_preview_marks_each_calendar_move_and_a_gap_on_the_new_day() -> None:
    closed = make_calendar("closed", [parse_date("2024-03-30", "d")], weekend=())
    rows = preview(
        "30 2 * * *", "Europe/Berlin", parse_iso_ms("2024-03-29T12:00:00Z", "t"), 2,
        calendar="closed", business_days="next", calendars={"closed": closed},
    )  # fmt: skip
    assert [r.local for r in rows] == ["2024-03-31T03:00:00+02:00", "2024-04-01T02:30:00+02:00"]
    note = rows[0].note or ""
    assert note.startswith("calendar: moved here from Sat 2024-03-30 02:30 (a holiday in 'closed')")
    assert note.count("does not exist on this day") == 1  # said once, for both slots
    assert rows[1].note is None
