"""Chaos for workflows written as code (issue 33, "Done means"): 20 instances of a five-step
workflow with a durable sleep and a signal wait, while the worker that runs the workflow code
and the orchestrator are each SIGKILLed twice mid-run.

Invariants, from the recorded history: every instance completes; every step completed once,
and none was scheduled again after its completion; every sleep fired once; every signal was received once; every step and task execution attempt was requested
once and has exactly one accepted outcome (the timer's input to the workflow)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    WorkflowStack,
    outcome_inputs,
    status_of,
    step_requests,
    workflow_env,
    workflow_events,
)
from tickwheel.core.workflow import TERMINAL
from tickwheel.sdk.workflows import WorkflowsClient

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
APP = "tests.integration.code_workflow_app"
INSTANCES = 20
STEPS = ["authorize#1", "reserve_inventory#1", "pack#1", "notify#1", "capture_payment#1"]
# Worker, orchestrator, worker, orchestrator: each killed twice, 3 s apart, while instances
# run their steps, sleep, and wait for the signals sent between the kills.
VICTIMS = ("worker", "orchestrator", "worker", "orchestrator")
KILL_EVERY_S = 3.0
SETTLE_S = 240.0


def _types(events: list[dict[str, object]]) -> list[object]:
    return [e["event_type"] for e in events]


def test_killing_the_code_worker_and_the_orchestrator_twice_loses_and_repeats_nothing(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = workflow_env(kafka_bootstrap, applied_topology)
    stack = WorkflowStack(tmp_path, env, modules=("tests.integration.workflow_handlers", APP))
    stack.start()
    try:
        client = WorkflowsClient(kafka_bootstrap)
        assert wait_until(lambda: client.definitions("code_order"), 60), "never published"
        ids = [
            client.start(
                "code_order",
                {"id": f"c{i}", "amount": i, "items": ["x"], "nap": "2s", "patience": "10m"},
                workflow_id=f"code-chaos-{i:02d}",
            )
            for i in range(INSTANCES)
        ]
        signalled: set[str] = set()
        unfinished_at_kills = []
        for kill, victim in enumerate(VICTIMS):
            time.sleep(KILL_EVERY_S)
            events = workflow_events(kafka_bootstrap)
            unfinished_at_kills.append(
                sum(status_of(events.get(i, [])) not in TERMINAL for i in ids)
            )
            # Approve the instances that wait now: their signals cross the kills that follow.
            for workflow_id in ids:
                waiting = "signal_wait_started" in _types(events.get(workflow_id, []))
                if waiting and workflow_id not in signalled:
                    client.signal(
                        workflow_id,
                        "approval",
                        {"approved": True, "by": "chaos"},
                        signal_id=f"approve-{workflow_id}",
                    )
                    signalled.add(workflow_id)
            process = stack.processes[victim]
            process.kill()
            process.log_path = tmp_path / f"{victim}-{kill + 1}.log"
            process.start()
        print(f"instances unfinished at each kill: {unfinished_at_kills}")
        assert all(n > 0 for n in unfinished_at_kills), unfinished_at_kills

        def settled() -> bool:
            events = workflow_events(kafka_bootstrap)
            for workflow_id in ids:
                history = events.get(workflow_id, [])
                if workflow_id not in signalled and "signal_wait_started" in _types(history):
                    client.signal(
                        workflow_id,
                        "approval",
                        {"approved": True, "by": "chaos"},
                        signal_id=f"approve-{workflow_id}",
                    )
                    signalled.add(workflow_id)
            return all(status_of(events.get(i, [])) in TERMINAL for i in ids)

        assert wait_until(settled, SETTLE_S, interval=2.0)
    finally:
        stack.stop()

    events = workflow_events(kafka_bootstrap)
    for workflow_id in ids:
        history = events[workflow_id]
        assert status_of(history) == "succeeded", (workflow_id, _types(history))
        seqs = [e["seq"] for e in history]
        assert seqs == list(range(1, len(seqs) + 1)), workflow_id
        # A step attempt lost with the killed worker is failed by its lease and scheduled
        # again; none is scheduled after its success, and each succeeds once.
        completed: Counter[object] = Counter()
        scheduled: list[object] = []
        for event in history:
            if event["event_type"] == "step_scheduled":
                assert not completed[event["step_id"]], f"{workflow_id}: {event['step_id']} re-run"
                if event["step_id"] not in scheduled:
                    scheduled.append(event["step_id"])
            elif event["event_type"] == "step_completed":
                completed[event["step_id"]] += 1
        assert scheduled == STEPS, (workflow_id, scheduled)
        assert completed == Counter(STEPS), (workflow_id, completed)
        types = Counter(_types(history))
        assert types["timer_fired"] == 1, (workflow_id, types)  # the nap, once
        assert types["signal_received"] == 1, (workflow_id, types)  # approved once
        assert types["workflow_completed"] == 1, (workflow_id, types)

    mine = set(ids)
    requests = [r for r in step_requests(kafka_bootstrap) if r["workflow_id"] in mine]
    requested = Counter((r["execution_id"], r["attempt"]) for r in requests)
    assert all(n == 1 for n in requested.values()), requested.most_common(3)
    outcomes = outcome_inputs(kafka_bootstrap)
    missing = [k for k in requested if outcomes[k] == 0]
    twice = [k for k in requested if outcomes[k] > 1]
    assert not missing and not twice, (missing[:3], twice[:3])
