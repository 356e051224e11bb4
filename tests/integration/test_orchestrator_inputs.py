"""The orchestrator against the real broker: instances stay pinned to their version while a
compatible next version is published and an incompatible one is refused with its reasons;
inputs it cannot fold are dead-lettered and the partition goes on; a step past its
expectedDuration is recorded as `step_overdue` and raises no alert (the watchdog does); a finished
instance is pruned after the retention (its snapshot tombstoned, the metrics say so) and a late
input for it is dead-lettered rather than starting it again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    WorkflowStack,
    status_of,
    types_of,
    workflow_alerts,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.core.workflow import StepSucceeded
from tickwheel.core.workflow.wire import input_record
from tickwheel.errors import InvalidInput
from tickwheel.sdk.workflows import IncompatibleDefinition, WorkflowsClient
from tickwheel.stack.broker import free_port
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
TIMEOUT_S = 90.0
ENDED = ("succeeded", "failed", "cancelled", "compensated")


@pytest.fixture
def stack(kafka_bootstrap: str, applied_topology: str, tmp_path: Path) -> Any:
    running = WorkflowStack(tmp_path, workflow_env(kafka_bootstrap, applied_topology)).start()
    yield running
    running.stop()


def _ended(bootstrap: str, *ids: str) -> bool:
    events = workflow_events(bootstrap)
    return all(status_of(events.get(i, [])) in ENDED for i in ids)


def _v(version: int, *extra: dict[str, Any], gate: str = "3s") -> dict[str, Any]:
    return {"definitionId": "pinned", "version": version, "steps": [
        {"id": "a", "type": "wf_echo", "payload": {"v": version}},
        {"id": "gate", "kind": "sleep", "duration": gate, "dependsOn": ["a"]},
        {"id": "b", "type": "wf_echo", "dependsOn": ["gate"], "payload": {"v": version}},
        *extra]}  # fmt: skip


def test_an_instance_runs_its_version_to_the_end_and_an_incompatible_version_is_refused(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define(_v(1))
    old = flows.start("pinned")
    assert wait_until(lambda: "sleep_started" in types_of(
        workflow_events(kafka_bootstrap).get(old, [])), TIMEOUT_S)  # fmt: skip
    flows.define(_v(2, {"id": "c", "type": "wf_echo", "dependsOn": ["b"]}))
    new = flows.start("pinned")
    with pytest.raises(IncompatibleDefinition) as refused:
        flows.define({**_v(3), "steps": [{"id": "a", "kind": "sleep", "duration": "1s"}]})
    assert any("'a'" in reason for reason in refused.value.reasons), refused.value.reasons
    with pytest.raises(InvalidInput, match="immutable"):
        flows.define(_v(2, gate="9s"))
    assert flows.define(_v(1))["published"] is False  # the same document again: a no-op
    assert wait_until(lambda: _ended(kafka_bootstrap, old, new), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)
    assert {e["definition_version"] for e in events[old]} == {1}
    assert {e["definition_version"] for e in events[new]} == {2}
    ran = {wid: [e["step_id"] for e in events[wid] if e["event_type"] == "step_succeeded"]
           for wid in (old, new)}  # fmt: skip
    assert ran == {old: ["a", "gate", "b"], new: ["a", "gate", "b", "c"]}


def test_inputs_it_cannot_fold_are_dead_lettered_and_the_partition_goes_on(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({"definitionId": "plain", "version": 1,
                  "steps": [{"id": "only", "type": "wf_echo"}]})  # fmt: skip
    producer = EventProducer(kafka_bootstrap)
    # The same key as the instance below: the bad records sit in front of it on its partition.
    producer.send(topic_name("workflows.inputs"), "wf-after-garbage", b"\x00 not a record")
    producer.flush()
    flows.cancel("wf-never-started", actor="ops")
    workflow_id = flows.start("plain", workflow_id="wf-after-garbage")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)
    assert status_of(workflow_events(kafka_bootstrap)[workflow_id]) == "succeeded"

    letters = [decode(r.value, "DeadLetter")[1]
               for r in read_to_end(topic_name("executions.dlq"), None, kafka_bootstrap)
               if r.value is not None]  # fmt: skip
    ours = [d for d in letters if d["source_topic"] == topic_name("workflows.inputs")]
    reasons = sorted(d["reason"] for d in ours)
    assert len(ours) == 2, reasons
    assert any(r.startswith("undecodable") for r in reasons)
    assert any("no workflow instance 'wf-never-started'" in r for r in reasons)


def test_a_step_past_its_expected_duration_is_recorded_in_its_timeline_and_raises_no_alert(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    # Decision 0130: the watchdog's workflow_step_stuck is the one alert for a stuck step; the
    # orchestrator records step_overdue as a fact of the step's timeline, nothing on `alerts`.
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({"definitionId": "slow", "version": 1, "steps": [
        {"id": "crawl", "type": "sleep", "payload": {"seconds": 4}, "expectedDuration": "1s"}]})  # fmt: skip
    workflow_id = flows.start("slow")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)
    events = workflow_events(kafka_bootstrap)[workflow_id]
    types = types_of(events)
    assert "step_overdue" in types
    assert types.index("step_overdue") < types.index("step_succeeded")
    overdue = next(e for e in events if e["event_type"] == "step_overdue")
    assert overdue["step_id"] == "crawl" and overdue["data"]["expected_duration_ms"] == 1000
    # Any alert would have been committed in the transaction of its step_overdue event.
    assert workflow_alerts(kafka_bootstrap, workflow_id) == []


def _dead_letters_of(bootstrap: str, workflow_id: str) -> list[dict[str, Any]]:
    letters = [decode(r.value, "DeadLetter")[1]
               for r in read_to_end(topic_name("executions.dlq"), None, bootstrap)
               if r.value is not None]  # fmt: skip
    return [d for d in letters if d["source_topic"] == topic_name("workflows.inputs")
            and d["job_id"] == workflow_id]  # fmt: skip


def _last_snapshot_record(bootstrap: str, workflow_id: str) -> Any:
    last = None
    for record in read_to_end(topic_name("workflows.state"), None, bootstrap):
        if record.key == workflow_id:
            last = record
    return last


def test_a_finished_instance_is_pruned_after_the_retention_and_a_late_input_is_dead_lettered(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    # The orchestrator alone: the test sends the step's outcome as the timer would.
    port = free_port()
    env = workflow_env(kafka_bootstrap, applied_topology, TICKWHEEL_METRICS_PORT=str(port),
                       TICKWHEEL_ORCHESTRATOR_RETENTION="3s")  # fmt: skip
    running = WorkflowStack(tmp_path, env)
    running.add("orchestrator", "orchestrator").start()
    try:
        flows = WorkflowsClient(kafka_bootstrap)
        flows.define({"definitionId": "brief", "version": 1,
                      "steps": [{"id": "only", "type": "noop"}]})  # fmt: skip
        workflow_id = flows.start("brief", workflow_id="wf-brief")
        assert wait_until(lambda: "step_scheduled" in types_of(
            workflow_events(kafka_bootstrap).get(workflow_id, [])), TIMEOUT_S)  # fmt: skip
        outcome = input_record(workflow_id, StepSucceeded(int(time.time() * 1000), "only", 1),
                               "timer:step_succeeded:test:1")  # fmt: skip
        producer = EventProducer(kafka_bootstrap)
        producer.send(topic_name("workflows.inputs"), workflow_id, encode("WorkflowInput", outcome))
        producer.flush()
        assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

        def tombstoned() -> bool:
            last = _last_snapshot_record(kafka_bootstrap, workflow_id)
            return last is not None and last.value is None

        assert wait_until(tombstoned, TIMEOUT_S)
        ended_at = workflow_events(kafka_bootstrap)[workflow_id][-1]["event_time"]
        tombstone = _last_snapshot_record(kafka_bootstrap, workflow_id)
        # Not before the retention: counted from the last input the finished instance took.
        assert tombstone.timestamp_ms - ended_at >= 3000, (tombstone.timestamp_ms, ended_at)
        metrics = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert "tickwheel_orchestrator_pruned_total 1.0" in metrics
        assert 'tickwheel_orchestrator_instances{state="finished"} 0.0' in metrics
        assert "tickwheel_orchestrator_transaction_seconds_count" in metrics
        assert "wf-brief" not in metrics  # aggregates, never a series per instance
        # Its timeline is still there: folded from workflows.events, no snapshot needed.
        timeline = flows.get(workflow_id)
        assert (timeline.status, timeline.steps["only"]["status"]) == ("succeeded", "succeeded")

        flows.start("brief", workflow_id=workflow_id)  # late: the same id again
        flows.cancel(workflow_id, actor="ops", reason="too late")
        assert wait_until(lambda: len(_dead_letters_of(kafka_bootstrap, workflow_id)) == 2,
                          TIMEOUT_S)  # fmt: skip
    finally:
        running.stop()
    reasons = [d["reason"] for d in _dead_letters_of(kafka_bootstrap, workflow_id)]
    assert all("'wf-brief' finished and was pruned after the retention of 3s" in r
               for r in reasons), reasons  # fmt: skip
    events = workflow_events(kafka_bootstrap)[workflow_id]
    assert types_of(events).count("workflow_started") == 1
    assert events[-1]["event_type"] == "workflow_succeeded"  # nothing after its end
    assert _last_snapshot_record(kafka_bootstrap, workflow_id).value is None
