"""`tickwheel schedule preview`: the next occurrences exactly as the timer will fire them.

This module is the only place the preview reads the clock (for the `--from` default);
the computation itself is `tickwheel.core.preview.preview`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from tickwheel.cli.schedule_output import print_preview_table
from tickwheel.core.describe import describe
from tickwheel.core.preview import MAX_PREVIEW_COUNT, preview_schedule
from tickwheel.core.schedule import DST_POLICIES, parse_schedule
from tickwheel.core.timefmt import format_utc, parse_iso_ms

if TYPE_CHECKING:
    from tickwheel.core.calendars import BusinessCalendar


def register(subparsers: Any) -> None:
    """Add the `schedule` command group to the top-level parser's subparsers."""
    schedule = subparsers.add_parser(
        "schedule",
        help="inspect schedules (cron + time zone + DST policy)",
        description="Inspect schedules without creating a job.",
    )
    commands = schedule.add_subparsers(dest="schedule_command", metavar="SUBCOMMAND", required=True)
    cmd = commands.add_parser(
        "preview",
        help="print the next occurrences of a cron schedule (UTC and local, before jitter)",
        description=(
            "Print the next occurrences of a cron expression in a time zone, exactly as the "
            "timer will fire them (before jitter), with a note where the DST policy shifted "
            "or repeated a local time. Bad input exits with status 2 and says what is accepted."
        ),
    )
    kind = cmd.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--cron",
        metavar="EXPR",
        help="5 fields (min hour dom month dow) or 6 with leading seconds, e.g. '30 2 * * *'; "
        "Quartz day terms L, L-n, nW, LW, dL, d#n accepted (docs/schedules.md)",
    )
    kind.add_argument(
        "--every",
        metavar="DURATION",
        help="an interval instead of cron, e.g. 90m (slots at multiples since --phase)",
    )
    kind.add_argument(
        "--job",
        metavar="JOB_ID",
        help="a stored job's schedule instead, with the holiday calendar it names, both read "
        "from the cluster (KAFKA_BOOTSTRAP_SERVERS)",
    )
    cmd.add_argument(
        "--phase",
        default=None,
        metavar="ISO",
        help="with --every: an instant the slots align to (default: 1970-01-01T00:00Z)",
    )
    cmd.add_argument(
        "--timezone",
        default=None,
        metavar="ZONE",
        help="IANA zone, e.g. America/New_York (default: UTC, never the host's zone)",
    )
    cmd.add_argument(
        "--from",
        dest="from_",
        default=None,
        metavar="ISO",
        help="start after this instant, ISO 8601 with offset, e.g. 2024-03-09T00:00:00Z "
        "(default: now)",
    )
    cmd.add_argument(
        "--count",
        type=int,
        default=10,
        metavar="N",
        help=f"how many occurrences, 1-{MAX_PREVIEW_COUNT} (default: 10)",
    )
    cmd.add_argument(
        "--dst-policy",
        default=None,
        choices=DST_POLICIES,
        metavar="POLICY",
        help="DST policy (default: auto); one of " + ", ".join(DST_POLICIES),
    )
    cmd.add_argument(
        "--also-cron",
        action="append",
        default=[],
        metavar="EXPR",
        help="one more cron spec of the same job (repeatable): the slots of all specs, each once",
    )
    cmd.add_argument(
        "--also-every",
        action="append",
        default=[],
        metavar="DURATION",
        help="one more interval spec of the same job (repeatable), anchored at the epoch",
    )
    cmd.add_argument(
        "--exclude",
        action="append",
        default=None,
        metavar="DATE|CRON",
        help="remove slots (repeatable): a local date YYYY-MM-DD, or a cron spec whose slots go",
    )
    cmd.add_argument(
        "--calendar",
        default=None,
        metavar="NAME",
        help="the holiday calendar of the business-day rule, read from the cluster's calendars "
        "topic (KAFKA_BOOTSTRAP_SERVERS) unless --calendar-file gives its dates",
    )
    cmd.add_argument(
        "--calendar-file",
        default=None,
        metavar="PATH",
        help="the calendar's dates from a file instead (one YYYY-MM-DD per line), no broker needed",
    )
    cmd.add_argument(
        "--business-days",
        default=None,
        choices=("skip", "next", "previous"),
        help="a slot on a weekend or holiday: skip it, or move it to the next/previous business "
        "day at the same local time (default with --calendar: skip)",
    )
    cmd.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    cmd.set_defaults(handler=run_preview)


def _calendars(args: argparse.Namespace) -> dict[str, BusinessCalendar] | None:
    """The calendars the preview compiles with: the file's dates, the cluster's calendar, or
    None (weekends only) without --calendar."""
    from tickwheel.core.calendars import make_calendar, parse_date

    if args.calendar_file is not None:
        from tickwheel.cli.calendars import read_dates_file

        name = args.calendar or "file"
        days = [parse_date(d, "--calendar-file") for d in read_dates_file(args.calendar_file)]
        return {name: make_calendar(name, days)}
    if args.calendar is None:
        return None
    from tickwheel.cli._kafka import connect
    from tickwheel.core.calendars import calendar_from_record
    from tickwheel.sdk.calendars import get_calendar

    return {args.calendar: calendar_from_record(get_calendar(args.calendar, bootstrap=connect()))}


def run_preview(args: argparse.Namespace) -> int:
    """Handle `tickwheel schedule preview`; returns the exit code."""
    from_ms = int(time.time() * 1000) if args.from_ is None else parse_iso_ms(args.from_, "--from")
    if args.job is not None:
        from tickwheel.cli.schedule_job import run_job_preview

        return run_job_preview(args, from_ms)
    specs = [{"cron": c} for c in args.also_cron] + [{"every": e} for e in args.also_every]
    calendar = args.calendar
    if args.calendar_file is not None and calendar is None:
        calendar = "file"
    schedule = parse_schedule(
        cron=args.cron,
        timezone=args.timezone,
        dst_policy=args.dst_policy,
        every=args.every,
        phase=args.phase,
        schedules=specs or None,
        exclude=args.exclude,
        calendar=calendar,
        business_days=args.business_days,
    )
    rows = preview_schedule(schedule, from_ms, args.count, _calendars(args))
    zone = args.timezone or "UTC"
    if args.json:
        document = {
            "cron": None if args.cron is None else " ".join(args.cron.split()),
            "every": args.every,
            "phase": args.phase,
            "schedules": specs or None,
            "exclude": args.exclude,
            "calendar": calendar,
            "businessDays": args.business_days,
            "description": describe(schedule),
            "timezone": zone,
            "dstPolicy": args.dst_policy or "auto",
            "from": format_utc(from_ms),
            "occurrences": [row.as_dict() for row in rows],
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(describe(schedule))
    print_preview_table(rows, zone)
    return 0
