"""An instance's state, and `evolve`, the one way it changes: a fold over its events.

`evolve(state, event)` never decides anything and never fails on an event `decide` made:
it applies what the event says. So `reduce(evolve, history, initial_state(...))` after a
crash gives exactly the state the instance had, which is what the orchestrator's snapshot
in `workflows.state` is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

from tickwheel.core.workflow.definition import WorkflowDefinition
from tickwheel.core.workflow.events import Event

__all__ = [
    "ENDED",
    "MAX_OUTPUT_BYTES",
    "TERMINAL",
    "StepState",
    "WorkflowState",
    "evolve",
    "initial_state",
]

# Step outputs are kept in the state for templates; the snapshot must stay far below Kafka's
# 1 MiB record limit, so the budget is stated rather than met by surprise (Zeebe #12873).
MAX_OUTPUT_BYTES = 256 * 1024
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "compensated"})
ENDED = frozenset({"succeeded", "failed", "skipped", "cancelled"})
# A step: pending → running (task attempt out) | waiting (sleep, approval) → succeeded |
# failed | skipped; cancelling (an execution asked to stop) → cancelled, or whatever the
# timer's verdict says it really did.
_STEP_STATUS = {
    "step_scheduled": "running",
    "sleep_started": "waiting",
    "approval_requested": "waiting",
    "step_succeeded": "succeeded",
    "step_skipped": "skipped",
    "step_cancelling": "cancelling",
    "step_cancelled": "cancelled",
}
_WORKFLOW_STATUS = {
    "workflow_started": "running",
    "workflow_failing": "stopping",
    "cancel_requested": "stopping",
    "compensation_scheduled": "compensating",
    "workflow_blocked": "blocked",
    "workflow_reopened": "running",
    "compensation_succeeded": "compensating",
    "compensation_skipped": "compensating",
    "workflow_succeeded": "succeeded",
    "workflow_failed": "failed",
    "workflow_cancelled": "cancelled",
    "workflow_compensated": "compensated",
}


_Record = TypeVar("_Record", "StepState", "WorkflowState")


def _with(record: _Record, changes: dict[str, Any]) -> _Record:
    """`dataclasses.replace` for these two slotted, frozen records (no `__post_init__`, every
    field in `__init__`): it copies the slots directly — all of them read at once by one
    `attrgetter`, each written through its slot descriptor — then writes the changes, at a
    third of replace's cost. Every event evolves two of them (decisions 0094, 0131)."""
    getter, setters, index = _SLOTS[type(record)]
    new = object.__new__(type(record))
    for setter, value in zip(setters, getter(record), strict=True):
        setter(new, value)
    for name, value in changes.items():
        setters[index[name]](new, value)
    return new


@dataclass(frozen=True, slots=True)
class StepState:
    """`attempt` counts task attempts (never reset: an operator retry is the next attempt of
    the same execution), `round` approval rounds; `comp_*` is the step's compensation."""

    status: str = "pending"
    attempt: int = 0
    round: int = 0
    escalations: int = 0
    output: Any = None
    started_at_ms: int | None = None
    ended_at_ms: int | None = None
    comp_status: str = ""
    comp_attempt: int = 0


@dataclass(frozen=True, slots=True)
class WorkflowState:
    """Status: new → running → succeeded, or → stopping (winding down after a final failure
    or a cancel: in-flight executions asked to stop) → compensating ⇄ blocked → failed,
    compensated or cancelled. `completed` is the order steps succeeded in (compensations run
    it backwards); `compensated` the order their compensations finished."""

    workflow_id: str
    definition_id: str
    definition_version: int
    status: str = "new"
    seq: int = 0
    input: Any = None
    steps: dict[str, StepState] = field(default_factory=dict)
    completed: tuple[str, ...] = ()
    compensated: tuple[str, ...] = ()
    ending: str | None = None
    compensate: bool = False
    output_bytes: int = 0
    timers: frozenset[str] = frozenset()
    alerts: frozenset[str] = frozenset()

    @property
    def outputs(self) -> dict[str, Any]:
        return {k: s.output for k, s in self.steps.items() if s.status == "succeeded"}


