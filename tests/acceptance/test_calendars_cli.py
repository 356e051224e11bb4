"""`tickwheel calendars` and `schedule preview --calendar` as a user drives them: the real CLI in
subprocesses against the real broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.acceptance, pytest.mark.integration]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", *args],
        capture_output=True, text=True, timeout=120, env=dict(os.environ), cwd=cwd, check=False,
    )  # fmt: skip


def test_put_get_list_preview_and_delete_a_calendar(applied_topology: str, tmp_path: Path) -> None:
    dates = tmp_path / "uk.txt"
    dates.write_text("# England and Wales\n2026-08-31\n\n2026-12-25  # Christmas\n")
    put = _cli("calendars", "put", "uk", "--file", str(dates), cwd=tmp_path)
    assert put.returncode == 0, put.stderr
    assert "version 1: 2 dates" in put.stdout
    dates.write_text("2026-08-31\n2026-12-25\n2026-12-28\n")
    assert _cli("calendars", "put", "uk", "--file", str(dates), cwd=tmp_path).returncode == 0

    got = _cli("calendars", "get", "uk", "--json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    record = json.loads(got.stdout)
    assert (record["version"], record["dates"]) == (2, ["2026-08-31", "2026-12-25", "2026-12-28"])
    assert record["weekend"] == [0, 6]
    listed = json.loads(_cli("calendars", "list", "--json", cwd=tmp_path).stdout)
    assert [c["name"] for c in listed] == ["uk"]

    preview = _cli(
        "schedule", "preview", "--cron", "0 18 L * *", "--timezone", "Europe/London",
        "--calendar", "uk", "--business-days", "previous", "--from", "2026-08-01T00:00:00Z",
        "--count", "3", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert preview.returncode == 0, preview.stderr
    document = json.loads(preview.stdout)
    assert document["description"] == (
        "at 18:00 on the last business day of every month, Europe/London, skipping the 'uk' "
        "calendar"
    )
    rows = document["occurrences"]
    assert [r["local"] for r in rows] == [
        "2026-08-28T18:00:00+01:00",
        "2026-09-30T18:00:00+01:00",
        "2026-10-30T18:00:00+00:00",
    ]
    assert rows[0]["note"] == "calendar: moved here from Mon 2026-08-31 18:00 (a holiday in 'uk')"
    assert rows[2]["note"] == "calendar: moved here from Sat 2026-10-31 18:00 (a weekend)"

    deleted = _cli("calendars", "delete", "uk", cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    gone = _cli("calendars", "get", "uk", cwd=tmp_path)
    assert gone.returncode == 1
    assert gone.stderr.strip() == (
        "tickwheel: error: no calendar named 'uk'; `tickwheel calendars list` shows them"
    ), gone.stderr


def test_a_bad_dates_file_is_refused_naming_its_line(applied_topology: str, tmp_path: Path) -> None:
    dates = tmp_path / "bad.txt"
    dates.write_text("2026-12-25\n2026-02-30\n")
    result = _cli("calendars", "put", "uk", "--file", str(dates), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "dates (line 2)" in lines[0] and "accepted" in lines[0], lines
    assert "Traceback" not in result.stderr
    bad_name = _cli("calendars", "put", "UK Bank", "--file", str(dates), cwd=tmp_path)
    assert bad_name.returncode == 2 and "NAME" in bad_name.stderr
