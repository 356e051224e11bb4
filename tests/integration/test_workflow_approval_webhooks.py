"""Approval notices as signed webhooks (decision 0132) against the real broker, with real timer,
orchestrator and worker processes.

A loopback receiver verifies every request with the `standardwebhooks` library and refuses
the first delivery of each notice (503), so each one is retried under the same webhook id
with the same body. An approval round times out and is escalated: the receiver is told of
round 1's opening, its timeout, the escalation and round 2's opening; the link round 2's
notice carries approves the step, and the token is on no topic of the cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_watchdog_sinks import SECRET, Receiver
from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    APPROVAL_KEYS,
    WorkflowStack,
    status_of,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.core.workflow.approval import verify_approval
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.topology import load_topology, topic_name

pytestmark = pytest.mark.integration
TIMEOUT_S = 90.0
DEFINITION = {
    "definitionId": "signed_off", "version": 1,
    "steps": [
        {"id": "ask", "kind": "approval", "timeout": "6s", "onTimeout": "escalate",
         "assignees": ["clerk@example.com"], "escalateTo": ["boss@example.com"],
         "maxEscalations": 1},
        {"id": "after", "type": "wf_echo", "dependsOn": ["ask"]},
    ],
}  # fmt: skip


@pytest.fixture
def sink() -> Iterator[Receiver]:
    """The watchdog tests' loopback receiver: verifies signatures, refuses each id's first."""
    found = Receiver()
    found.thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


def _delivered(receiver: Receiver, workflow_id: str) -> list[dict[str, Any]]:
    """The bodies about `workflow_id` the receiver accepted (each id's second request on)."""
    seen: set[str] = set()
    accepted: dict[str, dict[str, Any]] = {}
    for webhook_id, _verified, body in receiver.snapshot():
        if body.get("data", {}).get("workflow_id") != workflow_id:
            continue
        if webhook_id in seen:
            accepted.setdefault(webhook_id, body)
        seen.add(webhook_id)
    return list(accepted.values())


def test_approval_rounds_timeouts_and_escalations_are_posted_signed_and_retried(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path, sink: Receiver
) -> None:
    receiver = sink
    env = workflow_env(
        kafka_bootstrap, applied_topology, TICKWHEEL_APPROVAL_KEYS="k1:test-secret-1",
        TICKWHEEL_APPROVAL_WEBHOOKS=receiver.url, TICKWHEEL_APPROVAL_WEBHOOK_SECRET=SECRET,
        TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
        TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S="0.2", TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_CAP_S="1",
    )  # fmt: skip
    stack = WorkflowStack(tmp_path, env).start()
    log = tmp_path / "orchestrator.log"
    try:
        # The sink's cursor starts at the topic's end: wait until it has its partitions.
        assert wait_until(lambda: log.exists() and "approval_webhooks_assigned" in log.read_text(),
                          TIMEOUT_S)  # fmt: skip
        flows = WorkflowsClient(kafka_bootstrap, keys=APPROVAL_KEYS)
        flows.define(DEFINITION)
        workflow_id = flows.start("signed_off", workflow_id=f"{applied_topology}wf-signed")

        def types() -> list[tuple[str, Any]]:
            return [(b["type"], b["data"].get("round"))
                    for b in _delivered(receiver, workflow_id)]  # fmt: skip

        opened_again = ("approval.requested", 2)
        assert wait_until(lambda: opened_again in types(), TIMEOUT_S), types()
        assert types() == [("approval.requested", 1), ("approval.timed_out", 1),
                           ("approval.escalated", 1), opened_again]  # fmt: skip
        second = _delivered(receiver, workflow_id)[-1]["data"]
        assert second["assignees"] == ["boss@example.com"] and second["step_id"] == "ask"
        token = second["link"].split()[-1]  # "tickwheel workflows approve --token T"
        claim = flows.approve(token, actor="boss@example.com", note="fine")
        assert (claim.workflow_id, claim.step, claim.round) == (workflow_id, "ask", 2)
        assert wait_until(
            lambda: status_of(workflow_events(kafka_bootstrap).get(workflow_id, [])) == "succeeded",
            TIMEOUT_S,
        )
    finally:
        stack.stop()

    requests = [(i, v, b) for i, v, b in receiver.snapshot()
                if b.get("data", {}).get("workflow_id") == workflow_id]  # fmt: skip
    assert requests and all(verified for _, verified, _ in requests)
    # Each notice was refused once and sent again: the same id, the same body, twice.
    counts = Counter(webhook_id for webhook_id, _, _ in requests)
    assert len(counts) == 4 and set(counts.values()) == {2}, counts
    for webhook_id in counts:
        bodies = [b for i, _, b in requests if i == webhook_id]
        assert bodies[0] == bodies[1]
        assert webhook_id == bodies[0]["data"]["event_id"]  # wf:<workflow_id>:<seq>
    first = next(b for _, _, b in requests if b["data"].get("round") == 1)["data"]
    assert verify_approval(first["link"].split()[-1], APPROVAL_KEYS, 0).round == 1
    # The bearer token was sent to the sink and written nowhere in the cluster.
    for spec in load_topology():
        for record in read_to_end(topic_name(spec.name), None, kafka_bootstrap):
            assert token.encode() not in (record.value or b""), spec.name
