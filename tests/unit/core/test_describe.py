"""`describe` renders schedules in English (docs/schedules.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.core.describe import describe
from tickwheel.core.schedule import parse_schedule

CASES: list[tuple[dict[str, Any], str]] = [
    (dict(cron="0 2 * * *", timezone="Europe/London"), "at 02:00 every day, Europe/London"),
    (dict(cron="*/5 * * * *"), "every 5 minutes"),
    (dict(cron="0 18 LW * *"), "at 18:00 on the last weekday of every month"),
    (dict(every="90m", phase="2026-01-01T00:00Z"), "every 90 minutes from 2026-01-01T00:00:00Z"),
    (dict(every="1h"), "every hour"),
    (dict(cron="0 9 * * MON#1"), "at 09:00 on the first Monday"),
    (dict(cron="0 0 L * 5#1"), "at 00:00 on the last day of every month or the first Friday"),
    (dict(cron="30 8 * * 1-5"), "at 08:30 on weekdays"),
    (dict(cron="30 2 * * *", timezone="America/New_York", dst_policy="skip_earlier"),
     "at 02:30 every day, America/New_York (DST policy skip_earlier)"),
    (dict(every="1h", max_runs=3, start_at="2026-01-01T00:00Z"),
     "every hour, starting 2026-01-01T00:00:00Z, at most 3 runs"),
    (dict(run_at="2030-01-01T09:00:00+01:00"), "once, at 2030-01-01T08:00:00Z"),
    # Six fields: the seconds are said, not read as "every minute" of every hour.
    (dict(cron="*/3 * * * * *"), "every 3 seconds"),
    (dict(cron="15,45 * * * * *"), "every minute at seconds 15 and 45"),
    (dict(cron="10 0,30 9 * * *"), "at 09:00:10 and 09:30:10 every day"),
    (dict(cron="5 */7 3-5 * * *"),
     "at second(s) 5 of minute(s) 0, 7, 14, 21, 28, 35, 42, 49 and 56 of hour(s) 3, 4 and 5 "
     "every day"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "words"), CASES, ids=[c[1][:40] for c in CASES])
def test_schedules_read_as_english(kwargs: dict[str, Any], words: str) -> None:
    assert describe(parse_schedule(**kwargs)) == words


@pytest.mark.parametrize("cron", ["0 0 1W,L-3 JAN-MAR 1L,2#3", "*/7 3-5 */2 * *", "0 0 * * *"])
def test_any_accepted_schedule_has_words(cron: str) -> None:
    assert describe(parse_schedule(cron=cron)).strip()
