"""`schedule preview`: the core function, the SDK re-export and the CLI handler."""

from __future__ import annotations

import argparse
import json

import pytest

from tickwheel.cli import schedule as schedule_cli
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.preview import preview
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.errors import InvalidInput
from tickwheel.sdk import schedule as sdk_schedule

SPRING = "2024-03-09T00:00:00Z"


def test_preview_rows_show_utc_local_offset_and_the_dst_note() -> None:
    rows = preview("30 2 * * *", "America/New_York", parse_iso_ms(SPRING, "from"), 3)
    assert [(r.utc, r.local, r.abbreviation) for r in rows] == [
        ("2024-03-09T07:30:00Z", "2024-03-09T02:30:00-05:00", "EST"),
        ("2024-03-10T07:00:00Z", "2024-03-10T03:00:00-04:00", "EDT"),
        ("2024-03-11T06:30:00Z", "2024-03-11T02:30:00-04:00", "EDT"),
    ]
    assert rows[0].note is None and rows[2].note is None
    assert rows[1].note is not None and "does not exist" in rows[1].note


def test_preview_notes_a_repeated_hour() -> None:
    rows = preview("30 * * * *", "Europe/London", parse_iso_ms("2024-10-27T00:00:00Z", "f"), 2)
    assert [r.local for r in rows] == ["2024-10-27T01:30:00+01:00", "2024-10-27T01:30:00+00:00"]
    assert rows[0].note is not None and "first of the two" in rows[0].note
    assert rows[1].note is not None and "second of the two" in rows[1].note


def test_sdk_reexports_the_same_function() -> None:
    assert sdk_schedule.preview is preview
    with pytest.raises(InvalidSchedule):
        sdk_schedule.parse_schedule(cron="61 * * * *")


def test_preview_count_bounds() -> None:
    with pytest.raises(InvalidInput, match=r"count: 0 is out of range; accepted: 1 to 1000"):
        preview("* * * * *", "UTC", 0, 0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tickwheel")
    schedule_cli.register(parser.add_subparsers(dest="command", required=True))
    return parser


def test_cli_preview_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser().parse_args(
        ["schedule", "preview", "--cron", "30 2 * * *", "--timezone", "America/New_York",
         "--from", SPRING, "--count", "2", "--json"]
    )  # fmt: skip
    assert args.handler(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["timezone"] == "America/New_York" and document["dstPolicy"] == "auto"
    assert [o["utc"] for o in document["occurrences"]] == [
        "2024-03-09T07:30:00Z",
        "2024-03-10T07:00:00Z",
    ]
    assert document["occurrences"][1]["local"] == "2024-03-10T03:00:00-04:00"


def test_cli_preview_bad_input_raises_the_validation_error() -> None:
    args = _parser().parse_args(["schedule", "preview", "--cron", "0 0 31 2 *"])
    with pytest.raises(InvalidSchedule, match="can never fire"):
        args.handler(args)
    args = _parser().parse_args(
        ["schedule", "preview", "--cron", "* * * * *", "--from", "2024-01-01"]
    )
    with pytest.raises(InvalidInput, match="--from: '2024-01-01' has no UTC offset"):
        args.handler(args)


def test_cli_preview_of_a_sunday_range_lists_sundays_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 34: `7-7` was read as every day, in the description line and in the rows."""
    args = _parser().parse_args(
        [
            "schedule",
            "preview",
            "--cron",
            "0 0 * * 7-7",
            "--timezone",
            "UTC",
            "--from",
            "2026-12-07T12:00:00Z",
            "--count",
            "3",
        ]
    )
    assert args.handler(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "at 00:00 on Sunday"
    assert [line.split()[0] for line in lines[2:]] == [
        "2026-12-13T00:00:00Z",
        "2026-12-20T00:00:00Z",
        "2026-12-27T00:00:00Z",
    ]
