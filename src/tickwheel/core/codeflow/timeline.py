"""What a code workflow's recorded events say about its steps, sleeps and signal waits, for
people (`workflows get`, `GET /executions/{id}`, the console): one entry per step as it ran,
per sleep and per wait, with its status and, while it waits, its deadline. Pure: a read of the
`workflows.events` records of one instance (decision 0217: each event's `data` is the engine's
history event as JSON)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tickwheel.core.codeflow.history import JsonObject

__all__ = ["code_steps"]

_RUN_ENDINGS = frozenset(
    {"workflow_completed", "workflow_failed", "workflow_cancelled", "continued_as_new"}
)


def code_steps(events: Iterable[Mapping[str, Any]]) -> dict[str, JsonObject]:
    """`{label: entry}` in the order the run issued them. A step's label is its
    `name#occurrence` (a rollback's too, marked `compensation`); a sleep's `sleep@<position>`;
    a signal wait's `signal:<name>@<position>`; a child's `child:<its workflow id>`. Events of an earlier run (continue-as-new)
    are replaced by the later run's."""
    steps: dict[str, JsonObject] = {}
    by_position: dict[int, str] = {}
    run = None
    for event in events:
        data = event.get("data") or {}
        kind, at, position = event["event_type"], event["event_time"], data.get("position")
        if kind == "workflow_started":
            if run is not None and data.get("run") != run:
                steps.clear()
                by_position.clear()
            run = data.get("run")
        if kind == "step_scheduled" and event.get("step_id"):
            label = str(event["step_id"])
            entry = steps.setdefault(
                label,
                {
                    "kind": "compensation" if data.get("compensation") else "step",
                    "status": "running",
                    "attempt": 1,
                    "startedAt": at,
                    "endedAt": None,
                    "output": None,
                },
            )
            entry["attempt"] = max(int(event.get("attempt") or 1), int(entry["attempt"]))
        elif kind in ("timer_started", "signal_wait_started") and position is not None:
            sleep = kind == "timer_started"
            label = f"sleep@{position}" if sleep else f"signal:{data.get('name')}@{position}"
            steps[label] = {
                "kind": "sleep" if sleep else "signal",
                "status": "waiting",
                "attempt": None,
                "startedAt": at,
                "endedAt": None,
                "deadline": data.get("fire_at_ms"),
                "output": None,
                "name": data.get("name"),
            }
        elif kind == "child_started" and position is not None:
            label = f"child:{data.get('child_id')}"
            steps[label] = {
                "kind": "child",
                "status": "running",
                "attempt": None,
                "startedAt": at,
                "endedAt": None,
                "output": None,
                "name": data.get("name"),
            }
        elif kind in _RUN_ENDINGS:
            # A run's end cancels the children it left running (decision 0218).
            for entry in steps.values():
                if entry["kind"] == "child" and entry["status"] == "running":
                    entry.update(status="cancelled", endedAt=at)
        elif kind == "signal_received":
            # A signal answers the oldest wait for its name; one sent before any wait is
            # buffered by the run, and shows when a wait takes it (its start is its end).
            name = data.get("name")
            waiting = next(
                (
                    e
                    for e in steps.values()
                    if e["kind"] == "signal" and e["status"] == "waiting" and e["name"] == name
                ),
                None,
            )
            if waiting is not None:
                waiting.update(status="succeeded", endedAt=at, output=data.get("payload"))
            else:
                steps[f"signal:{name}#{event['seq']}"] = {
                    "kind": "signal",
                    "status": "received",  # before any wait: the run holds it for one
                    "attempt": None,
                    "startedAt": at,
                    "endedAt": at,
                    "output": data.get("payload"),
                    "name": name,
                }
        else:
            answered = _label_of(event, position, by_position)
            ended = steps.get(answered) if answered else None
            if ended is not None:
                _ended(ended, kind, data, at)
        if position is not None and kind in (
            "step_scheduled",
            "timer_started",
            "signal_wait_started",
            "child_started",
        ):
            by_position[int(position)] = label
    return steps


def _label_of(
    event: Mapping[str, Any], position: Any, by_position: Mapping[int, str]
) -> str | None:
    if event.get("step_id"):
        return str(event["step_id"])
    return None if position is None else by_position.get(int(position))


def _ended(entry: JsonObject, kind: str, data: Mapping[str, Any], at: int) -> None:
    if kind == "step_completed":
        entry.update(status="succeeded", endedAt=at, output=data.get("result"))
    elif kind == "step_failed":
        entry.update(status="failed", endedAt=at, output={"error": data.get("error")})
    elif kind == "child_completed":
        entry.update(status="succeeded", endedAt=at, output=data.get("result"))
    elif kind == "child_failed":
        entry.update(status="failed", endedAt=at, output={"error": data.get("error")})
    elif kind == "timer_fired":
        timed_out = entry["kind"] == "signal"
        entry.update(status="timed_out" if timed_out else "succeeded", endedAt=at)
