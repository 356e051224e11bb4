"""The alerts table's lifecycle columns (migration 0010, Alert v2) filled by the history
sink's row mapping from real watchdog transitions, in embedded chDB; and a v1 record (the
lifecycle only in `details`) mapped to the same columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.core.watchdog.test_watchdog_ack import ack
from tests.unit.core.watchdog.test_watchdog_golden import QUICK, T0, S, definition, healthy_run, run
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.core.watchdog import WatchdogState
from tickwheel.services.history.rows import Source, alert_row

pytestmark = pytest.mark.integration


def test_transitions_land_with_their_lifecycle_in_columns(tmp_path: Path) -> None:
    state = WatchdogState()
    [opened] = run([(T0 + 7 * S, [definition("j")])], QUICK, state)
    acked = run([(T0 + 8 * S, [ack(opened.incident.incident_id, T0 + 7 * S)])], QUICK, state)
    resolved = run([(T0 + 10 * S, healthy_run("j", T0 + 8 * S, T0 + 9 * S))], QUICK, state)
    transitions = [opened, *acked, *resolved]
    source = Source("alerts", 0, 0, T0)
    rows = [alert_row(decode(encode("Alert", t.record()), "Alert")[1], source)
            for t in transitions]  # fmt: skip
    # A v1 record: the same transition with its lifecycle in details only.
    v1 = {k: v for k, v in opened.record().items()
          if k in ("alert_id", "event_time", "kind", "severity", "job_id", "tenant_id",
                   "message", "details")}  # fmt: skip
    from_v1 = alert_row({**v1, "alert_id": "v1-copy"}, source)
    store = ChdbHistoryStore(tmp_path / "history")
    try:
        store.migrate()
        store.insert("alerts", [*rows, from_v1])
        got = store.query(
            "SELECT event_id, incident_id, fingerprint, transition, subject, state, "
            "toUnixTimestamp64Milli(opened_at), toUnixTimestamp64Milli(resolved_at), "
            "acknowledged_by, suppressed_by FROM alerts FINAL ORDER BY event_time, event_id"
        ).rows
    finally:
        store.close()
    incident = opened.incident.incident_id
    by_id = {row[0]: row for row in got}
    assert [by_id[t.record()["alert_id"]][3] for t in transitions] == [
        "opened",
        "acknowledged",
        "resolved",
    ]
    for t in transitions:
        row = by_id[t.record()["alert_id"]]
        assert row[1] == incident and row[2] == opened.incident.fingerprint and row[4] == "j"
        assert row[6] == T0 + 7 * S  # opened_at on every transition of the incident
    assert by_id[resolved[0].record()["alert_id"]][5] == "resolved"
    assert by_id[resolved[0].record()["alert_id"]][7] == T0 + 10 * S
    assert by_id[acked[0].record()["alert_id"]][8] == "ana"
    assert by_id["v1-copy"][1:7] == by_id[opened.record()["alert_id"]][1:7]
    assert json.loads(opened.record()["details"])["incident_id"] == incident
