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
# A code workflow's step events (core.codeflow): scheduled (each attempt), completed, failed
# (its final failure; a retried attempt is `step_attempt_failed`, the step still running),
# stopped by an operator's completion (`step_repaired` then `step_completed`).
CODE_STEP_STATUS = {
    "step_scheduled": "running",
    "step_repaired": "running",
    "step_completed": "succeeded",
    "step_failed": "failed",
}
CODE_RUN_ENDINGS = frozenset(
    {"workflow_completed", "workflow_failed", "workflow_cancelled", "continued_as_new"}
)


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
    # A code step's own `expected` (from its scheduling; a DAG's comes from its definition).
    expected_ms: int | None = None


@dataclass(slots=True)
class WorkflowFacts:
    # (definition id, version) → step id → expectedDuration (ms), the steps that declare one.
    expected: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    steps: dict[tuple[str, str], StepFacts] = field(default_factory=dict)
    # The (definition id, version)s of workflows written as code (decision 0217), whose
    # events name their steps' statuses in the engine's words.
    code: set[tuple[str, int]] = field(default_factory=set)

    def definition(self, record: DefinitionRecord) -> None:
        """A `WorkflowDefinition` record; one that does not parse declares nothing."""
        key = (str(record["definition_id"]), int(record["version"]))
        parsed = parse_workflow_definition(json.loads(str(record["body"])))
        if not isinstance(parsed, WorkflowDefinition):
            self.code.add(key)  # its steps say their own expected duration as they start
            return
        self.expected[key] = {
            s.id: s.expected_duration_ms for s in parsed.steps if s.expected_duration_ms
        }

    def event(self, record: WorkflowEvent) -> None:
        """A `WorkflowEvent` record about one step (events of the instance alone are skipped:
        a step's own events say when it ends, including by a cancel or a repair)."""
        step_id = record.get("step_id")
        kind, seq, at = str(record["event_type"]), int(record["seq"]), int(record["event_time"])
        definition = (str(record["definition_id"]), int(record["definition_version"]))
        code = definition in self.code
        if step_id is None:
            if code and kind in CODE_RUN_ENDINGS:
                self._run_ended(str(record["workflow_id"]), seq, at)
            return
        key = (str(record["workflow_id"]), str(step_id))
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = StepFacts(definition)
        step.tenant_id = step.tenant_id or record.get("tenant_id")
        step.last_seen_ms = max(step.last_seen_ms, at)
        if code:
            status = CODE_STEP_STATUS.get(kind)
            if kind == "step_scheduled":
                step.expected_ms = _expected_ms(record)
        else:
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

    def _run_ended(self, workflow_id: str, seq: int, at: int) -> None:
        """A code run's ending (or its continue-as-new) stops what it left running: those
        steps record no event of their own."""
        for (owner, _), step in self.steps.items():
            if owner == workflow_id and step.status in STUCK_STATUSES and seq > step.status_seq:
                step.status_seq, step.status = seq, "cancelled"
                step.last_seen_ms = max(step.last_seen_ms, at)

    def prune(self, horizon: int) -> None:
        for key in [
            k
            for k, s in self.steps.items()
            if s.status not in STUCK_STATUSES and s.last_seen_ms < horizon
        ]:
            del self.steps[key]


def _expected_ms(record: WorkflowEvent) -> int | None:
    """The `expected_ms` a code step's scheduling recorded in its options (None: none)."""
    try:
        options = json.loads(record.get("data") or "{}").get("options") or {}
        expected = options.get("expected_ms")
    except (ValueError, AttributeError):
        return None
    return expected if isinstance(expected, int) and not isinstance(expected, bool) else None


def _final(record: WorkflowEvent) -> bool:
    try:
        return bool(json.loads(record.get("data") or "{}").get("final"))
    except (ValueError, AttributeError):
        return False
