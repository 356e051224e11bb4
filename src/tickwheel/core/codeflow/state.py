"""A code workflow instance's state as the orchestrator keeps it (decision 0217), and its
snapshot's JSON: the current run's engine history, the task out, the inputs held meanwhile,
what is open (steps, timers) and what has been received. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tickwheel.core.codeflow.history import (
    HistoryEvent,
    events_from_json,
    events_to_json,
)
from tickwheel.core.errors import InvalidPolicy
from tickwheel.core.retry import RetryPolicy
from tickwheel.core.workflow.snapshot import SnapshotJson

__all__ = ["ENDED", "CodeState", "OpenStep", "state_from_json", "state_to_json", "status_of"]

ENDED = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class OpenStep:
    """A step the code scheduled and has no outcome for yet: its history position and name,
    the attempt out now, and its retry policy as the code recorded it."""

    position: int
    name: str
    attempt: int
    max_attempts: int
    base_ms: int
    cap_ms: int

    def policy(self) -> RetryPolicy:
        try:
            return RetryPolicy(self.base_ms, self.cap_ms, self.max_attempts)
        except InvalidPolicy:  # options the SDK validated; a hand-written history may not be
            return RetryPolicy(max_attempts=max(1, self.max_attempts))


@dataclass(frozen=True, slots=True)
class CodeState:
    """One code workflow instance. Status: new → running ⇄ blocked → succeeded | failed |
    cancelled. `history` is run `run`'s engine history; `task` the last task sent (numbered
    across runs, so an answer from an earlier run is never taken for the current one),
    `outstanding` whether it awaits its answer, `sent_length` the history length it carried,
    `base` what the worker's cached run has consumed (0: unknown, the whole history goes).
    `held`: inputs that arrived while the task was out. `steps` (by `name#occurrence`) and
    `timers` (positions) are what is open in the current run; `signals` the signal ids
    received; `task_error` why tasks stopped (a task failed), `parked` why the code parked.
    `parent`: (parent instance, its run, position) of a child, told its end; `children`:
    the current run's open children, by id, with the position their end answers (0218)."""

    workflow_id: str
    definition_id: str
    definition_version: int
    status: str = "new"
    seq: int = 0
    run: int = 1
    history: tuple[HistoryEvent, ...] = ()
    task: int = 0
    outstanding: bool = False
    sent_length: int = 0
    base: int = 0
    held: tuple[HistoryEvent, ...] = ()
    steps: Mapping[str, OpenStep] = field(default_factory=dict)
    timers: frozenset[int] = frozenset()
    signals: frozenset[str] = frozenset()
    alerts: frozenset[str] = frozenset()
    task_failures: int = 0
    task_error: str | None = None
    parked: str | None = None
    result: Any = None
    error: str | None = None
    query: Any = None
    waiting_on: tuple[str, ...] = ()
    parent: tuple[str, int, int] | None = None
    children: Mapping[str, int] = field(default_factory=dict)


def status_of(state: CodeState) -> str:
    """What the state's bookkeeping says its status is (blocked while a task failed or the
    code parked)."""
    if state.status in ENDED or state.status == "new":
        return state.status
    return "blocked" if state.task_error is not None or state.parked is not None else "running"


def state_to_json(state: CodeState) -> SnapshotJson:
    """The state as its snapshot's JSON data."""
    return {
        "workflow_id": state.workflow_id,
        "definition_id": state.definition_id,
        "definition_version": state.definition_version,
        "status": state.status,
        "seq": state.seq,
        "run": state.run,
        "history": events_to_json(state.history),
        "task": state.task,
        "outstanding": state.outstanding,
        "sent_length": state.sent_length,
        "base": state.base,
        "held": events_to_json(state.held),
        "steps": {
            label: {
                "position": st.position,
                "name": st.name,
                "attempt": st.attempt,
                "max_attempts": st.max_attempts,
                "base_ms": st.base_ms,
                "cap_ms": st.cap_ms,
            }
            for label, st in sorted(state.steps.items())
        },
        "timers": sorted(state.timers),
        "signals": sorted(state.signals),
        "alerts": sorted(state.alerts),
        "task_failures": state.task_failures,
        "task_error": state.task_error,
        "parked": state.parked,
        "result": state.result,
        "error": state.error,
        "query": state.query,
        "waiting_on": list(state.waiting_on),
        "parent": None if state.parent is None else list(state.parent),
        "children": dict(sorted(state.children.items())),
    }


def state_from_json(data: SnapshotJson) -> CodeState:
    """The inverse of `state_to_json`."""
    return CodeState(
        workflow_id=str(data["workflow_id"]),
        definition_id=str(data["definition_id"]),
        definition_version=int(data["definition_version"]),
        status=str(data["status"]),
        seq=int(data["seq"]),
        run=int(data["run"]),
        history=tuple(events_from_json(data["history"])),
        task=int(data["task"]),
        outstanding=bool(data["outstanding"]),
        sent_length=int(data["sent_length"]),
        base=int(data["base"]),
        held=tuple(events_from_json(data["held"])),
        steps={label: OpenStep(**st) for label, st in data["steps"].items()},
        timers=frozenset(int(p) for p in data["timers"]),
        signals=frozenset(str(s) for s in data["signals"]),
        alerts=frozenset(str(a) for a in data["alerts"]),
        task_failures=int(data["task_failures"]),
        task_error=data.get("task_error"),
        parked=data.get("parked"),
        result=data.get("result"),
        error=data.get("error"),
        query=data.get("query"),
        waiting_on=tuple(data.get("waiting_on", ())),
        parent=_parent(data.get("parent")),
        children={str(k): int(v) for k, v in (data.get("children") or {}).items()},
    )


def _parent(value: Any) -> tuple[str, int, int] | None:
    if not value:
        return None
    parent_id, run, position = value
    return str(parent_id), int(run), int(position)
