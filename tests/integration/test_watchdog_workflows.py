"""`workflow_step_stuck` against the real stack: real timer, orchestrator, worker and watchdog
processes on the real broker. A workflow whose first step (the built-in `sleep`, 8 s) declares
`expectedDuration: 2s` opens one stuck-step incident while it runs, which resolves when the
step succeeds; its next step, well within its own expectedDuration, raises nothing; the
orchestrator records the overdue step in its timeline and raises no alert of its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    WorkflowStack,
    status_of,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

DEFINITION = {
    "definitionId": "slow", "version": 1,
    "steps": [
        {"id": "crawl", "type": "sleep", "payload": {"seconds": 8}, "expectedDuration": "2s"},
        {"id": "quick", "type": "noop", "dependsOn": ["crawl"], "expectedDuration": "60s"},
    ],
}  # fmt: skip


def test_a_step_past_its_expected_duration_opens_one_incident_and_resolves(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = workflow_env(kafka_bootstrap, applied_topology, TICKWHEEL_WATCHDOG_TICK_MS="500",
                       TICKWHEEL_WATCHDOG_LATENESS_S="1", TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S="1")  # fmt: skip
    stack = WorkflowStack(tmp_path, env).start()
    watchdog = stack.add("watchdog", "watchdog")
    watchdog.start()
    try:
        client = WorkflowsClient(kafka_bootstrap)
        client.define(DEFINITION)
        workflow_id = client.start("slow", {"n": 1}, workflow_id=f"{applied_topology}wf-1")

        def stuck() -> list[dict[str, object]]:
            return [i for i in incidents(read_transitions(kafka_bootstrap))
                    if i["kind"] == "workflow_step_stuck"]  # fmt: skip

        assert wait_until(lambda: any(i["state"] == "open" for i in stuck()), 60, 0.5)
        # The step is still running when its incident is open (it sleeps 8 s, expected 2 s).
        events = workflow_events(kafka_bootstrap)[workflow_id]
        assert not any(e["event_type"] == "step_succeeded" and e["step_id"] == "crawl"
                       for e in events), "the incident opened only after the step ended"  # fmt: skip
        assert wait_until(
            lambda: status_of(workflow_events(kafka_bootstrap).get(workflow_id, [])) == "succeeded",
            90,
            1.0,
        )
        assert wait_until(lambda: all(i["state"] == "resolved" for i in stuck()), 30, 0.5)
    finally:
        stack.stop()
    found = stuck()
    assert [i["subject"] for i in found] == [f"{workflow_id}/crawl"], found
    counts = Counter(t["transition"] for t in found[0]["transitions"])
    assert counts["opened"] == 1 and counts["resolved"] == 1, counts
    started = next(e["event_time"] for e in workflow_events(kafka_bootstrap)[workflow_id]
                   if e["event_type"] == "step_scheduled" and e["step_id"] == "crawl")  # fmt: skip
    # Opened once past its 2 s, never before (event time: the watermark trails the clock).
    assert int(str(found[0]["opened_at"])) >= started + 2_000
    # One alert for one stuck step (decision 0130): the orchestrator recorded the fact in the
    # step's timeline and raised nothing of its own.
    events = workflow_events(kafka_bootstrap)[workflow_id]
    assert any(e["event_type"] == "step_overdue" and e["step_id"] == "crawl" for e in events)
    kinds = {decode(r.value, "Alert")[1]["kind"]
             for r in read_to_end(topic_name("alerts"), None, kafka_bootstrap) if r.value}  # fmt: skip
    assert "workflow_step_overdue" not in kinds, kinds
