"""`tickwheel calendars put|get|list|delete`: named holiday calendars on the `calendars` topic.

A calendar is data: `put NAME --file dates.txt` publishes the dates in the file (one
`YYYY-MM-DD` per line, `#` comments) as the calendar's next version, replacing its dates.
The timer follows it without a restart: jobs naming it (`calendar`) fire by its business days
from their next slot on (docs/schedules.md §5).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickwheel.errors import InvalidInput

if TYPE_CHECKING:
    from tickwheel.records import Calendar


def register(subparsers: Any) -> None:
    """Add the `calendars` command group to the top-level parser's subparsers."""
    group = subparsers.add_parser(
        "calendars",
        help="holiday calendars that jobs' business-day rules follow",
        description="Put, read and delete named holiday calendars (the `calendars` topic).",
    )
    verbs = group.add_subparsers(dest="calendars_command", metavar="SUBCOMMAND", required=True)
    put = verbs.add_parser(
        "put",
        help="publish a calendar's dates from a file (its next version)",
        description="Publish NAME with the dates of FILE (one YYYY-MM-DD per line; blank lines "
        "and # comments ignored), replacing its dates. Bad input exits 2 naming the line.",
    )
    put.add_argument("name", metavar="NAME", help="1-64 lowercase letters, digits, . _ -")
    put.add_argument("--file", required=True, metavar="PATH", help="the dates file ('-': stdin)")
    put.add_argument(
        "--weekend",
        default="SAT,SUN",
        metavar="DAYS",
        help="days that are never business days, e.g. FRI,SAT or '' for none (default SAT,SUN)",
    )
    put.add_argument("--description", default=None, metavar="TEXT", help="what the calendar is")
    put.add_argument("--json", action="store_true", help="print the record as JSON")
    put.set_defaults(handler=_put)
    get = verbs.add_parser("get", help="print one calendar", description="Print calendar NAME.")
    get.add_argument("name", metavar="NAME")
    get.add_argument("--json", action="store_true", help="print the record as JSON")
    get.set_defaults(handler=_get)
    listing = verbs.add_parser("list", help="list calendars", description="List every calendar.")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(handler=_list)
    delete = verbs.add_parser(
        "delete",
        help="remove a calendar (jobs naming it wait until it is put again)",
        description="Remove calendar NAME. Jobs that name it do not fire until it is put again.",
    )
    delete.add_argument("name", metavar="NAME")
    delete.add_argument("--json", action="store_true", help="print the answer as JSON")
    delete.set_defaults(handler=_delete)


def read_dates_file(path: str) -> list[str]:
    """The dates of a dates file, checked (`InvalidInput` names the line), as YYYY-MM-DD."""
    from tickwheel.core.calendars import format_day, parse_dates_text

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            "--file", f"cannot read {path!r} ({exc}); accepted: a text file"
        ) from None
    return [format_day(z) for z in parse_dates_text(text)]


def _show(record: Calendar, as_json: bool) -> None:
    if as_json:
        json.dump(record, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    from tickwheel.core.calendars import parse_weekend

    days = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
    weekend = ",".join(days[d] for d in parse_weekend(record.get("weekend", [])))
    print(f"{record['name']} (version {record['version']}, weekend {weekend or 'none'})")
    if record.get("description"):
        print(record["description"])
    for date in record["dates"]:
        print(date)


def _put(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.core.calendars import check_calendar_name, parse_weekend
    from tickwheel.sdk.calendars import put_calendar

    check_calendar_name(args.name, "NAME")
    dates = read_dates_file(args.file)
    weekend = parse_weekend(args.weekend, "--weekend")
    record = put_calendar(
        args.name, dates, weekend=weekend, description=args.description, bootstrap=connect()
    )
    if args.json:
        _show(record, True)
    else:
        print(f"calendar {record['name']} version {record['version']}: {len(dates)} dates")
    return 0


def _get(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.calendars import get_calendar

    _show(get_calendar(args.name, bootstrap=connect()), args.json)
    return 0


def _list(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.calendars import list_calendars

    records = list_calendars(bootstrap=connect())
    if args.json:
        json.dump(records, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for record in records:
        span = f"{record['dates'][0]}..{record['dates'][-1]}" if record["dates"] else "no dates"
        print(
            f"{record['name']:<24} v{record['version']:<4} {len(record['dates']):>5} dates  {span}"
        )
    return 0


def _delete(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.calendars import delete_calendar

    delete_calendar(args.name, bootstrap=connect())
    if args.json:
        print(json.dumps({"deleted": args.name}))
    else:
        print(f"calendar {args.name} deleted")
    return 0
