"""The console's pages through the ASGI test client, over an in-memory job client and a
canned history (the unit tier; `tests/integration/test_console_browser.py` drives the same
pages in Chromium over the real broker and history). Pages are parsed and checked for what
they state: chips with text, the grid's missing cell, refused actions that change nothing."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import CannedHistory, MemoryJobs
from tickwheel.clock import FakeClock
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import models, mount

NOW_S = 1_798_804_800.0  # 2027-01-01T12:00:00Z
HOUR_MS = 3_600_000
ROOT = Path(__file__).resolve().parents[5]


class Links(HTMLParser):
    """Every URL a page would fetch or navigate to (src, href, action, hx-get)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "hx-get", "hx-post") and value is not None:
                self.urls.append(value)
            if name == "id" and value:
                self.ids.add(value)


def parse(html: str) -> Links:
    links = Links()
    links.feed(html)
    return links


def _utc(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW_S)


@pytest.fixture
def jobs(clock: FakeClock) -> MemoryJobs:
    return MemoryJobs(clock)


@pytest.fixture
def history(jobs: MemoryJobs) -> CannedHistory:
    """A history where job `hourly` has one definition (created 12 h ago) and every owed
    slot fired except the one at 05:00 UTC, which has no `requested` event."""
    missing = int(dt.datetime(2027, 1, 1, 5, tzinfo=dt.UTC).timestamp() * 1000)

    def versions(params: Mapping[str, Any]) -> list[dict[str, Any]]:
        if params["job_id"] not in jobs.records:
            return []
        record = jobs.records[params["job_id"]]
        return [{"event_time": _utc(int(NOW_S * 1000) - 12 * HOUR_MS), "version": 1,
                 "deleted": 0, "enabled": 1, "schedule_kind": "cron", "cron": record["cron"],
                 "timezone": record["timezone"], "run_at": None,
                 "definition": json.dumps({"cron": record["cron"], "type": "noop"})}]  # fmt: skip

    def audit(params: Mapping[str, Any]) -> list[dict[str, Any]]:
        rows = []
        for slot in params["expected"]:
            fired = slot != missing
            rows.append({"scheduled_time": _utc(slot), "status": "fired" if fired else "missing",
                         "execution_id": f"exec-{slot}" if fired else "", "trigger": "scheduled",
                         "fire_time": _utc(slot) if fired else None,
                         "requested_at": _utc(slot) if fired else None,
                         "lateness_ms": 5 if fired else None,
                         "outcome": "succeeded" if fired else "", "skip_reason": ""})  # fmt: skip
        return rows

    return CannedHistory({"job_definition_versions": versions, "schedule_audit": audit})


def console_app(backend: Backend) -> FastAPI:
    """The console alone on an app (the API's own routes and door are tested elsewhere)."""
    app = FastAPI()
    app.state.backend = backend
    mount(app)
    app.state.console_alerts = lambda _backend: []
    app.state.console_dead_letters = lambda _request, _backend: []
    return app


@pytest.fixture(autouse=True)
def development_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")


@pytest.fixture
def client(jobs: MemoryJobs, clock: FakeClock, history: CannedHistory) -> Iterator[TestClient]:
    app = console_app(Backend(jobs=jobs, clock=clock, open_history=lambda: history))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def make(jobs: MemoryJobs, job_id: str, **extra: Any) -> dict[str, Any]:
    spec = {"jobId": job_id, "type": "noop", "cron": "0 * * * *", "timezone": "UTC", **extra}
    return jobs.create(spec)


def test_the_jobs_page_states_each_status_in_words_with_problems_first(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "fine")
    make(jobs, "stopped")
    jobs.update("stopped", {"enabled": False, "labels": {models.PAUSE_REASON_LABEL: "INC-7"}})
    make(jobs, "never-succeeds", expectedMaxInterval="1h")
    jobs.records["never-succeeds"]["createdAt"] -= 3 * HOUR_MS
    page = client.get("/console/jobs")
    assert page.status_code == 200
    statuses = re.findall(r'<tr data-job="([^"]+)" data-status="([^"]+)"', page.text)
    assert statuses == [("never-succeeds", "overdue"), ("stopped", "paused"), ("fine", "ok")]
    assert '<span class="chip chip-paused" title="paused: INC-7">paused</span>' in page.text
    assert "every hour" in page.text.lower() or "at minute 0" in page.text.lower()
    searched = client.get("/console/jobs", params={"q": "STOP"})
    assert re.findall(r'data-job="([^"]+)"', searched.text) == ["stopped"]
    by_chip = client.get("/console/jobs", params={"status": "ok"})
    assert re.findall(r'data-job="([^"]+)"', by_chip.text) == ["fine"]
    make(jobs, "other-tenant", tenantId="acme")
    by_tenant = client.get("/console/jobs", params={"tenant": "acme"})
    assert re.findall(r'data-job="([^"]+)"', by_tenant.text) == ["other-tenant"]


