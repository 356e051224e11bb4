"""The bad-input catalogue: definitions a user may write, refused by `tickwheel jobs create`.

Each case runs the real CLI in a subprocess with `--file`, and must exit non-zero with one
line on stderr naming the field and saying what is accepted — never a traceback. The CLI
validates before it connects to Kafka, so no broker is started: `KAFKA_BOOTSTRAP_SERVERS`
points at a port nobody listens on, and a case that got as far as publishing would fail
differently (a connection error, not the validation line asserted here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tickwheel.stack.broker import free_port

pytestmark = pytest.mark.acceptance

CRON: dict[str, Any] = {"jobId": "bad", "type": "noop", "cron": "0 2 * * *", "timezone": "UTC"}
HTTP: dict[str, Any] = {**CRON, "type": "http"}
ONCE: dict[str, Any] = {"jobId": "bad", "type": "noop", "runAt": "2030-01-01T09:00:00Z"}

# (case id, file contents, field named on the line, text the line must contain)
CASES: list[tuple[str, Any, str, str]] = [
    ("not-json", "{cron: every day}", "definition", "not valid JSON"),
    ("not-an-object", ["0 2 * * *"], "definition", "accepted: a JSON object"),
    ("unknown-field", {**CRON, "schedule": "daily"}, "schedule", "accepted fields are"),
    ("no-type", {"cron": "0 2 * * *"}, "type", "accepted"),
    ("cron-four-fields", {**CRON, "cron": "0 2 * *"}, "cron", "got 4 fields"),
    ("cron-out-of-range", {**CRON, "cron": "61 2 * * *"}, "cron", "accepted: 0-59"),
    ("cron-jenkins-h", {**CRON, "cron": "H 2 * * *"}, "cron", "not supported"),
    ("cron-year-field", {**CRON, "cron": "0 0 2 * * * 2027"}, "cron", "year field"),
    ("cron-bare-l-weekday", {**CRON, "cron": "0 2 * * L"}, "cron", "ambiguous"),
    ("cron-never-7-step", {**CRON, "cron": "0 0 * * 7/2"}, "cron", "never fires"),
    ("cron-never-feb-30", {**CRON, "cron": "0 0 30 2 *"}, "cron", "can never fire"),
    ("cron-never-31st", {**CRON, "cron": "0 0 31 4,6,9,11 *"}, "cron", "can never fire"),
    ("unknown-zone", {**CRON, "timezone": "Mars/Olympus_Mons"}, "timezone", "accepted"),
    ("offset-zone", {**CRON, "timezone": "UTC+3"}, "timezone", "Etc/GMT-3"),
    ("runat-no-offset", {**ONCE, "runAt": "2030-01-01T09:00:00"}, "runAt", "offset"),
    ("runat-not-iso", {**ONCE, "runAt": "next tuesday"}, "runAt", "ISO 8601"),
    ("both-schedules", {**CRON, "runAt": "2030-01-01T09:00:00Z"}, "schedule", "exactly one"),
    ("no-schedule", {"jobId": "bad", "type": "noop"}, "schedule", "exactly one"),
    ("zone-on-one-off", {**ONCE, "timezone": "Europe/Paris"}, "timezone", "accepted"),
    ("misfire-policy", {**CRON, "misfirePolicy": "later"}, "misfirePolicy", "coalesce"),
    ("overlap-policy", {**CRON, "overlapPolicy": "never"}, "overlapPolicy", "queue_one"),
    ("dst-policy", {**CRON, "dstPolicy": "sometimes"}, "dstPolicy", "shift_earlier"),
    ("priority", {**CRON, "priority": "urgent"}, "priority", "high, normal, low"),
    ("max-attempts", {**CRON, "maxAttempts": 0}, "maxAttempts", "1 to 100"),
    ("max-catch-up", {**CRON, "maxCatchUp": "all"}, "maxCatchUp", "1 to 100000"),
    ("jitter-duration", {**CRON, "jitter": "a bit"}, "jitter", "accepted"),
    ("jitter-too-long", {**CRON, "jitter": "2h"}, "jitter", "at most 1h"),
    ("interval-duration", {**CRON, "expectedMaxInterval": "a day"}, "expectedMaxInterval", "26h"),
    ("placeholder-unknown", {**CRON, "payloadTemplate": '{"d": "{{ period_start }}"}'},
     "payloadTemplate", "unknown placeholder"),
    ("placeholder-unclosed", {**CRON, "payloadTemplate": '{"d": "{{ periodStart"}'},
     "payloadTemplate", "not closed"),
    ("placeholder-empty", {**CRON, "payloadTemplate": '{"d": "{{}}"}'},
     "payloadTemplate", "empty placeholder"),
    ("filter-unknown", {**CRON, "payloadTemplate": '{"d": "{{ periodStart | upper }}"}'},
     "payloadTemplate", "unknown filter"),
    ("template-not-json", {**CRON, "payloadTemplate": '{"day": {{ periodStart }}}'},
     "payloadTemplate", "does not render to JSON"),
    ("template-not-object", {**CRON, "payloadTemplate": '["{{ periodEnd }}"]'},
     "payloadTemplate", "not an object"),
    ("payload-not-object", {**CRON, "payload": "hello"}, "payload", "a JSON object"),
    ("payload-too-big", {**CRON, "payload": {"blob": "x" * 70_000}}, "payload", "at most"),
    ("http-loopback", {**HTTP, "payload": {"url": "http://127.0.0.1:8080/"}},
     "payload.url", "loopback"),
    ("http-localhost", {**HTTP, "payload": {"url": "http://localhost/admin"}},
     "payload.url", "localhost"),
    ("http-metadata", {**HTTP, "payload": {"url": "http://169.254.169.254/latest/meta-data/"}},
     "payload.url", "metadata"),
    ("http-private", {**HTTP, "payload": {"url": "https://10.0.0.5/hook"}},
     "payload.url", "private"),
    ("http-mapped-v6", {**HTTP, "payload": {"url": "http://[::ffff:127.0.0.1]/"}},
     "payload.url", "loopback"),
    ("http-scheme", {**HTTP, "payload": {"url": "gopher://example.com/"}}, "payload.url", "http, https"),
    ("http-no-url", {**HTTP, "payload": {"method": "GET"}}, "payload.url", "missing"),
    ("reserved-id", {**CRON, "jobId": "__partition__/0"}, "jobId", "reserved"),
    ("enabled-not-bool", {**CRON, "enabled": "yes"}, "enabled", "true or false"),
    ("labels-not-strings", {**CRON, "labels": {"team": 7}}, "labels", "string values"),
    ("tenant-empty", {**CRON, "tenantId": ""}, "tenantId", "non-empty"),
]  # fmt: skip


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TICKWHEEL_HTTP_ALLOWED_NETWORKS"}
    # Nothing listens here: a definition that got past validation would fail to publish.
    env["KAFKA_BOOTSTRAP_SERVERS"] = f"127.0.0.1:{free_port()}"
    env["TICKWHEEL_HOME"] = str(tmp_path / ".tickwheel")
    return subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip


def _assert_one_clear_line(result: subprocess.CompletedProcess[str], field: str, text: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith(f"tickwheel: error: {field}: "), line
    assert text in line, line
    assert result.stdout == "", result.stdout


def test_the_catalogue_covers_at_least_25_kinds() -> None:
    assert len({case[0] for case in CASES}) >= 25


@pytest.mark.parametrize(("case", "content", "field", "text"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_definition_is_refused_with_one_line(
    tmp_path: Path, case: str, content: Any, field: str, text: str
) -> None:
    path = tmp_path / f"{case}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    result = _run(tmp_path, "jobs", "create", "--file", str(path))
    _assert_one_clear_line(result, field, text)
    if field != "definition":
        assert "accepted" in result.stderr, result.stderr


def test_preview_of_a_never_firing_cron_ends_with_one_line(tmp_path: Path) -> None:
    result = _run(tmp_path, "schedule", "preview", "--cron", "0 0 * * 7/2", "--timezone", "UTC")
    _assert_one_clear_line(result, "cron", "never fires")


def test_preview_of_a_sunday_range_lists_sundays_only(tmp_path: Path) -> None:
    """Issue 34: `0 0 * * 7-7` (Sunday, as Vixie reads it) was previewed as every day."""
    result = _run(
        tmp_path,
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
        "--json",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["description"] == "at 00:00 on Sunday"
    assert [o["utc"] for o in document["occurrences"]] == [
        "2026-12-13T00:00:00Z",
        "2026-12-20T00:00:00Z",
        "2026-12-27T00:00:00Z",
    ]
