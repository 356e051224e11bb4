"""What the watchdog folds of workflows, for `workflow_step_stuck` (`workflows`).

The watchdog reads `workflows.definitions` and `workflows.events` itself (not the
orchestrator's own overdue timer, nor its state): a step's `expectedDuration` comes from the
definition version its instance is pinned to, its status from the instance's events. The fold
is commutative and idempotent: a step's status is the one its highest-`seq` event gives (with
the core fold's own table of statuses), the time it started is the earliest running or waiting
event, so redelivered or reordered events decide the same. An ended step is forgotten once
settled (`settled_after_ms` after its last event), as executions are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tickwheel.core.workflow.definition import WorkflowDefinition
from tickwheel.core.workflow.kinds import parse_workflow_definition
from tickwheel.core.workflow.state import _STEP_STATUS
from tickwheel.records import WorkflowDefinition as DefinitionRecord  # core's is the parsed one
from tickwheel.records import WorkflowEvent

# The fold's own table of which event puts a step in which status (one table, not a copy
# that could drift from it).
STEP_STATUS = _STEP_STATUS
STUCK_STATUSES = frozenset({"running", "waiting"})


@dataclass(slots=True)
class StepFacts:
    definition: tuple[str, int]
    tenant_id: str | None = None
    status_seq: int = -1  # the seq of the newest event that set a status
    status: str = "pending"
    started_at: int | None = None
    attempt: int = 0
    execution_id: str | None = None
    last_seen_ms: int = 0


@dataclass(slots=True)
class WorkflowFacts:
    # (definition id, version) → step id → expectedDuration (ms), the steps that declare one.
    expected: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    steps: dict[tuple[str, str], StepFacts] = field(default_factory=dict)

    def definition(self, record: DefinitionRecord) -> None:
        """A `WorkflowDefinition` record; one that does not parse declares nothing."""
        key = (str(record["definition_id"]), int(record["version"]))
        parsed = parse_workflow_definition(json.loads(str(record["body"])))
        if not isinstance(parsed, WorkflowDefinition):
            return  # a code workflow's steps are not declared ahead: no expected durations
        self.expected[key] = {
            s.id: s.expected_duration_ms for s in parsed.steps if s.expected_duration_ms
        }

    def event(self, record: WorkflowEvent) -> None:
        """A `WorkflowEvent` record about one step (events of the instance alone are skipped:
        a step's own events say when it ends, including by a cancel or a repair)."""
        step_id = record.get("step_id")
        if step_id is None:
            return
        kind, seq, at = str(record["event_type"]), int(record["seq"]), int(record["event_time"])
        key = (str(record["workflow_id"]), str(step_id))
        step = self.steps.get(key)
        if step is None:
            definition = (str(record["definition_id"]), int(record["definition_version"]))
            step = self.steps[key] = StepFacts(definition)
        step.tenant_id = step.tenant_id or record.get("tenant_id")
        step.last_seen_ms = max(step.last_seen_ms, at)
        status = STEP_STATUS.get(kind)
        if kind == "step_failed":
            status = "failed" if _final(record) else None
        if status is None:
            return
        if status in STUCK_STATUSES:
            step.started_at = at if step.started_at is None else min(step.started_at, at)
        if seq > step.status_seq:
            step.status_seq, step.status = seq, status
            step.attempt = int(record.get("attempt") or 0)
            step.execution_id = record.get("execution_id")

    def prune(self, horizon: int) -> None:
        for key in [
            k
            for k, s in self.steps.items()
            if s.status not in STUCK_STATUSES and s.last_seen_ms < horizon
        ]:
            del self.steps[key]


def _final(record: WorkflowEvent) -> bool:
    try:
        return bool(json.loads(record.get("data") or "{}").get("final"))
    except (ValueError, AttributeError):
        return False
