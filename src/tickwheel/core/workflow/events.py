"""What the fold records (events) and what it asks the services to do (commands).

An `Event` is one row of an instance's durable history (the `WorkflowEvent` record, with
`seq` as its per-instance counter). Its `data` holds everything `evolve` and `effects` need,
so both are functions of the event alone: a restore that re-folds the history reproduces
the state and, if asked, the very same commands with the very same ids.

Side effects are carried in `data` under fixed keys, the same for every event type:
`cancel_execution` ({step, execution_id, attempt}), `cancel_timers` ([id]), `clear_alerts`
([id]), `start_timers` ([[id, fire_at_ms]]), `raise_alert` ({alert_id, step, kind,
message}) and `send_inputs` (inputs for other instances, `sent_inputs`). `effects` turns those into commands, after the one command an event type may
stand for itself (`step_scheduled` → `ScheduleStep`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tickwheel.core.workflow.inputs import (
    ChildEnded,
    Input,
    StartChild,
    input_from_json,
    input_to_json,
)

__all__ = [
    "CancelExecution",
    "CancelTimer",
    "ClearAlert",
    "Command",
    "Event",
    "OpenApproval",
    "RaiseAlert",
    "ScheduleCompensation",
    "ScheduleStep",
    "SendInput",
    "StartTimer",
    "child_start_refused",
    "command_to_json",
    "effects",
    "send_input_entry",
    "sent_inputs",
]


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded event; `type` is past tense (`step_succeeded`), `actor` set for operator
    and approver inputs. `data` is JSON-able."""

    seq: int
    type: str
    at_ms: int
    step: str | None = None
    attempt: int = 0
    actor: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class ScheduleStep:
    """Run attempt `attempt` of a task step as execution `execution_id`, not before
    `not_before_ms` (the backoff, without jitter: the timer adds its own)."""

    step: str
    attempt: int
    execution_id: str
    job_type: str
    payload: dict[str, Any]
    not_before_ms: int


@dataclass(frozen=True, slots=True)
class ScheduleCompensation:
    """Run attempt `attempt` of the compensation of `step` (its own execution id)."""

    step: str
    attempt: int
    execution_id: str
    job_type: str
    payload: dict[str, Any]
    not_before_ms: int


@dataclass(frozen=True, slots=True)
class StartTimer:
    timer_id: str
    fire_at_ms: int


@dataclass(frozen=True, slots=True)
class CancelTimer:
    timer_id: str


@dataclass(frozen=True, slots=True)
class CancelExecution:
    """Stop attempt `attempt` of `execution_id`; the timer answers with an outcome input."""

    step: str
    execution_id: str
    attempt: int


@dataclass(frozen=True, slots=True)
class OpenApproval:
    """Send approval round `round` of `step` to `assignees` (the notifier signs the token)."""

    step: str
    round: int
    assignees: tuple[str, ...]
    expires_at_ms: int | None


@dataclass(frozen=True, slots=True)
class RaiseAlert:
    alert_id: str
    step: str
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class ClearAlert:
    alert_id: str


@dataclass(frozen=True, slots=True)
class SendInput:
    """Tell another instance, `workflow_id`, `item` as input `input_id` on workflows.inputs:
    a child's start (with its `definition_id`), a parent its child's end, a child its
    parent's cancel (decision 0218). The id is deterministic: a retried batch sends it again,
    and the receiver's fold counts it once."""

    workflow_id: str
    input_id: str
    item: Input
    definition_id: str | None = None


Command = (
    ScheduleStep
    | ScheduleCompensation
    | StartTimer
    | CancelTimer
    | CancelExecution
    | OpenApproval
    | RaiseAlert
    | ClearAlert
    | SendInput
)
_COMMAND_KINDS = {
    ScheduleStep: "schedule_step",
    ScheduleCompensation: "schedule_compensation",
    StartTimer: "start_timer",
    CancelTimer: "cancel_timer",
    CancelExecution: "cancel_execution",
    OpenApproval: "open_approval",
    RaiseAlert: "raise_alert",
    ClearAlert: "clear_alert",
    SendInput: "send_input",
}


def command_to_json(command: Command) -> dict[str, Any]:
    out = {"command": _COMMAND_KINDS[type(command)], **asdict(command)}
    if isinstance(command, OpenApproval):
        out["assignees"] = list(command.assignees)
    if isinstance(command, SendInput):
        out["item"] = input_to_json(command.item)
    return out


def _own_command(event: Event) -> list[Command]:
    data, step = event.data, event.step or ""
    if event.type in ("step_scheduled", "compensation_scheduled"):
        cls = ScheduleStep if event.type == "step_scheduled" else ScheduleCompensation
        return [
            cls(
                step,
                event.attempt,
                data["execution_id"],
                data["job_type"],
                data["payload"],
                data["not_before_ms"],
            )
        ]
    if event.type == "approval_requested":
        return [
            OpenApproval(
                step, data["round"], tuple(data.get("assignees", ())), data.get("expires_at_ms")
            )
        ]
    return []


def effects(event: Event) -> list[Command]:
    """The commands `event` stands for, in the order the services should apply them:
    stop what ended, then start what began."""
    data = event.data
    commands: list[Command] = []
    cancel = data.get("cancel_execution")
    if cancel is not None:
        commands.append(CancelExecution(cancel["step"], cancel["execution_id"], cancel["attempt"]))
    commands.extend(CancelTimer(timer_id) for timer_id in data.get("cancel_timers", ()))
    commands.extend(ClearAlert(alert) for alert in data.get("clear_alerts", ()))
    commands.extend(_own_command(event))
    commands.extend(StartTimer(timer_id, at) for timer_id, at in data.get("start_timers", ()))
    alert = data.get("raise_alert")
    if alert is not None:
        commands.append(
            RaiseAlert(alert["alert_id"], alert["step"], alert["kind"], alert["message"])
        )
    commands.extend(sent_inputs(data))
    return commands


def send_input_entry(command: SendInput) -> dict[str, object]:
    """`command` as an entry of an event's `send_inputs` (the inverse of `sent_inputs`)."""
    entry: dict[str, object] = {
        "workflow_id": command.workflow_id,
        "input_id": command.input_id,
        "input": input_to_json(command.item),
    }
    if command.definition_id is not None:
        entry["definition_id"] = command.definition_id
    return entry


def child_start_refused(
    child_id: str, start: StartChild, at_ms: int, why: str, error: str
) -> SendInput:
    """Tell the parent of `start` that its child `child_id` failed at once (`why`: the id is
    taken, the child is a DAG, the start could not be folded): no wait is left without an
    answer (decision 0218). The id names the parent's run and position, so it is the same
    when a batch is retried and differs between two runs' starts."""
    ended = ChildEnded(at_ms, child_id, start.position, "failed", error=error, run=start.run)
    input_id = f"wf:{child_id}:{why}:{start.parent_id}:{start.run}:{start.position}"
    return SendInput(start.parent_id, input_id, ended)


def sent_inputs(data: Mapping[str, Any]) -> list[SendInput]:
    """The `send_inputs` of an event's data (`[{workflow_id, input_id, input, definition_id?}]`,
    the input as `input_to_json` writes it) as commands."""
    return [
        SendInput(
            send["workflow_id"],
            send["input_id"],
            input_from_json(send["input"]),
            send.get("definition_id"),
        )
        for send in data.get("send_inputs", ())
    ]
