"""Real timer, orchestrator and worker processes for workflow tests, and readers of what the
workflow topics hold afterwards."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.timer_harness import ServiceProcess, timer_env
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.core.workflow import TERMINAL, Start
from tickwheel.core.workflow.wire import input_record
from tickwheel.topology import topic_name

APPROVAL_KEYS = {"k1": b"test-secret-1"}


def workflow_env(bootstrap: str, prefix: str, **extra: str) -> dict[str, str]:
    return timer_env(bootstrap, prefix, TICKWHEEL_LEASE_SECONDS="5",
                     TICKWHEEL_HEARTBEAT_SECONDS="1", TICKWHEEL_ORCHESTRATOR_POLL_MS="20",
                     **extra)  # fmt: skip


@dataclass
class WorkflowStack:
    """A timer, an orchestrator and a worker, each a real process logging into `tmp`."""

    tmp: Path
    env: dict[str, str]
    processes: dict[str, ServiceProcess] = field(default_factory=dict)
    # What the worker loads: the handlers of the DAG tests, and any workflow code modules.
    modules: tuple[str, ...] = ("tests.integration.workflow_handlers",)

    def add(self, name: str, service: str, *args: str) -> ServiceProcess:
        process = ServiceProcess(name, self.tmp / f"{name}.log", self.env, service, args)
        self.processes[name] = process
        return process

    def start(self) -> WorkflowStack:
        self.add("timer", "timer")
        self.add("orchestrator", "orchestrator")
        modules = [arg for module in self.modules for arg in ("--module", module)]
        self.add("worker", "worker", "--concurrency", "8", "--shutdown-grace", "2", *modules)
        for process in self.processes.values():
            process.start()
        return self

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop()


def workflow_events(bootstrap: str) -> dict[str, list[dict[str, Any]]]:
    """Every committed workflow event, by instance, in seq order."""
    by_instance: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in read_to_end(topic_name("workflows.events"), None, bootstrap):
        if record.value is None:
            continue
        event = decode(record.value, "WorkflowEvent")[1]
        event["data"] = json.loads(event["data"]) if event["data"] else {}
        by_instance[event["workflow_id"]].append(event)
    for events in by_instance.values():
        events.sort(key=lambda e: e["seq"])
    return by_instance


def step_requests(bootstrap: str) -> list[dict[str, Any]]:
    """Every execution request of a workflow step, in the order written."""
    found = []
    for priority in ("high", "normal", "low"):
        for record in read_to_end(topic_name(f"executions.{priority}"), None, bootstrap):
            if record.value is None:
                continue
            request = decode(record.value, "ExecutionRequest")[1]
            if request.get("workflow_id"):
                found.append(request)
    return found


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_type"] for e in events]


def status_of(events: list[dict[str, Any]]) -> str | None:
    return events[-1]["status"] if events else None


def workflow_alerts(bootstrap: str, workflow_id: str) -> list[dict[str, Any]]:
    """Alerts about `workflow_id`, in order, each with its `state` (firing, resolved)."""
    found = []
    for record in read_to_end(topic_name("alerts"), None, bootstrap):
        if record.value is None:
            continue
        alert = decode(record.value, "Alert")[1]
        details = json.loads(alert["details"] or "{}")
        if details.get("workflow_id") == workflow_id:
            found.append({**alert, "state": details["state"]})
    return found


# The chaos workflow: a compensated first step, two branches (one retried), a durable sleep and a
# last step; the fault tests (tests/chaos, tests/cluster) start instances of it and check them.
OUTCOMES = ("step_succeeded", "step_failed", "step_cancelled")

CHAOS_DEFINITION = {
    "definitionId": "chaos",
    "version": 1,
    "steps": [
        {
            "id": "first",
            "type": "wf_echo",
            "payload": {"n": 1},
            "compensation": {"type": "wf_echo", "payload": {"undo": 1}},
        },
        {"id": "left", "type": "wf_echo", "dependsOn": ["first"], "payload": {"n": 2}},
        {
            "id": "right",
            "type": "wf_fail",
            "dependsOn": ["first"],
            "maxAttempts": 3,
            "backoff": {"base": "200ms", "cap": "1s"},
            "payload": {"times": 1},
        },
        {"id": "nap", "kind": "sleep", "duration": "3s", "dependsOn": ["left", "right"]},
        {"id": "last", "type": "wf_echo", "dependsOn": ["nap"], "payload": {"n": 3}},
    ],
}


def start_instances(
    bootstrap: str, count: int, first: int = 0, tag: str = "chaos", definition_id: str = "chaos"
) -> list[str]:
    """Start `count` instances of version 1 of `definition_id` (CHAOS_DEFINITION unless
    told), numbered from `first`; their ids."""
    producer = EventProducer(bootstrap)
    ids = [f"{tag}-{i:04d}" for i in range(first, first + count)]
    now = int(time.time() * 1000)
    for workflow_id in ids:
        record = input_record(
            workflow_id,
            Start(now, {"i": workflow_id}),
            f"test:{workflow_id}",
            definition_id=definition_id,
            definition_version=1,
        )
        producer.send(topic_name("workflows.inputs"), workflow_id, encode("WorkflowInput", record))
    producer.flush()
    return ids


def all_ended(bootstrap: str, ids: list[str]) -> bool:
    events = workflow_events(bootstrap)
    return all(status_of(events.get(i, [])) in TERMINAL for i in ids)


def outcome_inputs(bootstrap: str) -> Counter[tuple[str, int]]:
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


def check_workflow_invariants(bootstrap: str, ids: list[str]) -> None:
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
    outcomes = outcome_inputs(bootstrap)
    missing = [k for k in requested if outcomes[k] == 0]
    twice = [k for k in requested if outcomes[k] > 1]
    assert not missing and not twice, (missing[:3], twice[:3])