def _slot_access(cls: type) -> tuple[Any, list[Any], dict[str, int]]:
    names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    setters = [getattr(cls, name).__set__ for name in names]  # member descriptors
    return attrgetter(*names), setters, {name: i for i, name in enumerate(names)}


_SLOTS: dict[type, tuple[Any, list[Any], dict[str, int]]] = {
    cls: _slot_access(cls) for cls in (StepState, WorkflowState)
}


def initial_state(workflow_id: str, definition: WorkflowDefinition) -> WorkflowState:
    """A not-yet-started instance pinned to `definition`'s version."""
    return WorkflowState(
        workflow_id=workflow_id,
        definition_id=definition.definition_id,
        definition_version=definition.version,
        steps={spec.id: StepState() for spec in definition.steps},
    )


def _evolve_step(step: StepState, event: Event) -> StepState:
    kind, data, at = event.type, event.data, event.at_ms
    status = _STEP_STATUS.get(kind, step.status)
    if kind == "step_failed" and data.get("final"):
        status = "failed"
    changes: dict[str, Any] = {"status": status}
    if kind == "step_scheduled":
        changes["attempt"] = event.attempt
    elif kind == "approval_requested":
        changes["round"] = data["round"]
    elif kind == "approval_escalated":
        changes["escalations"] = step.escalations + 1
    elif kind == "step_succeeded":
        changes["output"] = data.get("output")
    elif kind == "compensation_scheduled":
        changes.update(comp_status="running", comp_attempt=event.attempt)
    elif kind == "compensation_failed" and data.get("final"):
        changes["comp_status"] = "failed"
    elif kind in ("compensation_succeeded", "compensation_skipped"):
        changes["comp_status"] = kind.removeprefix("compensation_")
    if status in ("running", "waiting") and step.started_at_ms is None:
        changes["started_at_ms"] = at
    if status in ENDED and step.status not in ENDED:
        changes["ended_at_ms"] = at
    return _with(step, changes)


def evolve(state: WorkflowState, event: Event) -> WorkflowState:
    """The state after `event` (see the module docstring: this applies, never decides)."""
    data = event.data
    changes: dict[str, Any] = {"seq": event.seq}
    status = _WORKFLOW_STATUS.get(event.type)
    if status is not None:
        changes["status"] = status
    if event.type == "workflow_started":
        changes["input"] = data.get("input")
    elif event.type in ("workflow_failing", "cancel_requested"):
        changes["ending"] = "failed" if event.type == "workflow_failing" else "cancelled"
        changes["compensate"] = bool(data.get("compensate"))
    elif event.type == "workflow_reopened":
        changes.update(ending=None, compensate=False)
    if event.step is not None and event.step in state.steps:
        steps = dict(state.steps)
        steps[event.step] = _evolve_step(state.steps[event.step], event)
        if event.type == "workflow_reopened":
            # Steps stopped by the wind-down run again (as their next attempt).
            steps = {
                k: _with(s, {"status": "pending", "ended_at_ms": None})
                if s.status in ("cancelled", "cancelling")
                else s
                for k, s in steps.items()
            }
        changes["steps"] = steps
    if event.type in ("step_succeeded", "step_output_rejected"):
        # A rejected output still means the work was done: it is compensated like any other.
        changes["completed"] = (*state.completed, event.step)
        changes["output_bytes"] = state.output_bytes + int(data.get("output_bytes", 0))
    elif event.type in ("compensation_succeeded", "compensation_skipped"):
        changes["compensated"] = (*state.compensated, event.step)
    cancelled, fired, starts = (
        data.get("cancel_timers"),
        data.get("fired_timer"),
        data.get("start_timers"),
    )
    if cancelled or fired is not None or starts:  # most events touch no timer
        gone = {*(cancelled or ()), *(() if fired is None else (fired,))}
        changes["timers"] = (state.timers - gone) | {timer_id for timer_id, _ in starts or ()}
    raised = data.get("raise_alert")
    if raised is not None or data.get("clear_alerts"):
        alerts = state.alerts - set(data.get("clear_alerts", ()))
        changes["alerts"] = alerts | ({raised["alert_id"]} if raised else set())
    return _with(state, changes)
