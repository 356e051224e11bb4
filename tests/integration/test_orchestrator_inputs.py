"""The orchestrator against the real broker: instances stay pinned to their version while a
compatible next version is published and an incompatible one is refused with its reasons;
inputs it cannot fold are dead-lettered and the partition goes on; a step past its
expectedDuration raises an alert on `alerts`, resolved when the step ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.errors import InvalidInput
from tickwheel.sdk.workflows import IncompatibleDefinition, WorkflowsClient
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


def test_a_step_past_its_expected_duration_raises_an_alert_cleared_when_it_ends(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({"definitionId": "slow", "version": 1, "steps": [
        {"id": "crawl", "type": "sleep", "payload": {"seconds": 4}, "expectedDuration": "1s"}]})  # fmt: skip
    workflow_id = flows.start("slow")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)
    assert wait_until(lambda: len(workflow_alerts(kafka_bootstrap, workflow_id)) >= 2, TIMEOUT_S)
    alerts = workflow_alerts(kafka_bootstrap, workflow_id)
    assert (alerts[0]["kind"], alerts[0]["state"]) == ("workflow_step_overdue", "firing")
    assert alerts[-1]["state"] == "resolved"
    assert "step_overdue" in types_of(workflow_events(kafka_bootstrap)[workflow_id])
