"""Workflows end to end on the real broker: real timer, orchestrator and worker processes.

Each test publishes a definition and starts instances with the SDK, then checks what the
topics hold: the instance's events (`workflows.events`), the step executions' requests.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import execution_events, wait_until
from tests.integration.workflow_harness import (
    APPROVAL_KEYS,
    WorkflowStack,
    status_of,
    step_requests,
    types_of,
    workflow_alerts,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.core.workflow import Approve
from tickwheel.core.workflow.approval import ApprovalClaim, sign_approval, verify_approval
from tickwheel.core.workflow.wire import input_record
from tickwheel.errors import InvalidInput
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
TIMEOUT_S = 90.0


def _task(step_id: str, *deps: str, job_type: str = "wf_echo", **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "type": job_type, "dependsOn": list(deps),
            "payload": {"step": step_id}, **extra}  # fmt: skip


def _compensated(step_id: str, *deps: str, **extra: Any) -> dict[str, Any]:
    return _task(step_id, *deps, compensation={"type": "wf_echo", "payload": {"undo": step_id}},
                 **extra)  # fmt: skip


@pytest.fixture
def stack(kafka_bootstrap: str, applied_topology: str, tmp_path: Path) -> Any:
    running = WorkflowStack(tmp_path, workflow_env(kafka_bootstrap, applied_topology)).start()
    yield running
    running.stop()


def _ended(bootstrap: str, workflow_id: str) -> bool:
    return status_of(workflow_events(bootstrap).get(workflow_id, [])) in (
        "succeeded", "failed", "cancelled", "compensated")  # fmt: skip


def _has(bootstrap: str, workflow_id: str, event_type: str, count: int = 1) -> bool:
    return types_of(workflow_events(bootstrap).get(workflow_id, [])).count(event_type) >= count


def test_a_dag_with_parallel_branches_a_sleep_an_approval_and_a_compensation_runs_end_to_end(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap, keys=APPROVAL_KEYS)
    flows.define({
        "definitionId": "dag", "version": 1, "onFailure": "compensate",
        "steps": [
            {key: value for key, value in _compensated("fetch").items() if key != "payload"}
            | {"payloadTemplate": {"n": "{{ input.n }}"}},
            _compensated("left", "fetch"),
            _compensated("right", "fetch"),
            {"id": "nap", "kind": "sleep", "duration": "2s", "dependsOn": ["left", "right"]},
            {"id": "sign_off", "kind": "approval", "dependsOn": ["nap"], "timeout": "5m",
             "assignees": ["lead@example.com"]},
            _task("publish", "sign_off", job_type="wf_fail",
                  payload={"mode": "permanent"}, onFailure="compensate"),
        ],
    })  # fmt: skip
    workflow_id = flows.start("dag", {"n": 7})

    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_requested"), TIMEOUT_S)
    token = flows.approval_token(workflow_id, "sign_off")
    flows.approve(token, actor="lead@example.com", note="ship it")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)[workflow_id]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    succeeded = [e["step_id"] for e in events if e["event_type"] == "step_succeeded"]
    # The branches ran after fetch and before the sleep ended; the approval after the sleep.
    assert succeeded[0] == "fetch" and set(succeeded[1:3]) == {"left", "right"}
    assert succeeded[3:] == ["nap", "sign_off"]
    scheduled = {e["step_id"]: e["seq"] for e in events if e["event_type"] == "step_scheduled"}
    done = {e["step_id"]: e["seq"] for e in events if e["event_type"] == "step_succeeded"}
    assert scheduled["left"] > done["fetch"] and scheduled["right"] > done["fetch"]
    approved = next(e for e in events if e["event_type"] == "approval_approved")
    assert approved["actor"] == "lead@example.com" and approved["data"]["note"] == "ship it"
    # publish failed for good: the compensations ran in exact reverse completion order.
    compensated = [e["step_id"] for e in events if e["event_type"] == "compensation_succeeded"]
    with_compensation = [s for s in succeeded if s in ("fetch", "left", "right")]
    assert compensated == list(reversed(with_compensation))
    assert status_of(events) in ("failed", "compensated")
    # Every step's output came back from the worker, with the workflow and step in its context.
    fetch_out = next(e for e in events if e["event_type"] == "step_succeeded"
                     and e["step_id"] == "fetch")["data"]["output"]  # fmt: skip
    assert fetch_out["workflow_id"] == workflow_id and fetch_out["step_id"] == "fetch"
    assert fetch_out["n"] == 7


def test_an_approval_after_its_timeout_is_fenced_and_escalation_happens(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap, keys=APPROVAL_KEYS)
    flows.define({
        "definitionId": "escalating", "version": 1,
        "steps": [
            # Long enough for the test to decide round 2 in time, short enough to wait out.
            {"id": "ask", "kind": "approval", "timeout": "10s", "onTimeout": "escalate",
             "assignees": ["clerk@example.com"], "escalateTo": ["boss@example.com"],
             "maxEscalations": 1},
            _task("after", "ask"),
        ],
    })  # fmt: skip
    workflow_id = flows.start("escalating")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_requested"), TIMEOUT_S)
    # A link for the round waiting now: round 1, unless a loaded machine let it time out
    # before this read (then round 2); either way bounded by its round's expiry (checked below).
    minted_early = flows.approval_token(workflow_id, "ask")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_escalated"), TIMEOUT_S)
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_requested", 2),
                      TIMEOUT_S)  # fmt: skip

    second_round = flows.approval_token(workflow_id, "ask")
    opened = [e for e in workflow_events(kafka_bootstrap)[workflow_id]
              if e["event_type"] == "approval_requested"]  # fmt: skip
    # Round 1's link as approval_token signs it during that round: its own expiry.
    first_round = sign_approval(
        ApprovalClaim(workflow_id, "ask", 1, opened[0]["data"]["expires_at_ms"]),
        *next(iter(APPROVAL_KEYS.items())),
    )
    # The first link died with its round: the SDK refuses it at the door ...
    with pytest.raises(InvalidInput, match="expired"):
        flows.approve(first_round, actor="clerk@example.com", note="too late")
    # ... and a decision for it that reaches the instance anyway (sent before the timeout,
    # delivered after) is fenced. In this order on the partition: stale first, then fresh.
    late = Approve(int(time.time() * 1000), "ask", 1, "clerk@example.com", "too late")
    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("workflows.inputs"), workflow_id,
                  encode("WorkflowInput", input_record(workflow_id, late, "test:late")))  # fmt: skip
    producer.flush()
    flows.approve(second_round, actor="boss@example.com", note="fine")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)[workflow_id]
    fenced = next(e for e in events if e["event_type"] == "approval_fenced")
    assert fenced["actor"] == "clerk@example.com" and fenced["data"]["reason"] == "stale_round"
    requested = [e for e in events if e["event_type"] == "approval_requested"]
    assert [e["data"]["assignees"] for e in requested] == [
        ["clerk@example.com"],
        ["boss@example.com"],
    ]
    approved = [e for e in events if e["event_type"] == "approval_approved"]
    assert [(e["actor"], e["data"]["round"]) for e in approved] == [("boss@example.com", 2)]
    assert status_of(events) == "succeeded"
    # A link approval_token signs never outlives its round: it expires when its round times out.
    for token in (minted_early, second_round):
        claim = verify_approval(token, APPROVAL_KEYS, 0)
        assert claim.expires_at_ms == requested[claim.round - 1]["data"]["expires_at_ms"]
    assert verify_approval(second_round, APPROVAL_KEYS, 0).round == 2


def test_cancel_runs_the_compensations_in_reverse_completion_order(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({
        "definitionId": "cancellable", "version": 1, "onCancel": "compensate",
        "steps": [_compensated("one"), _compensated("two", "one"), _compensated("three", "two"),
                  {"id": "wait", "kind": "sleep", "duration": "1h", "dependsOn": ["three"]}],
    })  # fmt: skip
    workflow_id = flows.start("cancellable")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "sleep_started"), TIMEOUT_S)
    flows.cancel(workflow_id, actor="ops@example.com", reason="no longer wanted")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)[workflow_id]
    cancel = next(e for e in events if e["event_type"] == "cancel_requested")
    assert cancel["actor"] == "ops@example.com"
    assert any("sleep:wait" in e["data"].get("cancel_timers", []) for e in events)
    compensated = [e["step_id"] for e in events if e["event_type"] == "compensation_succeeded"]
    assert compensated == ["three", "two", "one"]
    assert status_of(events) == "cancelled"
    assert "timer_fired_ignored" not in types_of(events)  # the sleep's timer was dropped


def test_retry_step_reuses_the_execution_id_with_the_next_attempt(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({
        "definitionId": "repairable", "version": 1,
        "steps": [_task("flaky", job_type="wf_fail", payload={"mode": "permanent", "times": 1},
                        onFailure="fail"),
                  _task("then", "flaky")],
    })  # fmt: skip
    workflow_id = flows.start("repairable")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)
    assert status_of(workflow_events(kafka_bootstrap)[workflow_id]) == "failed"

    flows.retry_step(workflow_id, "flaky", actor="ops@example.com")
    assert wait_until(lambda: status_of(workflow_events(kafka_bootstrap)[workflow_id])
                      == "succeeded", TIMEOUT_S)  # fmt: skip

    events = workflow_events(kafka_bootstrap)[workflow_id]
    assert "workflow_reopened" in types_of(events)
    retried = next(e for e in events if e["event_type"] == "step_retried")
    assert retried["actor"] == "ops@example.com"
    flaky = [r for r in step_requests(kafka_bootstrap)
             if r["workflow_id"] == workflow_id and r["step_id"] == "flaky"]  # fmt: skip
    assert [r["attempt"] for r in flaky] == [1, 2]
    assert len({r["execution_id"] for r in flaky}) == 1


def test_reassigning_an_approval_kills_the_old_link_and_the_new_round_decides(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap, keys=APPROVAL_KEYS)
    flows.define({"definitionId": "handover", "version": 1, "steps": [
        {"id": "ask", "kind": "approval", "timeout": "10m", "assignees": ["ann@example.com"]}]})  # fmt: skip
    workflow_id = flows.start("handover")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_requested"), TIMEOUT_S)
    old_link = flows.approval_token(workflow_id, "ask")
    flows.reassign(workflow_id, "ask", ["bob@example.com"], actor="lead@example.com")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "approval_requested", 2),
                      TIMEOUT_S)  # fmt: skip
    new_link = flows.approval_token(workflow_id, "ask")
    flows.approve(old_link, actor="ann@example.com")
    flows.reject(new_link, actor="bob@example.com", note="not this one")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)[workflow_id]
    reassigned = next(e for e in events if e["event_type"] == "approval_reassigned")
    assert reassigned["actor"] == "lead@example.com"
    fenced = next(e for e in events if e["event_type"] == "approval_fenced")
    assert (fenced["actor"], fenced["data"]["reason"]) == ("ann@example.com", "stale_round")
    rejected = next(e for e in events if e["event_type"] == "approval_rejected")
    assert (rejected["actor"], rejected["data"]["round"]) == ("bob@example.com", 2)
    assert status_of(events) in ("failed", "compensated")


def test_a_dead_lettered_compensation_blocks_the_instance_with_an_alert_until_skipped(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({"definitionId": "stuck_saga", "version": 1, "steps": [
        _task("book", compensation={"type": "wf_fail", "maxAttempts": 1,
                                    "payload": {"mode": "permanent"}}),
        _task("pay", "book", job_type="wf_fail", payload={"mode": "permanent"},
              onFailure="compensate")]})  # fmt: skip
    workflow_id = flows.start("stuck_saga")
    assert wait_until(lambda: _has(kafka_bootstrap, workflow_id, "workflow_blocked"), TIMEOUT_S)
    assert wait_until(lambda: any(a["kind"] == "workflow_compensation_failed"
                                  and a["state"] == "firing"
                                  for a in workflow_alerts(kafka_bootstrap, workflow_id)), TIMEOUT_S)  # fmt: skip
    flows.skip_step(workflow_id, "book", actor="ops@example.com")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)

    events = workflow_events(kafka_bootstrap)[workflow_id]
    skipped = next(e for e in events if e["event_type"] == "compensation_skipped")
    assert (skipped["step_id"], skipped["actor"]) == ("book", "ops@example.com")
    assert wait_until(lambda: workflow_alerts(kafka_bootstrap, workflow_id)[-1]["state"] == "resolved",
                      TIMEOUT_S)  # fmt: skip


def test_retrying_a_running_step_stops_its_attempt_and_runs_the_next(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    """End to end: retrying a running step stops attempt 1 and attempt 2 (same execution id)
    runs and succeeds. The cancel names its attempt, so a worker that reads the cancel before
    the retry's request does not take the retry for cancelled; that order is a race here, and
    is driven deterministically by the lane's unit test on the in-memory Kafka."""
    flows = WorkflowsClient(kafka_bootstrap)
    flows.define({"definitionId": "retry-running", "version": 1,
                  "steps": [_task("slow", job_type="wf_hold_first"), _task("then", "slow")]})  # fmt: skip
    workflow_id = flows.start("retry-running")

    def slow_leased() -> bool:
        ids = {r["execution_id"] for r in step_requests(kafka_bootstrap)
               if r["workflow_id"] == workflow_id and r["step_id"] == "slow"}  # fmt: skip
        return any(e["event_type"] == "leased" and e["execution_id"] in ids
                   for e in execution_events(kafka_bootstrap))  # fmt: skip

    assert wait_until(slow_leased, TIMEOUT_S)
    flows.retry_step(workflow_id, "slow", actor="ops@example.com")
    assert wait_until(lambda: _ended(kafka_bootstrap, workflow_id), TIMEOUT_S)
    assert status_of(workflow_events(kafka_bootstrap)[workflow_id]) == "succeeded"
    slow = [r for r in step_requests(kafka_bootstrap)
            if r["workflow_id"] == workflow_id and r["step_id"] == "slow"]  # fmt: skip
    assert [r["attempt"] for r in slow] == [1, 2] and len({r["execution_id"] for r in slow}) == 1
    ran = [
        e for e in execution_events(kafka_bootstrap) if e["execution_id"] == slow[0]["execution_id"]
    ]
    assert ("succeeded", 2) in {(e["event_type"], e["attempt"]) for e in ran}, ran
