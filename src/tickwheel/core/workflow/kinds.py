"""Workflow kinds: what the orchestrator folds an instance through (decision 0212).

The orchestrator knows an instance only through its kind: the kind makes the first state from
the definition, decides what an input means as events (with the state after each one and the
status it leaves), names the commands each event asks of the other services (steps to run,
timers to start, alerts), says how many attempts a step may take, and writes its state to a
snapshot and reads it back. Events, commands and inputs are one vocabulary for every kind: the
timer, the worker and the history see no difference.

The DAG interpreter (`fold`, `state`, `events`, `snapshot`) is the first kind. The second —
workflows written as code (issue 33, `core.codeflow.kind`, decision 0217) — is a new entry in
`KINDS`, with its own definition and state types; the orchestrator's loop, its records and
its callers do not change.
"""

from __future__ import annotations

from typing import Any, Protocol

from tickwheel.core.codeflow.definition import (
    CODE_KIND,
    CodeWorkflowDefinition,
    parse_code_definition,
)
from tickwheel.core.codeflow.kind import CodeKind
from tickwheel.core.workflow.deciding import Decided
from tickwheel.core.workflow.definition import WorkflowDefinition, parse_definition
from tickwheel.core.workflow.events import Command, Event, effects
from tickwheel.core.workflow.fold import decide_folded
from tickwheel.core.workflow.inputs import Input
from tickwheel.core.workflow.snapshot import SnapshotJson, state_from_json, state_to_json
from tickwheel.core.workflow.state import WorkflowState, initial_state

__all__ = [
    "CODE",
    "DAG",
    "KINDS",
    "InstanceState",
    "WorkflowKind",
    "kind_named",
    "kind_of",
    "kind_of_state",
    "parse_workflow_definition",
    "state_from_snapshot",
    "state_to_snapshot",
]


class InstanceState(Protocol):
    """What every kind's state tells the orchestrator and the records it writes."""

    @property
    def workflow_id(self) -> str: ...
    @property
    def definition_id(self) -> str: ...
    @property
    def definition_version(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def seq(self) -> int: ...


class WorkflowKind(Protocol):
    """One way of writing workflows, as the orchestrator folds it."""

    name: str

    def owns(self, definition: object) -> bool:
        """Whether `definition` (as the catalogue parsed it) is of this kind."""
        ...

    def owns_state(self, state: object) -> bool:
        """Whether `state` is an instance state of this kind."""
        ...

    def initial(self, workflow_id: str, definition: Any) -> Any:
        """The state of an instance before its start."""
        ...

    def decide(self, state: Any, definition: Any, item: Input) -> Decided:
        """What `item` means for the instance (at least one event: an input is recorded)."""
        ...

    def effects(self, event: Event) -> list[Command]:
        """What `event` asks of the other services."""
        ...

    def max_attempts(self, definition: Any, step: str, compensation: bool) -> int:
        """How many attempts the timer may hand out for a step (or its compensation)."""
        ...

    def to_json(self, state: Any) -> SnapshotJson:
        """The state as JSON data for its snapshot."""
        ...

    def from_json(self, data: SnapshotJson) -> Any:
        """The inverse of `to_json`."""
        ...


class DagKind:
    """Workflows written as a DAG of steps in JSON (docs/workflows.md, decision 0059)."""

    name = "dag"

    def owns(self, definition: object) -> bool:
        return isinstance(definition, WorkflowDefinition)

    def owns_state(self, state: object) -> bool:
        return isinstance(state, WorkflowState)

    def initial(self, workflow_id: str, definition: WorkflowDefinition) -> WorkflowState:
        return initial_state(workflow_id, definition)

    def decide(self, state: WorkflowState, definition: WorkflowDefinition, item: Input) -> Decided:
        return Decided(*decide_folded(state, definition, item))

    def effects(self, event: Event) -> list[Command]:
        return effects(event)

    def max_attempts(self, definition: WorkflowDefinition, step: str, compensation: bool) -> int:
        spec = definition.step(step)
        task = None if spec is None else (spec.compensation if compensation else spec.task)
        return 1 if task is None else int(task.retry.max_attempts)

    def to_json(self, state: WorkflowState) -> SnapshotJson:
        return state_to_json(state)

    def from_json(self, data: SnapshotJson) -> WorkflowState:
        return state_from_json(data)


DAG = DagKind()
# Workflows written as code (decision 0217): histories and tasks; the code runs in workers.
CODE = CodeKind()
# Every kind the orchestrator folds, by the name a snapshot records (`kind`; none: "dag").
KINDS: dict[str, WorkflowKind] = {DAG.name: DAG, CODE.name: CODE}


def kind_named(name: str | None) -> WorkflowKind:
    """The kind a snapshot names (a snapshot written before kinds existed names none: a DAG)."""
    kind = KINDS.get(name or DAG.name)
    if kind is None:
        # In registration order: the default (dag) first.
        raise ValueError(f"workflow kind {name!r} is unknown; accepted: {', '.join(KINDS)}")
    return kind


def kind_of(definition: object) -> WorkflowKind:
    """The kind of a parsed definition."""
    for kind in KINDS.values():
        if kind.owns(definition):
            return kind
    raise ValueError(f"no workflow kind owns a {type(definition).__name__}")


def parse_workflow_definition(body: object) -> WorkflowDefinition | CodeWorkflowDefinition:
    """A published definition body, checked by its kind: `"kind": "code"` is a workflow
    written as code (decision 0217), anything else a DAG. Every reader of the definitions
    topic parses through here."""
    if isinstance(body, dict) and body.get("kind") == CODE_KIND:
        return parse_code_definition(body)
    return parse_definition(body)


def kind_of_state(state: object) -> WorkflowKind:
    """The kind of an instance state."""
    for kind in KINDS.values():
        if kind.owns_state(state):
            return kind
    raise ValueError(f"no workflow kind owns a {type(state).__name__}")


def state_to_snapshot(state: object) -> SnapshotJson:
    """The JSON data of an instance's snapshot, naming its kind unless it is a DAG (the
    snapshots written before kinds existed name none)."""
    kind = kind_of_state(state)
    data = kind.to_json(state)
    if kind is not DAG:
        data["kind"] = kind.name
    return data


def state_from_snapshot(data: SnapshotJson) -> InstanceState:
    """The instance state of a snapshot's JSON data, read by the kind it names."""
    state: InstanceState = kind_named(data.get("kind")).from_json(data)
    return state
