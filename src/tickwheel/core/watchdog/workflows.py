"""`workflow_step_stuck`: a workflow step running or waiting past its `expectedDuration`,
from what the watchdog folded of the definitions and the instances' events (`steps`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.steps import STUCK_STATUSES, WorkflowFacts

KIND = "workflow_step_stuck"


def stuck_steps(facts: WorkflowFacts, watermark: int) -> Iterator[Condition]:
    """Every step running or waiting longer than its definition's `expectedDuration` (a code
    step: its own `expected`)."""
    for (workflow_id, step_id), step in sorted(facts.steps.items()):
        if step.status not in STUCK_STATUSES or step.started_at is None:
            continue
        expected = step.expected_ms
        if expected is None:
            expected = facts.expected.get(step.definition, {}).get(step_id)
        if expected is None:
            continue
        took = watermark - step.started_at
        if took <= expected:
            continue
        definition_id, version = step.definition
        yield Condition(
            KIND,
            f"{workflow_id}/{step_id}",
            "warning",
            f"step {step_id!r} of workflow {workflow_id} has been {step.status} for "
            f"{took // 1000} s, longer than its expectedDuration of {expected // 1000} s",
            {
                "workflow_id": workflow_id,
                "step_id": step_id,
                "status": step.status,
                "started_at": step.started_at,
                "running_ms": took,
                "expected_duration_ms": expected,
                "attempt": step.attempt,
                "execution_id": step.execution_id,
                "definition_id": definition_id,
                "definition_version": version,
            },
            summary=step.status,
            tenant_id=step.tenant_id,
        )


def why_clear(facts: WorkflowFacts, subject: str) -> dict[str, Any]:
    workflow_id, _, step_id = subject.rpartition("/")
    step = facts.steps.get((workflow_id, step_id))
    return {"reason": "step_moved_on", "status": step.status if step else "ended"}
