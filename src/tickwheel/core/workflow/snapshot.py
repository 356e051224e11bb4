"""An instance's state as JSON data and back: the `state` of its `WorkflowSnapshot` on
`workflows.state`. Pure; `state_from_json(state_to_json(s)) == s` for every state `evolve`
makes (tests/unit/services/orchestrator/test_orchestrator.py)."""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any

from tickwheel.core.workflow.state import StepState, WorkflowState

__all__ = ["SnapshotJson", "state_from_json", "state_to_json"]

# An instance's state as the JSON document its snapshot carries (`WorkflowSnapshot.state`).
SnapshotJson = dict[str, Any]

_STEP_FIELD_NAMES = tuple(f.name for f in fields(StepState))
_STEP_FIELDS = frozenset(_STEP_FIELD_NAMES)
_STEP_VALUES = attrgetter(*_STEP_FIELD_NAMES)


def _step_to_json(step: StepState) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies every output, and outputs are JSON data already
    # (a snapshot per instance per batch made it most of the orchestrator's time); one
    # attrgetter call reads every field at C speed.
    return dict(zip(_STEP_FIELD_NAMES, _STEP_VALUES(step), strict=True))


def state_to_json(state: WorkflowState) -> dict[str, Any]:
    """`state` as a JSON object (sets sorted, so equal states encode equally)."""
    return {
        "workflow_id": state.workflow_id,
        "definition_id": state.definition_id,
        "definition_version": state.definition_version,
        "status": state.status,
        "seq": state.seq,
        "input": state.input,
        "steps": {k: _step_to_json(s) for k, s in state.steps.items()},
        "completed": list(state.completed),
        "compensated": list(state.compensated),
        "ending": state.ending,
        "compensate": state.compensate,
        "output_bytes": state.output_bytes,
        "timers": sorted(state.timers),
        "alerts": sorted(state.alerts),
    }


def state_from_json(data: dict[str, Any]) -> WorkflowState:
    """The inverse of `state_to_json`; `KeyError`/`TypeError` for a document it did not write."""
    steps = {
        k: StepState(**{name: v for name, v in s.items() if name in _STEP_FIELDS})
        for k, s in data["steps"].items()
    }
    return WorkflowState(
        workflow_id=data["workflow_id"],
        definition_id=data["definition_id"],
        definition_version=int(data["definition_version"]),
        status=data["status"],
        seq=int(data["seq"]),
        input=data.get("input"),
        steps=steps,
        completed=tuple(data.get("completed", ())),
        compensated=tuple(data.get("compensated", ())),
        ending=data.get("ending"),
        compensate=bool(data.get("compensate")),
        output_bytes=int(data.get("output_bytes", 0)),
        timers=frozenset(data.get("timers", ())),
        alerts=frozenset(data.get("alerts", ())),
    )
