"""Chaos: SIGKILL the orchestrator, and separately the timer, repeatedly while 200 workflow
instances run, then check what the topics hold.

Invariants (issue 11, "Done means"): every instance ends (terminal); every step attempt
was requested once and has exactly one accepted outcome (the timer's input to the workflow);
no completed step is scheduled again; `workflows.events` has no duplicate
`(workflow_id, seq)` and no gap.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    WorkflowStack,
    status_of,
    step_requests,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.core.workflow import TERMINAL, Start
from tickwheel.core.workflow.wire import input_record
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
INSTANCES = 200
KILLS = 4
# Instances start in one wave per kill, and each sleeps longer than the gap between kills:
# every kill lands while a wave is mid-run.
KILL_EVERY_S = 2.0
SETTLE_S = 240.0
OUTCOMES = ("step_succeeded", "step_failed", "step_cancelled")

DEFINITION = {
    "definitionId": "chaos", "version": 1,
    "steps": [
        {"id": "first", "type": "wf_echo", "payload": {"n": 1},
         "compensation": {"type": "wf_echo", "payload": {"undo": 1}}},
        {"id": "left", "type": "wf_echo", "dependsOn": ["first"], "payload": {"n": 2}},
        {"id": "right", "type": "wf_fail", "dependsOn": ["first"], "maxAttempts": 3,
         "backoff": {"base": "200ms", "cap": "1s"}, "payload": {"times": 1}},
        {"id": "nap", "kind": "sleep", "duration": "3s", "dependsOn": ["left", "right"]},
        {"id": "last", "type": "wf_echo", "dependsOn": ["nap"], "payload": {"n": 3}},
    ],
}  # fmt: skip


def _start_many(bootstrap: str, count: int, first: int = 0) -> list[str]:
    producer = EventProducer(bootstrap)
    ids = [f"chaos-{i:04d}" for i in range(first, first + count)]
    now = int(time.time() * 1000)
    for workflow_id in ids:
        record = input_record(workflow_id, Start(now, {"i": workflow_id}), f"test:{workflow_id}",
                              definition_id="chaos", definition_version=1)  # fmt: skip
        producer.send(topic_name("workflows.inputs"), workflow_id,
                      encode("WorkflowInput", record))  # fmt: skip
    producer.flush()
    return ids


def _all_ended(bootstrap: str, ids: list[str]) -> bool:
    events = workflow_events(bootstrap)
    return all(status_of(events.get(i, [])) in TERMINAL for i in ids)


def _outcome_inputs(bootstrap: str) -> Counter[tuple[str, int]]:
    """Committed step outcomes the timer sent, per (execution id, attempt)."""
    counts: Counter[tuple[str, int]] = Counter()
    for record in read_to_end(topic_name("workflows.inputs"), None, bootstrap):
        if record.value is None:
            continue
        value = decode(record.value, "WorkflowInput")[1]
        if value["input_id"].startswith("timer:") and value["kind"] in OUTCOMES:
            _, _kind, execution_id, attempt = value["input_id"].split(":")
            counts[(execution_id, int(attempt))] += 1
    return counts


def _check_invariants(bootstrap: str, ids: list[str]) -> None:
    events = workflow_events(bootstrap)
    for workflow_id in ids:
        history = events[workflow_id]
        seqs = [e["seq"] for e in history]
        assert seqs == list(range(1, len(seqs) + 1)), (workflow_id, Counter(seqs).most_common(3))
        assert status_of(history) == "succeeded", (workflow_id, status_of(history))
        succeeded = Counter(e["step_id"] for e in history if e["event_type"] == "step_succeeded")
        assert all(n == 1 for n in succeeded.values()), (workflow_id, succeeded)
        done: set[str] = set()
        scheduled: Counter[tuple[str, int]] = Counter()
        for event in history:
            if event["event_type"] == "step_scheduled":
                assert event["step_id"] not in done, f"{workflow_id}: {event['step_id']} re-run"
                scheduled[(event["step_id"], event["attempt"])] += 1
            elif event["event_type"] == "step_succeeded":
                done.add(event["step_id"])
        assert all(n == 1 for n in scheduled.values()), (workflow_id, scheduled)
    ours = [r for r in step_requests(bootstrap) if r["workflow_id"] in set(ids)]
    requested = Counter((r["execution_id"], r["attempt"]) for r in ours)
    assert all(n == 1 for n in requested.values()), requested.most_common(3)
    outcomes = _outcome_inputs(bootstrap)
    missing = [k for k in requested if outcomes[k] == 0]
    twice = [k for k in requested if outcomes[k] > 1]
    assert not missing and not twice, (missing[:3], twice[:3])


def _run_with_kills(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path, victim: str
) -> None:
    env = workflow_env(kafka_bootstrap, applied_topology)
    stack: Any = WorkflowStack(tmp_path, env).start()
    try:
        WorkflowsClient(kafka_bootstrap).define(DEFINITION)
        ids: list[str] = []
        unfinished_at_kills = []
        for kill in range(KILLS):
            ids += _start_many(kafka_bootstrap, INSTANCES // KILLS, first=len(ids))
            time.sleep(KILL_EVERY_S)
            events = workflow_events(kafka_bootstrap)
            unfinished_at_kills.append(
                sum(status_of(events.get(i, [])) not in TERMINAL for i in ids)
            )
            process = stack.processes[victim]
            process.kill()
            # The heir has the same name: static membership hands it the same partitions.
            process.log_path = tmp_path / f"{victim}-{kill + 1}.log"
            process.start()
        print(f"{victim}: instances unfinished at each kill: {unfinished_at_kills}")
        # The kills landed while instances ran (else this test would prove nothing).
        assert all(n > 0 for n in unfinished_at_kills), unfinished_at_kills
        assert len(ids) == INSTANCES
        assert wait_until(lambda: _all_ended(kafka_bootstrap, ids), SETTLE_S, interval=2.0)
        _check_invariants(kafka_bootstrap, ids)
    finally:
        stack.stop()


def test_killing_the_orchestrator_repeatedly_loses_and_repeats_nothing(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    _run_with_kills(kafka_bootstrap, applied_topology, tmp_path, "orchestrator")


def test_killing_the_timer_repeatedly_loses_and_repeats_nothing(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    _run_with_kills(kafka_bootstrap, applied_topology, tmp_path, "timer")