def test_the_job_page_grid_shows_the_slot_with_no_requested_event_as_missing(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "hourly")
    page = client.get("/console/jobs/hourly")
    assert page.status_code == 200, page.text
    missing = re.findall(r'<rect class="slot slot-missing" data-status="missing"[^>]*>', page.text)
    assert len(missing) == 1
    assert 'data-slot="2027-01-01T05:00:00+00:00"' in missing[0]
    assert '<span data-status-count="missing">1</span>' in page.text
    assert '<span data-status-count="fired">10</span>' in page.text  # 01:00-11:00 owed
    assert '<tr data-status="missing"><td>2027-01-01T05:00:00Z</td>' in page.text
    # The next runs, local and UTC.
    assert "2027-01-01T13:00:00Z" in page.text


def test_the_next_runs_of_a_sunday_range_are_sundays(client: TestClient, jobs: MemoryJobs) -> None:
    """Issue 34: `0 0 * * 7-7` (Sunday, as Vixie reads it) was listed as every day."""
    make(jobs, "sundays", cron="0 0 * * 7-7")
    page = client.get("/console/jobs/sundays")
    assert page.status_code == 200, page.text
    table = page.text.split('<table id="next-runs">', 1)[1].split("</table>", 1)[0]
    utc = re.findall(r"<td>(\d{4}-\d\d-\d\dT00:00:00Z)</td>", table)
    assert len(utc) == 10 and utc[:2] == ["2027-01-03T00:00:00Z", "2027-01-10T00:00:00Z"]
    assert all(dt.date.fromisoformat(u[:10]).isoweekday() == 7 for u in utc)


def test_pausing_without_a_reason_is_refused_and_changes_nothing(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "p")
    refused = client.post("/console/jobs/p/pause", data={"reason": "  "})
    assert refused.status_code == 422
    assert 'role="alert"' in refused.text and "reason: required" in refused.text
    assert jobs.get("p")["version"] == 1 and jobs.get("p")["enabled"]
    done = client.post("/console/jobs/p/pause", data={"reason": "INC-9"}, follow_redirects=False)
    assert done.status_code == 303
    assert jobs.get("p")["version"] == 2 and not jobs.get("p")["enabled"]
    assert jobs.get("p")["labels"][models.PAUSE_REASON_LABEL] == "INC-9"


def test_an_edit_at_a_stale_version_shows_the_conflict_dialog_and_saves_nothing(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "e")
    jobs.update("e", {"cron": "30 * * * *"})  # someone else moved it to v2
    stale = client.post("/console/jobs/e/edit", data={"expectedVersion": "1", "cron": "0 3 * * *"})
    assert stale.status_code == 409
    assert '<dialog open id="version-conflict"' in stale.text
    assert "You started from version 1; the job is now at version 2" in stale.text
    assert jobs.get("e")["cron"] == "30 * * * *"
    # The dialog's button re-submits the change at the current version.
    again = client.post("/console/jobs/e/edit", data={"expectedVersion": "2", "cron": "0 3 * * *"},
                        follow_redirects=False)  # fmt: skip
    assert again.status_code == 303
    assert jobs.get("e")["cron"] == "0 3 * * *" and jobs.get("e")["version"] == 3


