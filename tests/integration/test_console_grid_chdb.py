"""The job page's occurrence grid read from a real embedded chDB (no canned answers): the
console's value-level audit (`audit_window`) says what `schedule_audit` says, slot for slot,
and the page draws a slot with no `requested` event as a missing cell at its instant, a
dead-lettered one as failed, and a late request as late (issue 14's faster grid).
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import MemoryJobs
from tests.console.history_rows import KeptOpen, execution_event
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.clock import FakeClock
from tickwheel.history import schedule_audit
from tickwheel.history._audit import audit_window
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import mount
from tickwheel.services.history.rows import Source, execution_event_row, job_definition_row

MINUTE_MS = 60_000
NOW_S = 4_076_000_000.0  # 2099: no retention expires the rows
NOW_MS = int(NOW_S * 1000)
HOURS = 3
NS = "{http://www.w3.org/2000/svg}"


def _event(kind: str, slot: int, offset: int) -> dict[str, Any]:
    return execution_event("per-minute", f"exec-{slot}", kind, slot, slot + offset)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A per-minute job created three hours ago: every slot requested and succeeded except
    one never requested (missing), one dead-lettered and one requested 5 minutes late."""
    clock = FakeClock(NOW_S)
    jobs = MemoryJobs(clock)
    created = NOW_MS - HOURS * 3_600_000 - MINUTE_MS // 2
    jobs.clock = FakeClock(created / 1000)
    record = jobs.create({"jobId": "per-minute", "type": "noop", "cron": "* * * * *"})
    jobs.clock = clock
    store = ChdbHistoryStore(Path(tmp_path_factory.mktemp("grid")) / "history")
    store.migrate()
    source = Source("test", 0, 0, created)
    store.insert("job_definitions", [job_definition_row(record, source)])
    first = (created // MINUTE_MS + 1) * MINUTE_MS
    slots = list(range(first, NOW_MS, MINUTE_MS))
    missing, failed, late = slots[17], slots[60], slots[121]
    rows = []
    for slot in slots:
        if slot == missing:
            continue
        rows.append(_event("requested", slot, 300_000 if slot == late else 40))
        rows.append(_event("dead_lettered" if slot == failed else "succeeded", slot, 900))
    store.insert("execution_events", [execution_event_row(e, source) for e in rows])
    try:
        yield {"store": store, "jobs": jobs, "clock": clock, "slots": slots,
               "missing": missing, "failed": failed, "late": late}  # fmt: skip
    finally:
        store.close()


def _iso(ms: int) -> str:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)).isoformat()


def test_the_value_audit_says_what_schedule_audit_says_slot_for_slot(
    recorded: dict[str, Any],
) -> None:
    reader = KeptOpen(recorded["store"])
    start = NOW_MS - HOURS * 3_600_000 - MINUTE_MS  # before the creation: every slot
    printed = schedule_audit(reader, "per-minute", start, NOW_MS)
    window = audit_window(reader, "per-minute", start, NOW_MS)
    assert [s.slot_ms for s in window.slots] == recorded["slots"]
    assert printed["expected"] == window.expected == len(recorded["slots"])
    assert printed["missing"] == 1
    as_printed = [
        {"scheduled_time": _iso(s.slot_ms), "status": s.status, "execution_id": s.execution_id,
         "trigger": s.trigger,
         "fire_time": s.fire_time.isoformat() if s.fire_time else None,
         "requested_at": s.requested_at.isoformat() if s.requested_at else None,
         "lateness_ms": s.lateness_ms, "outcome": s.outcome, "skip_reason": s.skip_reason}
        for s in window.slots
    ]  # fmt: skip
    assert as_printed == printed["occurrences"]
    by_slot = {s.slot_ms: s for s in window.slots}
    assert by_slot[recorded["missing"]].status == "missing"
    assert by_slot[recorded["missing"]].execution_id is None
    assert by_slot[recorded["failed"]].outcome == "dead_lettered"
    assert by_slot[recorded["late"]].lateness_ms == 300_000


def test_the_job_page_draws_the_unrequested_slot_as_a_missing_cell_from_chdb(
    recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")
    store = recorded["store"]
    app = FastAPI()
    app.state.backend = Backend(jobs=recorded["jobs"], clock=recorded["clock"],
                                open_history=lambda: KeptOpen(store))  # fmt: skip
    mount(app)
    app.state.console_alerts = lambda _backend: []
    with TestClient(app) as client:
        page = client.get("/console/jobs/per-minute", params={"days": 1})
    assert page.status_code == 200
    start = page.text.index('<svg xmlns="http://www.w3.org/2000/svg" class="occurrence-grid"')
    grid = ET.fromstring(page.text[start : page.text.index("</svg>", start) + len("</svg>")])
    cells = [r for r in grid.iter(f"{NS}rect") if "slot" in r.get("class", "")]
    lone = {(r.get("data-status"), r.get("data-slot")) for r in cells if r.get("data-slot")}
    assert ("missing", _iso(recorded["missing"])) in lone
    assert ("failed", _iso(recorded["failed"])) in lone
    assert ("late", _iso(recorded["late"])) in lone
    assert sum(int(r.get("data-count", "0")) for r in cells) == len(recorded["slots"])
    assert [r.get("data-status") for r in cells].count("missing") == 1
