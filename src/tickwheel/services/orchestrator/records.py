"""The orchestrator's records, as dicts, pure: the fold's events and commands in the shapes of
the topics they go to (docs/decisions/0061), and its snapshots and checkpoint.

| fold output | record | topic, key |
| --- | --- | --- |
| `Event` | `WorkflowEvent` v2 (`event_id` = `wf:<workflow_id>:<seq>`) | workflows.events, workflow_id |
| `ScheduleStep`, `ScheduleCompensation` | `TimerCommand` run_step | timers.commands, step key |
| `StartTimer`, `CancelTimer` | `TimerCommand` start_timer, cancel_timer | timers.commands, step key |
| `CancelExecution` | `TimerCommand` cancel_execution (the timer stops it and answers) | timers.commands, step key |
| `RaiseAlert`, `ClearAlert` | `Alert` (details.state firing / resolved) | alerts, alert_id |
| `SendInput` | `WorkflowInput` (a child's start, its end, a cancel) | workflows.inputs, workflow_id |
| `OpenApproval` | nothing more: `approval_requested` is the event the notifier reads | |

Command ids are deterministic (the workflow, the command, the step or timer, the attempt or
the event's seq): a batch retried after a crash writes the same ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tickwheel.adapters.kafka.placement import PARTITION_KEY_PREFIX
from tickwheel.core.watchdog import plain_alert
from tickwheel.core.workflow import (
    CancelExecution,
    CancelTimer,
    ClearAlert,
    Command,
    Event,
    RaiseAlert,
    ScheduleCompensation,
    ScheduleStep,
    StartTimer,
)
from tickwheel.core.workflow.events import SendInput
from tickwheel.core.workflow.kinds import (
    InstanceState,
    kind_of,
    state_from_snapshot,
    state_to_snapshot,
)
from tickwheel.core.workflow.wire import input_record
from tickwheel.records import (
    Alert,
    TimerCommand,
    TimerCommandKind,
    WorkflowEvent,
    WorkflowInput,
    WorkflowSnapshot,
)

CHECKPOINT_PREFIX = PARTITION_KEY_PREFIX
# Built once: json.dumps with keyword arguments builds an encoder per call, and every event,
# command and snapshot of a batch is encoded (the same text as json.dumps would write).
_EVENT_DATA_JSON = json.JSONEncoder(separators=(",", ":"), default=str).encode
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode


def checkpoint_key(partition: int) -> str:
    return f"{CHECKPOINT_PREFIX}{partition}"


def event_record(
    state: InstanceState,
    event: Event,
    input_id: str,
    tenant_id: str | None,
    *,
    status: str | None = None,
) -> WorkflowEvent:
    """`event` of instance `state` as a `WorkflowEvent` v2; `status` is the instance's status
    right after the event (default: `state`'s)."""
    data = event.data
    execution = data.get("execution_id")
    if execution is None and isinstance(data.get("cancel_execution"), dict):
        execution = data["cancel_execution"].get("execution_id")
    error = data.get("error")
    return {
        "event_id": f"wf:{state.workflow_id}:{event.seq}",
        "event_time": event.at_ms,
        "workflow_id": state.workflow_id,
        "definition_id": state.definition_id,
        "definition_version": state.definition_version,
        "event_type": event.type,
        "step_id": event.step,
        "attempt": event.attempt,
        "data": _EVENT_DATA_JSON(data),
        "seq": event.seq,
        "actor": event.actor,
        "tenant_id": tenant_id,
        "execution_id": execution,
        "error": None if error is None else str(error),
        "cause_input_id": input_id,
        "status": status or state.status,
    }


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One record to write: its declared topic (without the prefix), key, record name, value."""

    topic: str
    key: str
    record: str
    value: TimerCommand | Alert | WorkflowInput


def command_records(
    state: InstanceState,
    definition: object,
    command: Command,
    event: Event,
    key: str,
    tenant_id: str | None,
) -> list[Outgoing]:
    """What `command` (an effect of `event`) is on the wire."""
    wid, at = state.workflow_id, event.at_ms
    if isinstance(command, ScheduleStep | ScheduleCompensation):
        comp = isinstance(command, ScheduleCompensation)
        value = timer_command(
            key,
            at,
            wid,
            f"wf:{wid}:run:{command.execution_id}:{command.attempt}",
            "run_step",
            execution_id=command.execution_id,
            step_id=command.step,
            attempt=command.attempt,
            compensation=comp,
            job_type=command.job_type,
            payload=json.dumps(command.payload),
            tenant_id=tenant_id,
            fire_at=command.not_before_ms,
            max_attempts=kind_of(definition).max_attempts(definition, command.step, comp),
        )
        return [Outgoing("timers.commands", key, "TimerCommand", value)]
    if isinstance(command, StartTimer | CancelTimer):
        kind: TimerCommandKind = (
            "start_timer" if isinstance(command, StartTimer) else "cancel_timer"
        )
        value = timer_command(
            key,
            at,
            wid,
            f"wf:{wid}:{kind}:{command.timer_id}:{event.seq}",
            kind,
            timer_id=command.timer_id,
            fire_at=command.fire_at_ms if isinstance(command, StartTimer) else None,
        )
        return [Outgoing("timers.commands", key, "TimerCommand", value)]
    if isinstance(command, CancelExecution):
        value = timer_command(
            key,
            at,
            wid,
            f"wf:{wid}:cancel:{command.execution_id}:{command.attempt}",
            "cancel_execution",
            execution_id=command.execution_id,
            step_id=command.step,
            attempt=command.attempt,
        )
        return [Outgoing("timers.commands", key, "TimerCommand", value)]
    if isinstance(command, RaiseAlert | ClearAlert):
        firing = isinstance(command, RaiseAlert)
        details = {
            "state": "firing" if firing else "resolved",
            "workflow_id": wid,
            "fingerprint": command.alert_id,
            "seq": event.seq,
        }
        if isinstance(command, RaiseAlert):
            details["step_id"] = command.step
        alert = plain_alert(
            f"{command.alert_id}:{event.seq}",
            at,
            command.kind if isinstance(command, RaiseAlert) else "workflow_alert",
            "warning",
            command.message if isinstance(command, RaiseAlert) else f"resolved: {command.alert_id}",
            tenant_id=tenant_id,
            details=json.dumps(details),
        )
        return [Outgoing("alerts", alert["alert_id"], "Alert", alert)]
    if isinstance(command, SendInput):
        return [input_outgoing(command)]
    return []  # OpenApproval: the approval_requested event is the notice


def input_outgoing(command: SendInput) -> Outgoing:
    """An input for another instance (a child's start or end, a cancel) on workflows.inputs."""
    sent = input_record(
        command.workflow_id, command.item, command.input_id, definition_id=command.definition_id
    )
    return Outgoing("workflows.inputs", command.workflow_id, "WorkflowInput", sent)


def timer_command(
    key: str,
    at: int,
    workflow_id: str,
    command_id: str,
    kind: TimerCommandKind,
    *,
    execution_id: str | None = None,
    step_id: str | None = None,
    attempt: int = 0,
    compensation: bool = False,
    job_type: str | None = None,
    payload: str | None = None,
    tenant_id: str | None = None,
    max_attempts: int = 1,
    timer_id: str | None = None,
    fire_at: int | None = None,
) -> TimerCommand:
    """A workflow's `TimerCommand` (key: its step key); the keyword defaults are the schema's,
    so a command names only what its kind carries."""
    return {
        "command_id": command_id,
        "job_id": key,
        "kind": kind,
        "requested_at": at,
        "range_start": None,
        "range_end": None,
        "execution_id": execution_id,
        "data": None,
        "workflow_id": workflow_id,
        "step_id": step_id,
        "attempt": attempt,
        "compensation": compensation,
        "job_type": job_type,
        "payload": payload,
        "tenant_id": tenant_id,
        "max_attempts": max_attempts,
        "timer_id": timer_id,
        "fire_at": fire_at,
    }


def snapshot_record(state: InstanceState, now_ms: int) -> WorkflowSnapshot:
    return {
        "workflow_id": state.workflow_id,
        "definition_id": state.definition_id,
        "definition_version": state.definition_version,
        "status": state.status,
        "seq": state.seq,
        "state": _COMPACT_JSON(state_to_snapshot(state)),
        "updated_at": now_ms,
        "input_offsets": {},
    }


def state_of_snapshot(state_text: str) -> InstanceState:
    """The instance state a `WorkflowSnapshot` carries as JSON text (its `state`)."""
    return state_from_snapshot(json.loads(state_text))


def checkpoint_record(partition: int, offsets: dict[str, int], now_ms: int) -> WorkflowSnapshot:
    return {
        "workflow_id": checkpoint_key(partition),
        "definition_id": "",
        "definition_version": 0,
        "status": "checkpoint",
        "seq": 0,
        "state": None,
        "updated_at": now_ms,
        "input_offsets": offsets,
    }
