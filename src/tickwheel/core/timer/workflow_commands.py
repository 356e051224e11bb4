"""What a workflow command does to one timer partition, and its workflow timers coming due.

Pure like the scheduler it serves (`PartitionScheduler` calls these): every instant is an
argument. Each command changes its step key's state, which is written in the same
transaction as the requests, cancels and inputs it causes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickwheel.core.timer.workflow_steps import (
    START_PREFIX,
    OneOff,
    cancel_control,
    required,
    required_fire_at,
    step_outcome,
    step_request,
)
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.records import TimerCommand

if TYPE_CHECKING:
    from tickwheel.core.timer.partition import PartitionScheduler


def workflow_command(
    timer: PartitionScheduler, command: TimerCommand, now_ms: int
) -> PartitionWrites:
    """Carry out a run_step, start_timer, cancel_timer or cancel_execution command."""
    emission = PartitionWrites()
    key, kind = command["job_id"], command["kind"]
    if kind == "run_step":
        _run_step(timer, command, now_ms, emission)
    elif kind == "start_timer":
        timer.workflows.add(OneOff(key, required(command, "timer_id"),
                                   required(command, "workflow_id"), required_fire_at(command)))  # fmt: skip
    elif kind == "cancel_timer":
        timer.workflows.remove(key, required(command, "timer_id"))
    else:
        _cancel_execution(timer, command, now_ms, emission)
    emission.states[key] = timer.state_of(key, now_ms)
    return emission


def _run_step(
    timer: PartitionScheduler, command: TimerCommand, now_ms: int, emission: PartitionWrites
) -> None:
    key, execution_id = command["job_id"], required(command, "execution_id")
    attempt = int(command["attempt"])
    flight = timer.executions.in_flight.get(execution_id)
    if flight is not None and flight.attempt >= attempt:
        return  # this attempt (or a later one) is out already: a repeat changes nothing
    if flight is not None:
        timer.executions.drop(execution_id)  # an operator's retry replaces the attempt
    for timer_id in [t for t in timer.workflows.by_key.get(key, ()) if
                     t.startswith(f"{START_PREFIX}{execution_id}:")]:  # fmt: skip
        timer.workflows.remove(key, timer_id)
    request = step_request(command, now_ms, (timer.lease_seconds, timer.heartbeat_seconds))
    not_before = int(command.get("fire_at") or 0)
    if not_before > now_ms:
        timer_id = f"{START_PREFIX}{execution_id}:{attempt}"
        timer.workflows.add(
            OneOff(key, timer_id, request["workflow_id"] or "", not_before, request)
        )
        return
    timer.start_execution(request, emission)


def _cancel_execution(
    timer: PartitionScheduler, command: TimerCommand, now_ms: int, emission: PartitionWrites
) -> None:
    """Stop the attempt, and owe the workflow its verdict: at once for an attempt no worker
    holds, from the worker (cancelled, or what it finished with) for a running one. An attempt
    already over has had its verdict sent: nothing to do."""
    key, execution_id = command["job_id"], required(command, "execution_id")
    attempt = int(command["attempt"])
    delayed = timer.workflows.remove(key, f"{START_PREFIX}{execution_id}:{attempt}")
    if delayed is not None and delayed.request is not None:
        timer.workflows.inputs.append(step_outcome(delayed.request, "cancelled", now_ms))
        return
    flight = timer.executions.in_flight.get(execution_id)
    if flight is None or flight.attempt != attempt:
        return
    control_id = f"wf-cancel:{execution_id}:{attempt}"
    timer.workflows.controls.append(cancel_control(control_id, execution_id, key, now_ms, attempt))
    if flight.state == "queued":
        decision = timer.executions.cancel_queued(execution_id, now_ms)
        emission.extend(timer.apply_decision(decision, now_ms))


def fire_workflow_timers(timer: PartitionScheduler, now_ms: int, emission: PartitionWrites) -> None:
    """Workflow timers due at `now_ms`: a fold timer fires (TimerFired to its workflow), a
    delayed attempt starts. Each is gone from its key's state in the same transaction."""
    for due in timer.workflows.due(now_ms):
        if due.request is not None:
            timer.start_execution({**due.request, "requested_at": now_ms}, emission)
        else:
            timer.workflows.inputs.append(timer.workflows.fired_input(due))
        emission.states[due.key] = timer.state_of(due.key, now_ms)
