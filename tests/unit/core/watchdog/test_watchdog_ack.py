"""Acknowledging an incident: applied once, in event time, to the open incident it names."""

from __future__ import annotations

import json

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    S,
    definition,
    healthy_run,
    kinds,
    run,
)
from tickwheel.core.watchdog import Incident, Observed, Transition, WatchdogState
from tickwheel.sdk.alerts import ack_command, incidents


def ack(incident_id: str, at: int, command_id: str = "c1", note: str = "on it") -> Observed:
    record = ack_command(incident_id, "ana", note, at, command_id)
    return Observed("command", incident_id, record)


def opened_state() -> tuple[WatchdogState, Transition]:
    state = WatchdogState()
    [opened] = run([(T0 + 7 * S, [definition("j")])], QUICK, state)
    return state, opened


def test_an_ack_gives_one_acknowledged_transition_with_who_and_the_note() -> None:
    state, opened = opened_state()
    incident_id = opened.incident.incident_id
    got = run([(T0 + 8 * S, [ack(incident_id, T0 + 7 * S + 500)]), (T0 + 9 * S, [])], QUICK, state)
    assert kinds(got) == [("job_overdue", "j", "acknowledged")]
    record = got[0].record()
    assert record["alert_id"] == f"{incident_id}:2"
    lifecycle = json.loads(record["details"])
    assert lifecycle["state"] == "firing"
    assert lifecycle["acknowledged"] == {"by": "ana", "note": "on it", "at": T0 + 7 * S + 500}
    assert lifecycle["evidence"]["by"] == "ana"


def test_an_ack_waits_for_the_watermark_to_pass_it() -> None:
    state, opened = opened_state()
    later = ack(opened.incident.incident_id, T0 + 20 * S)
    assert run([(T0 + 8 * S, [later])], QUICK, state) == []
    assert kinds(run([(T0 + 20 * S, [])], QUICK, state))[-1][2] == "acknowledged"


def test_a_replayed_or_duplicated_ack_is_applied_once() -> None:
    state, opened = opened_state()
    command = ack(opened.incident.incident_id, T0 + 7 * S + 500)
    first = run([(T0 + 8 * S, [command, command])], QUICK, state)
    assert [t.transition for t in first] == ["acknowledged"]
    # A restart: incidents restored as persisted, every input folded again.
    restored = WatchdogState(watermark=state.watermark)
    restored.incidents = {fp: Incident.from_dict(i.to_dict()) for fp, i in state.incidents.items()}
    assert run([(T0 + 9 * S, [definition("j"), command])], QUICK, restored) == []
    # A second acknowledgement (another command) is news.
    again = run([(T0 + 10 * S, [ack(opened.incident.incident_id, T0 + 9 * S, "c2", "fixed")])],
                QUICK, restored)  # fmt: skip
    assert [t.transition for t in again] == ["acknowledged"]
    assert again[0].incident.acknowledged_note == "fixed"


def test_an_ack_of_a_resolved_or_superseded_incident_changes_nothing() -> None:
    state, opened = opened_state()
    old_id = opened.incident.incident_id
    got = run([(T0 + 9 * S, healthy_run("j", T0 + 8 * S, T0 + 8 * S))], QUICK, state)
    assert kinds(got) == [("job_overdue", "j", "resolved")]
    assert run([(T0 + 10 * S, [ack(old_id, T0 + 9 * S + 500)])], QUICK, state) == []
    assert run([(T0 + 11 * S, [ack("0000000000000000-1", T0 + 10 * S)])], QUICK, state) == []
    [reopened] = run([(T0 + 16 * S, [])], QUICK, state)
    # The old incident's ack does not carry over to the next one.
    assert reopened.incident.acknowledged_at is None
    assert run([(T0 + 17 * S, [ack(old_id, T0 + 16 * S)])], QUICK, state) == []


def test_the_cli_shows_the_acknowledgement_on_the_incident_it_folds() -> None:
    state, opened = opened_state()
    got = [opened, *run([(T0 + 8 * S, [ack(opened.incident.incident_id, T0 + 7 * S)])],
                        QUICK, state)]  # fmt: skip
    records = []
    for t in got:
        alert = t.record()
        details = json.loads(alert["details"])
        records.append({**alert, **details, "details": details["evidence"]})
    [incident] = incidents(records)
    assert incident["state"] == "open"
    assert incident["acknowledged"]["by"] == "ana"
    assert [t["transition"] for t in incident["transitions"]] == ["opened", "acknowledged"]
    assert "since" in incident["evidence"]  # still the condition's evidence