def test_bulk_pause_needs_a_reason_and_bumps_each_selected_job_once(
    client: TestClient, jobs: MemoryJobs
) -> None:
    for name in ("b1", "b2", "b3", "b4"):
        make(jobs, name)
    chosen = {"job": ["b1", "b2", "b3"], "action": "pause"}
    refused = client.post("/console/jobs/bulk", data={**chosen, "reason": ""})
    assert refused.status_code == 422 and "reason: required" in refused.text
    assert [jobs.get(n)["version"] for n in ("b1", "b2", "b3")] == [1, 1, 1]
    done = client.post("/console/jobs/bulk", data={**chosen, "reason": "maintenance"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303
    assert [jobs.get(n)["version"] for n in ("b1", "b2", "b3", "b4")] == [2, 2, 2, 1]
    assert all(not jobs.get(n)["enabled"] for n in ("b1", "b2", "b3"))


def test_a_dry_run_backfill_counts_the_slots_and_sends_no_command(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "bf")
    form = {"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z", "dryRun": "1"}
    counted = client.post("/console/jobs/bf/backfill", data=form)
    assert counted.status_code == 200
    assert "the backfill would emit 24 slots" in counted.text
    assert jobs.commands == []
    client.post("/console/jobs/bf/backfill", data={**form, "dryRun": "0"})
    assert [c["kind"] for c in jobs.commands] == ["backfill"]


def test_every_page_fetches_only_from_its_own_origin_and_sends_a_strict_csp(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "hourly")
    for path in ("/console", "/console/jobs", "/console/jobs/hourly", "/console/jobs/new",
                 "/console/alerts", "/console/dead-letters", "/console/jobs/nope"):  # fmt: skip
        page = client.get(path)
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
        for url in parse(page.text).urls:
            assert url.startswith(("/", "#", "?", "data:")), (path, url)


def test_a_page_without_a_history_still_lists_the_jobs_and_says_why(
    jobs: MemoryJobs, clock: FakeClock
) -> None:
    def unavailable() -> Any:
        raise ConnectionError("no history service")

    app = console_app(Backend(jobs=jobs, clock=clock, open_history=unavailable))
    make(jobs, "alone")
    with TestClient(app) as client:
        page = client.get("/console/jobs")
    assert page.status_code == 200
    assert 'data-job="alone"' in page.text
    assert "the history is unavailable (no history service)" in page.text


def test_the_served_htmx_is_the_version_the_lockfile_pins() -> None:
    lock = json.loads((ROOT / "services/console/package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/htmx.org"]["version"]
    vendored = ROOT / "src/tickwheel/services/api/console/static/vendor/htmx.min.js"
    assert vendored.is_file(), "run `make setup`: it copies htmx from services/console"
    assert f'version:"{pinned}"' in vendored.read_text().replace(" ", "")


def test_job_status_rules() -> None:
    now = int(NOW_S * 1000)
    base = {"jobId": "j", "version": 1, "cron": "0 * * * *", "timezone": "UTC", "enabled": True,
            "createdAt": now - 10 * HOUR_MS, "labels": {}, "expectedMaxInterval": "2h"}  # fmt: skip
    ok = models.JobOutcome("succeeded", now - HOUR_MS, now - HOUR_MS)
    assert models.job_status(base, ok, now)[0] == "ok"
    stale = models.JobOutcome("succeeded", now - 3 * HOUR_MS, now - 3 * HOUR_MS)
    assert models.job_status(base, stale, now)[0] == "overdue"
    failed = models.JobOutcome("dead_lettered", now - HOUR_MS, now - HOUR_MS)
    assert models.job_status(base, failed, now)[0] == "late"
    assert models.job_status({**base, "enabled": False}, ok, now) == ("disabled", "disabled")
    assert models.job_status(base, ok, now, ["broken_chain"])[0] == "broken"
    assert models.job_status(base, ok, now, ["job_overdue"])[0] == "overdue"


def test_with_keys_required_the_console_asks_to_sign_in_and_changes_nothing(
    client: TestClient, jobs: MemoryJobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(jobs, "locked")
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "keys")
    read = client.get("/console/jobs?q=x", follow_redirects=False)
    assert read.status_code == 303
    assert read.headers["location"] == "/console/sign-in?next=%2Fconsole%2Fjobs%3Fq%3Dx"
    assert 'name="key"' in client.get(read.headers["location"]).text
    change = client.post("/console/jobs/locked/pause", data={"reason": "x"})
    assert change.status_code == 401
    assert jobs.get("locked")["version"] == 1


def test_an_alert_is_acknowledged_with_a_required_note_and_who(
    client: TestClient, jobs: MemoryJobs
) -> None:
    incident = {"incident_id": "inc-1", "fingerprint": "f", "kind": "job_overdue",
                "subject": "job nightly", "job_id": "nightly", "tenant_id": "default",
                "opened_at": int(NOW_S * 1000) - HOUR_MS, "state": "open", "severity": "error",
                "message": "no success for 26h", "resolved_at": None, "acknowledged": None,
                "evidence": {"owed": 1}, "transitions": [{"alert_id": "inc-1:1"}]}  # fmt: skip
    sent: list[tuple[str, dict[str, Any]]] = []
    app = client.app
    app.state.console_alerts = lambda _backend: [incident]  # type: ignore[attr-defined]
    app.state.console_ack = lambda _b, key, command: sent.append((key, command))  # type: ignore[attr-defined]
    page = client.get("/console/alerts")
    assert 'action="/console/alerts/inc-1/ack"' in page.text
    refused = client.post("/console/alerts/inc-1/ack", data={"note": " ", "by": "ana"})
    assert refused.status_code == 422 and sent == []
    done = client.post("/console/alerts/inc-1:1/ack", data={"note": "on it", "by": "ana"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303
    [(key, command)] = sent
    assert key == "inc-1" and command["kind"] == "acknowledge" and command["message"] == "on it"
    assert json.loads(command["details"]) == {"incident_id": "inc-1", "by": "ana"}
    incident["acknowledged"] = {"by": "ana", "note": "on it", "at": 1}
    again = client.get("/console/alerts")
    assert "acknowledged by ana: on it" in again.text
    assert 'action="/console/alerts/inc-1/ack"' not in again.text


def test_a_pause_records_its_account_and_the_disabled_report_lists_it_as_csv(
    client: TestClient, jobs: MemoryJobs
) -> None:
    make(jobs, "held")
    client.post("/console/jobs/held/pause", data={"reason": "vendor down", "by": "ana"})
    record = jobs.get("held")
    assert (record["disabledReason"], record["disabledBy"]) == ("vendor down", "console:ana")
    now = int(NOW_S * 1000)
    app = client.app
    app.state.console_disabled = lambda _b: [  # type: ignore[attr-defined]
        {"job_id": "held", "tenant_id": "default", "owner": "payments", "reason": "vendor down",
         "by": "console:ana", "since": now - HOUR_MS, "review_by": now - 1, "version": 2},
    ]  # fmt: skip
    page = client.get("/console/disabled")
    assert 'data-job="held"' in page.text and "review overdue" in page.text
    csv_text = client.get("/console/disabled.csv")
    assert csv_text.headers["content-type"].startswith("text/csv")
    assert csv_text.text.splitlines() == [
        "job_id,tenant_id,owner,reason,by,since,review_by,version",
        "held,default,payments,vendor down,console:ana,2027-01-01T11:00:00Z,"
        "2027-01-01T11:59:59.999Z,2",
    ]
    client.post("/console/jobs/held/resume", data={})
    resumed = jobs.get("held")
    assert resumed["enabled"] and resumed.get("disabledReason") is None
    assert models.PAUSE_REASON_LABEL not in (resumed.get("labels") or {})


def test_a_change_posted_from_another_site_is_refused(client: TestClient, jobs: MemoryJobs) -> None:
    make(jobs, "guarded")
    form = {"reason": "forged"}
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        refused = client.post("/console/jobs/guarded/pause", data=form, headers=headers)
        assert refused.status_code == 403 and "from its own pages" in refused.text
    assert jobs.get("guarded")["version"] == 1
    own = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}
    done = client.post("/console/jobs/guarded/pause", data=form, headers=own,
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and jobs.get("guarded")["version"] == 2


def test_a_business_day_job_shows_the_slots_its_calendar_gives() -> None:
    """The console's next runs and next-run column are the timer's: the last business day of
    August 2026 at 18:00 London under UK bank holidays is Friday 28 (Monday 31 is a holiday)."""
    from tickwheel.core.calendars import make_calendar, parse_date

    uk = make_calendar("uk", [parse_date("2026-08-31", "dates")])
    record = {"jobId": "payout", "version": 1, "cron": "0 18 L * *",
              "timezone": "Europe/London", "calendar": "uk", "businessDays": "previous",
              "enabled": True, "createdAt": 0, "labels": {}}  # fmt: skip
    start = int(dt.datetime(2026, 8, 1, tzinfo=dt.UTC).timestamp() * 1000)
    moved = int(dt.datetime(2026, 8, 28, 17, tzinfo=dt.UTC).timestamp() * 1000)  # 18:00 BST
    [first] = models.next_occurrences(record, start, 1, calendars={"uk": uk})
    assert first.scheduled_ms == moved and first.note and "holiday" in first.note
    row = models.job_row(record, models.JobOutcome(), start, calendars={"uk": uk})
    assert row.next_utc == models.format_utc(moved)
    # Without the calendar the 31st stands: the calendar is what moved it.
    [plain] = models.next_occurrences(record, start, 1)
    assert plain.scheduled_ms == moved + 3 * 24 * HOUR_MS
