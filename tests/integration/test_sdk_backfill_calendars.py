"""The SDK counts a backfill's slots as the timer emits them: with the job's holiday calendar.

A per-minute business-day job over nine days from a Monday owes 7 weekdays x 1,440 = 10,080
slots under weekends only — over the 10,000 a backfill may hold — but 8,640 when its calendar
makes the Wednesday a holiday; the SDK must accept that backfill, since the timer would.
"""

from __future__ import annotations

import pytest

from tickwheel.core.definition import MAX_BACKFILL
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.errors import InvalidInput
from tickwheel.sdk.calendars import put_calendar
from tickwheel.sdk.jobs import JobsClient

pytestmark = pytest.mark.integration

START = parse_iso_ms("2027-03-01T00:00:00Z", "from")  # a Monday
END = parse_iso_ms("2027-03-10T00:00:00Z", "to")  # nine days: seven weekdays


def test_a_backfill_is_counted_with_the_jobs_calendar(
    kafka_bootstrap: str, applied_topology: str
) -> None:
    jobs = JobsClient(kafka_bootstrap)
    put_calendar("bank", ["2027-03-03"], bootstrap=kafka_bootstrap)
    base = {"type": "noop", "cron": "* * * * *", "timezone": "UTC", "businessDays": "skip"}
    jobs.create({"jobId": f"{applied_topology}weekends", **base})
    jobs.create({"jobId": f"{applied_topology}bank", **base, "calendar": "bank"})
    assert 7 * 1_440 > MAX_BACKFILL >= 6 * 1_440
    with pytest.raises(InvalidInput, match="more than"):
        jobs.backfill(f"{applied_topology}weekends", START, END)
    command = jobs.backfill(f"{applied_topology}bank", START, END)
    assert command["kind"] == "backfill" and command["job_id"] == f"{applied_topology}bank"
