"""`tickwheel schedule preview --job JOB_ID`: a stored job's next occurrences, compiled as the
timer compiles it — with the holiday calendar it names, read from the cluster (decision 0111).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tickwheel.cli.schedule_output import print_preview_table
from tickwheel.errors import InvalidInput

if TYPE_CHECKING:
    from tickwheel.core.calendars import BusinessCalendar

#: Flags that say what the schedule is: with --job, the stored definition says it.
SCHEDULE_FLAGS = (
    ("timezone", "--timezone"),
    ("phase", "--phase"),
    ("dst_policy", "--dst-policy"),
    ("also_cron", "--also-cron"),
    ("also_every", "--also-every"),
    ("exclude", "--exclude"),
    ("calendar", "--calendar"),
    ("calendar_file", "--calendar-file"),
    ("business_days", "--business-days"),
)


def run_job_preview(args: argparse.Namespace, from_ms: int) -> int:
    """Preview the stored job `args.job`; a calendar it names that is not on the cluster gives
    no slot (as the timer gives none) and says so on stderr."""
    from tickwheel.cli._kafka import connect
    from tickwheel.core.calendars import calendar_from_record
    from tickwheel.core.describe import describe
    from tickwheel.core.preview import preview_schedule
    from tickwheel.core.record_schedule import record_schedule
    from tickwheel.core.timefmt import format_utc
    from tickwheel.sdk.calendars import UnknownCalendar, get_calendar
    from tickwheel.sdk.jobs import JobsClient

    for attribute, flag in SCHEDULE_FLAGS:
        if getattr(args, attribute) not in (None, []):
            raise InvalidInput(flag, "not with --job; accepted: --job with --from, --count, --json")
    bootstrap = connect()
    record = JobsClient(bootstrap).get(args.job)
    schedule = record_schedule(record)
    calendars: dict[str, BusinessCalendar] | None = None
    name = record.get("calendar")
    if name is not None:
        try:
            calendars = {name: calendar_from_record(get_calendar(name, bootstrap=bootstrap))}
        except UnknownCalendar:
            calendars = {}
            print(
                f"tickwheel: calendar {name!r} is not on the cluster: job {args.job!r} has no "
                "slot until it is put",
                file=sys.stderr,
            )
    rows = preview_schedule(schedule, from_ms, args.count, calendars)
    if args.json:
        document = {
            "jobId": args.job,
            "version": record.get("version"),
            "description": describe(schedule),
            "timezone": schedule.timezone,
            "calendar": name,
            "businessDays": record.get("businessDays"),
            "from": format_utc(from_ms),
            "occurrences": [row.as_dict() for row in rows],
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{args.job} (version {record.get('version')}): {describe(schedule)}")
    print_preview_table(rows, schedule.timezone)
    return 0
