"""The timer's side of workflows, pure: what a workflow command asks of a partition, the
one-off timers it holds for workflows (sleeps, step deadlines, approval timeouts, delayed
attempts), and the inputs it owes the orchestrator (docs/decisions/0061).

A workflow's step executions are executions like a job's (`ExecutionTracker`: lease,
heartbeat, fencing, dead letter) under a *step key* `__wf/...` as their `job_id` (reserved,
so no job can have it), whose partition is the workflow's own. Retries are the fold's to
decide: the timer runs exactly the attempt it is told to, and tells the orchestrator the one
outcome it accepted for it, in the transaction that accepted it. The timers and delayed
attempts live in the step key's `TimerState` as `workflow_sleep` entries, so a new owner
restores them and fires each once.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any

from tickwheel.core.workflow.ids import step_execution_id
from tickwheel.core.workflow.inputs import (
    Input,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
)
from tickwheel.core.workflow.wire import fired_input_id, input_record, outcome_input_id
from tickwheel.records import (
    ExecutionControl,
    ExecutionEvent,
    ExecutionRequest,
    TimerCommand,
    WorkflowInput,
)

WORKFLOW_KINDS = ("run_step", "start_timer", "cancel_timer", "cancel_execution")
TIMER_KIND = "workflow_sleep"
# A delayed attempt waits as a timer of this prefix (never a fold timer id: those have none).
START_PREFIX = "start:"


def is_workflow_command(command: TimerCommand) -> bool:
    return command.get("kind") in WORKFLOW_KINDS


def is_step(request: ExecutionRequest) -> bool:
    return request.get("workflow_id") is not None and request.get("step_id") is not None


def step_request(command: TimerCommand, now_ms: int, terms: tuple[int, int]) -> ExecutionRequest:
    """The `ExecutionRequest` of the attempt a `run_step` command asks for."""
    attempt = int(command["attempt"])
    # A run_step command names its execution, type, workflow and step (the orchestrator
    # always sets them; a command without one is refused where it is read, as a KeyError).
    execution_id, job_type = required(command, "execution_id"), required(command, "job_type")
    return {
        "execution_id": execution_id,
        "job_id": command["job_id"],
        "job_version": 0,
        "job_type": job_type,
        "tenant_id": command.get("tenant_id") or "default",
        "priority": "normal",
        "attempt": attempt,
        "scheduled_time": now_ms,
        "fire_time": now_ms,
        "period_start": now_ms,
        "period_end": None,
        "payload": command.get("payload") or "{}",
        "max_attempts": max(1, int(command.get("max_attempts") or 1)),
        "trigger": "scheduled" if attempt == 1 else "retry",
        "late": False,
        "requested_at": now_ms,
        "lease_seconds": terms[0],
        "heartbeat_seconds": terms[1],
        "max_run_seconds": None,
        "queue": None,
        "workflow_id": required(command, "workflow_id"),
        "step_id": required(command, "step_id"),
    }


def required(command: TimerCommand, field: str) -> str:
    """A text field a workflow command must carry (null in the record when its sender left it
    out): its absence refuses the command, which is dead-lettered with the field's name."""
    value = command.get(field)
    if not isinstance(value, str):
        raise KeyError(field)
    return value


def required_fire_at(command: TimerCommand) -> int:
    """The instant a start_timer command must carry (refused without one, as `required`)."""
    fire_at = command["fire_at"]
    if fire_at is None:
        raise KeyError("fire_at")
    return int(fire_at)


def _is_compensation(request: ExecutionRequest) -> bool:
    wf, step = request["workflow_id"], request["step_id"]
    if wf is None or step is None:
        return False
    return bool(request["execution_id"] == step_execution_id(wf, step, compensation=True))


def step_outcome(
    request: ExecutionRequest,
    kind: str,
    now_ms: int,
    *,
    event: ExecutionEvent | None = None,
    error: str | None = None,
    permanent: bool = False,
) -> WorkflowInput:
    """The `WorkflowInput` telling the workflow what its attempt came to (`kind`: succeeded,
    failed, cancelled); a success carries the handler's result as the step's output."""
    step, workflow_id = request["step_id"], request["workflow_id"]
    if step is None or workflow_id is None:
        raise ValueError(f"{request['execution_id']} is not a workflow step's execution")
    attempt = int(request["attempt"])
    comp = _is_compensation(request)
    item: Input
    if kind == "succeeded":
        text = event["details"] if event is not None else None
        details: Any = json.loads(text) if text else {}
        output = details.get("result") if isinstance(details, dict) else None
        item = StepSucceeded(now_ms, step, attempt, output=output, compensation=comp)
    elif kind == "cancelled":
        item = StepCancelled(now_ms, step, attempt, compensation=comp)
    else:
        item = StepFailed(
            now_ms, step, attempt, error=error or "", permanent=permanent, compensation=comp
        )
    input_id = outcome_input_id(kind, request["execution_id"], attempt)
    return input_record(workflow_id, item, input_id)


