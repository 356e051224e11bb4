"""Real timer, orchestrator and worker processes for workflow tests, and readers of what the
workflow topics hold afterwards."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.timer_harness import ServiceProcess, timer_env
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
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

    def add(self, name: str, service: str, *args: str) -> ServiceProcess:
        process = ServiceProcess(name, self.tmp / f"{name}.log", self.env, service, args)
        self.processes[name] = process
        return process

    def start(self) -> WorkflowStack:
        self.add("timer", "timer")
        self.add("orchestrator", "orchestrator")
        self.add("worker", "worker", "--concurrency", "8", "--shutdown-grace", "2",
                 "--module", "tests.integration.workflow_handlers")  # fmt: skip
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
