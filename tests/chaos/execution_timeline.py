"""The recorded history of executions as the fault tests read it back (`executions.events`,
read_committed), grouped by execution, and judged the way the timer judges it: which outcomes
it accepted, which executions a worker left unfinished."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from tests.integration.timer_harness import execution_events

Event = dict[str, Any]
Timeline = dict[str, list[Event]]


def execution_timeline(bootstrap: str) -> Timeline:
    """execution id → its events, in the order the topic holds them."""
    by_execution: Timeline = defaultdict(list)
    for event in execution_events(bootstrap):
        by_execution[event["execution_id"]].append(event)
    return by_execution


def accepted_outcomes(events: list[Event]) -> list[Event]:
    """Outcomes that end an execution and that the owner did not fence (a `failed` event
    only ends an attempt: the timer writes one on lease expiry and retries)."""
    fenced = {
        e["details"] and json.loads(e["details"])["fenced_event_id"]
        for e in events
        if e["event_type"] == "fenced"
    }
    return [
        e for e in events
        if e["event_type"] in ("succeeded", "cancelled") and e["event_id"] not in fenced
    ]  # fmt: skip


def of_process(name: str) -> Callable[[str], bool]:
    """Matches the worker ids of every incarnation of the process named `name`
    (`name@host:pid`)."""
    return lambda worker_id: worker_id.startswith(f"{name}@")


def of_incarnation(worker_id: str) -> Callable[[str], bool]:
    """Matches one incarnation's worker id, and no later one's under the same name."""
    return lambda other: other == worker_id


def in_flight(timeline: Timeline, by_worker: Callable[[str], bool]) -> set[str]:
    """Executions a worker (`by_worker(worker_id)` true: `of_process`, `of_incarnation`)
    leased and reported no outcome for."""
    return {
        execution
        for execution, events in timeline.items()
        if any(e["event_type"] == "leased" and by_worker(e["worker_id"]) for e in events)
        and not any(
            e["event_type"] in ("succeeded", "failed", "cancelled") and by_worker(e["worker_id"])
            for e in events
        )
    }


def finished_by(timeline: Timeline, by_worker: Callable[[str], bool]) -> set[str]:
    """Executions whose accepted outcome a worker (`by_worker(worker_id)` true) reported."""
    return {
        execution for execution, events in timeline.items()
        if any(by_worker(e["worker_id"]) for e in accepted_outcomes(events))
    }  # fmt: skip


def all_finished(bootstrap: str, executions: int) -> bool:
    """True once `executions` executions are recorded and each has an accepted outcome."""
    timeline = execution_timeline(bootstrap)
    return len(timeline) >= executions and all(
        accepted_outcomes(events) for events in timeline.values()
    )


def not_accepted_once(timeline: Timeline) -> dict[str, list[tuple[str, int, str]]]:
    """Executions with no accepted outcome or more than one: (event type, attempt, worker) of
    each accepted outcome. Empty when none was lost and none accepted twice."""
    return {
        execution: [(e["event_type"], e["attempt"], e["worker_id"]) for e in accepted]
        for execution, events in timeline.items()
        if len(accepted := accepted_outcomes(events)) != 1
    }