def cancel_control(
    control_id: str, execution_id: str, key: str, now_ms: int, attempt: int
) -> ExecutionControl:
    """The `ExecutionControl` that tells the worker holding the attempt to stop (the same
    record the SDK's `cancel` publishes; its id names the attempt, so a repeat is one). It
    reaches that attempt and earlier ones only: a step retried after it runs as a later
    attempt under the same execution id, which this cancel must not stop."""
    return {
        "control_id": control_id,
        "execution_id": execution_id,
        "job_id": key,
        "kind": "cancel",
        "requested_at": now_ms,
        "reason": "workflow",
        "attempt": attempt,
    }


@dataclass(slots=True)
class OneOff:
    """A workflow's one-off timer; `request` set for a delayed attempt (started, not fired)."""

    key: str
    timer_id: str
    workflow_id: str
    fire_at: int
    request: ExecutionRequest | None = None


class WorkflowTimers:
    """One partition's workflow timers, earliest first, and what it owes the next transaction:
    `inputs` (for workflows.inputs) and `controls` (cancels, for executions.control)."""

    def __init__(self) -> None:
        self.timers: dict[tuple[str, str], OneOff] = {}
        self.by_key: dict[str, set[str]] = {}
        self._heap: list[tuple[int, str, str]] = []
        self.inputs: list[WorkflowInput] = []
        self.controls: list[ExecutionControl] = []

    def __len__(self) -> int:
        return len(self.timers)

    def add(self, timer: OneOff) -> None:
        """Hold `timer` (a repeat of one held already replaces it: ids are deterministic)."""
        self.timers[(timer.key, timer.timer_id)] = timer
        self.by_key.setdefault(timer.key, set()).add(timer.timer_id)
        heapq.heappush(self._heap, (timer.fire_at, timer.key, timer.timer_id))

    def remove(self, key: str, timer_id: str) -> OneOff | None:
        timer = self.timers.pop((key, timer_id), None)
        ids = self.by_key.get(key)
        if ids is not None:
            ids.discard(timer_id)
            if not ids:
                del self.by_key[key]
        return timer  # its heap entry passes by when it comes due

    def delay(self, key: str, request: ExecutionRequest, not_before: int) -> None:
        """Hold a step's attempt `request` until `not_before` (a delayed attempt: started, not
        fired, when it comes due)."""
        timer_id = f"{START_PREFIX}{request['execution_id']}:{request['attempt']}"
        self.add(OneOff(key, timer_id, request["workflow_id"] or "", not_before, request))

    def remove_delayed(self, key: str, execution_id: str, attempt: int) -> OneOff | None:
        """Take out the delayed attempt `attempt` of `execution_id`, if one waits."""
        return self.remove(key, f"{START_PREFIX}{execution_id}:{attempt}")

    def remove_all_delayed(self, key: str, execution_id: str) -> None:
        """Take out every delayed attempt of `execution_id` (a newer attempt replaces them)."""
        prefix = f"{START_PREFIX}{execution_id}:"
        for timer_id in [t for t in self.by_key.get(key, ()) if t.startswith(prefix)]:
            self.remove(key, timer_id)

    def due(self, now_ms: int) -> list[OneOff]:
        """Timers due at `now_ms`, taken out (the caller fires or starts each once)."""
        fired = []
        while self._heap and self._heap[0][0] <= now_ms:
            fire_at, key, timer_id = heapq.heappop(self._heap)
            timer = self.timers.get((key, timer_id))
            if timer is not None and timer.fire_at == fire_at:
                self.remove(key, timer_id)
                fired.append(timer)
        return fired

    def fired_input(self, timer: OneOff) -> WorkflowInput:
        item = TimerFired(timer.fire_at, timer.timer_id)
        input_id = fired_input_id(timer.workflow_id, timer.timer_id, timer.fire_at)
        return input_record(timer.workflow_id, item, input_id)

    def pending_of(self, key: str) -> list[dict[str, Any]]:
        """The key's timers as `TimerState` pending entries."""
        entries = []
        for timer_id in sorted(self.by_key.get(key, ())):
            timer = self.timers[(key, timer_id)]
            data: dict[str, Any] = {"workflow_id": timer.workflow_id}
            if timer.request is not None:
                data["request"] = timer.request
            entries.append(
                {
                    "timer_id": timer_id,
                    "kind": TIMER_KIND,
                    "fire_at": timer.fire_at,
                    "execution_id": None,
                    "attempt": 0,
                    "data": json.dumps(data),
                }
            )
        return entries

    def restore(self, key: str, pending: list[dict[str, Any]]) -> None:
        for entry in pending:
            if entry["kind"] != TIMER_KIND or not entry.get("data"):
                continue
            data = json.loads(entry["data"])
            self.add(
                OneOff(
                    key,
                    entry["timer_id"],
                    data["workflow_id"],
                    int(entry["fire_at"]),
                    data.get("request"),
                )
            )

    def owed(self) -> bool:
        return bool(self.inputs or self.controls)

    def take(self) -> tuple[list[WorkflowInput], list[ExecutionControl]]:
        """What the next transaction must carry, handed over once."""
        inputs, controls = self.inputs, self.controls
        self.inputs, self.controls = [], []
        return inputs, controls
