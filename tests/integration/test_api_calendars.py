"""The API's previews and occurrences compile with the holiday calendars, as the timer does
(issue 15 §4 and §7, decision 0111): a job on "the last business day of the month at 18:00
Europe/London, skipping UK bank holidays" shows over HTTP exactly the slots the core computes
with that calendar, the holiday-moved one included and marked, and a calendar edit changes
them on the next request.

The app runs in-process (FastAPI's TestClient) over the real broker; the calendar is put with
the SDK on the real `calendars` topic; the expected answers come from the core directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tickwheel.clock import FakeClock
from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.preview import preview, slot_note
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.timefmt import format_utc, parse_iso_ms
from tickwheel.sdk.calendars import put_calendar
from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.app import create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.keys import create_key

pytestmark = pytest.mark.integration

# England and Wales bank holidays, 2026. 31 August is the late summer bank holiday, a Monday
# and the month's last day: the last business day of August 2026 is Friday the 28th.
UK_2026 = ["2026-01-01", "2026-04-03", "2026-04-06", "2026-05-04", "2026-05-25",
           "2026-08-31", "2026-12-25", "2026-12-28"]  # fmt: skip
NOW = parse_iso_ms("2026-07-15T00:00:00Z", "now")
JOB = {
    "jobId": "month-end-payout",
    "type": "noop",
    "cron": "0 18 L * *",
    "timezone": "Europe/London",
    "calendar": "uk",
    "businessDays": "previous",
    "jitter": "0s",
}
PREVIEW = "/v1/schedules/preview?cron=0+18+L+*+*&timezone=Europe/London&count=6"
MOVED = "2026-08-28T17:00:00Z"  # 18:00 BST on Friday 28 August
UNMOVED = "2026-08-31T17:00:00Z"


@pytest.fixture
def client(applied_topology: str, kafka_bootstrap: str) -> Iterator[TestClient]:
    token, _ = create_key("default", ["admin"], bootstrap=kafka_bootstrap, now_ms=1)
    backend = Backend(jobs=JobsClient(kafka_bootstrap), bootstrap=kafka_bootstrap,
                      clock=FakeClock(NOW / 1000))  # fmt: skip
    app = create_app(backend)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app, raise_server_exceptions=False, headers=headers) as test_client:
        yield test_client
    app.state.door.close()


def _uk(dates: list[str]) -> dict[str, Any]:
    return {"uk": make_calendar("uk", [parse_date(d, "dates") for d in dates])}


def test_the_preview_matches_the_core_with_the_calendar_and_marks_the_moved_slot(
    client: TestClient, kafka_bootstrap: str
) -> None:
    put_calendar("uk", UK_2026, bootstrap=kafka_bootstrap)
    response = client.get(f"{PREVIEW}&calendar=uk&businessDays=previous")
    assert response.status_code == 200, response.text
    body = response.json()
    expected = preview("0 18 L * *", "Europe/London", NOW, 6, calendar="uk",
                       business_days="previous", calendars=_uk(UK_2026))  # fmt: skip
    assert body["occurrences"] == [row.as_dict() for row in expected]
    assert (body["calendar"], body["businessDays"]) == ("uk", "previous")
    slots = [row["utc"] for row in body["occurrences"]]
    assert MOVED in slots and UNMOVED not in slots
    moved = body["occurrences"][slots.index(MOVED)]
    assert "moved here from Mon 2026-08-31 18:00 (a holiday in 'uk')" in moved["note"]
    assert "business day" in body["description"] and "uk" in body["description"]
    # Without the calendar the same cron's August slot is the 31st: the calendar decided it.
    plain = client.get(PREVIEW).json()["occurrences"]
    assert UNMOVED in [row["utc"] for row in plain]


def test_a_jobs_occurrences_follow_its_calendar_and_an_edit_without_a_restart(
    client: TestClient, kafka_bootstrap: str
) -> None:
    put_calendar("uk", UK_2026, bootstrap=kafka_bootstrap)
    created = client.post("/v1/jobs", json=JOB)
    assert created.status_code == 201, created.text
    window = "from=2026-07-15T00:00:00Z&to=2027-01-01T00:00:00Z"
    response = client.get(f"/v1/jobs/{JOB['jobId']}/occurrences?{window}")
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    record = JobsClient(kafka_bootstrap).get(JOB["jobId"])
    compiled = compile_record_schedule(record, _uk(UK_2026))
    end = parse_iso_ms("2027-01-01T00:00:00Z", "to")
    expected = compiled.first(NOW - 1, end - 1, 100)
    assert [item["scheduledTime"] for item in items] == [format_utc(s) for s in expected]
    assert {item["status"] for item in items} == {"scheduled"}
    by_slot = {item["scheduledTime"]: item for item in items}
    assert by_slot[MOVED]["note"] == slot_note(compiled, "Europe/London", parse_iso_ms(MOVED, "m"))
    assert "a holiday in 'uk'" in by_slot[MOVED]["note"] and UNMOVED not in by_slot
    # 31 December 2026 is a Thursday and no holiday: it stands, with no note.
    assert "note" not in by_slot["2026-12-31T18:00:00Z"]

    # The calendar loses 31 August: the next request shows the slot back on the 31st.
    put_calendar("uk", [d for d in UK_2026 if d != "2026-08-31"], bootstrap=kafka_bootstrap)
    again = client.get(f"/v1/jobs/{JOB['jobId']}/occurrences?{window}").json()["items"]
    slots = [item["scheduledTime"] for item in again]
    assert UNMOVED in slots and MOVED not in slots

    # A job's nextRun too, in the job and in the list: from 1 August, with the holiday back,
    # the next slot is the moved one.
    put_calendar("uk", UK_2026, bootstrap=kafka_bootstrap)
    client.app.state.backend.clock.set(parse_iso_ms("2026-08-01T00:00:00Z", "now") / 1000)  # type: ignore[attr-defined]
    assert client.get(f"/v1/jobs/{JOB['jobId']}").json()["nextRun"] == MOVED
    listed = {j["jobId"]: j for j in client.get("/v1/jobs").json()["items"]}
    assert listed[JOB["jobId"]]["nextRun"] == MOVED


def test_an_unknown_calendar_is_refused_in_the_preview_naming_the_field(
    client: TestClient,
) -> None:
    response = client.get(f"{PREVIEW}&calendar=nowhere")
    assert response.status_code == 422, response.text
    assert "calendar" in response.text and "nowhere" in response.text
    bad = client.get(f"{PREVIEW}&calendar=uk&businessDays=sideways")
    assert bad.status_code == 422 and "businessDays" in bad.text


def test_the_cli_previews_a_stored_job_with_its_calendar(
    client: TestClient, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from tickwheel.cli import main

    put_calendar("uk", UK_2026, bootstrap=kafka_bootstrap)
    assert client.post("/v1/jobs", json=JOB).status_code == 201
    argv = ["schedule", "preview", "--job", JOB["jobId"], "--from", format_utc(NOW)]
    assert main([*argv, "--count", "6", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    over_http = client.get(f"{PREVIEW}&calendar=uk&businessDays=previous").json()
    assert document["occurrences"] == over_http["occurrences"]
    assert (document["calendar"], document["businessDays"]) == ("uk", "previous")
    # A schedule flag beside --job is refused in one line (exit 2): the job says its schedule.
    assert main([*argv, "--timezone", "UTC"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--timezone" in err
