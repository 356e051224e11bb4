"""`tickwheel history calendars NAME`: every recorded version of a holiday calendar, with the
dates each added and removed (the `calendar_events` table, decision 0110)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(commands: Any) -> None:
    """Add `calendars` to the `history` verbs."""
    from tickwheel.cli.history_location import add_location_flags

    parser = commands.add_parser(
        "calendars",
        help="every recorded version of a holiday calendar, with the dates each added and removed",
        description="The history of calendar NAME as the history sink recorded it from the "
        "calendars topic: one line per put or delete, oldest first (docs/history.md).",
    )
    parser.add_argument("name", metavar="NAME", help="the calendar's name")
    parser.add_argument("--json", action="store_true", help="print the versions as JSON")
    add_location_flags(parser)
    parser.set_defaults(handler=run_calendar_history)


def _dates(dates: list[str]) -> str:
    return ", ".join(dates) if dates else "-"


def run_calendar_history(args: argparse.Namespace) -> int:
    """Handler of `history calendars NAME`."""
    from tickwheel.cli.history_location import history_settings
    from tickwheel.core.calendars import check_calendar_name
    from tickwheel.history import calendar_history, open_history_reader

    check_calendar_name(args.name, "NAME")
    reader = open_history_reader(history_settings(args))
    try:
        versions = calendar_history(reader, args.name)
    finally:
        reader.close()
    if args.json:
        json.dump(versions, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    days = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
    for entry in versions:
        if entry["deleted"]:
            print(f"{entry['event_time']}  deleted (removed {_dates(entry['removed'])})")
            continue
        weekend = ",".join(days[d] for d in entry["weekend"]) or "none"
        note = "  weekend changed" if entry["weekend_changed"] else ""
        print(
            f"{entry['event_time']}  version {entry['version']}: {len(entry['dates'])} dates, "
            f"weekend {weekend}{note}"
        )
        print(f"    added:   {_dates(entry['added'])}")
        print(f"    removed: {_dates(entry['removed'])}")
    return 0
