"""The wire between the code kind's fold and the worker that runs the code (decision 0217): the
names of task and step executions and of timers, a workflow task's payload and its answer,
and the jittered delay of a retry. Pure: the orchestrator writes tasks and reads answers with
it, the worker reads tasks and writes answers with it."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tickwheel.core.codeflow.engine import Activation
from tickwheel.core.codeflow.history import (
    HistoryEvent,
    JsonObject,
    events_from_json,
    events_to_json,
)
from tickwheel.core.identity import EXECUTION_NAMESPACE
from tickwheel.core.retry import RetryPolicy

__all__ = [
    "EFFECT_KEYS",
    "TASK_STEP",
    "TaskAnswer",
    "TaskPayload",
    "code_step_execution_id",
    "code_timer_id",
    "missed_answer",
    "parse_code_timer",
    "read_answer",
    "read_task",
    "retry_delay_ms",
    "task_answer",
    "task_execution_id",
    "task_job_type",
    "task_payload",
]

# The step a workflow task runs as. The engine derives step names from functions (and
# `name=`), never with `@`, so no step of the code can take it.
TASK_STEP = "@task"
# The data keys that carry an event's effects (events.py's, and this kind's own).
EFFECT_KEYS = frozenset(
    {
        "cancel_execution",
        "cancel_executions",
        "cancel_timers",
        "clear_alerts",
        "execution_id",
        "raise_alert",
        "schedule_step",
        "send_inputs",
        "start_timers",
    }
)
_TIMER_PREFIX = "code"


# -- names ----------------------------------------------------------------------------------


def _execution_uuid(workflow_id: str, run: int, tail: str) -> str:
    # Length-prefixed like ids.step_execution_id, under its own prefix (`code1:`), so it
    # never equals a DAG step's name (`wf1:`) or a job occurrence's (`v1:`).
    name = f"code1:{len(workflow_id.encode())}:{workflow_id}:{run}:{tail}"
    return str(uuid.uuid5(EXECUTION_NAMESPACE, name))


def task_execution_id(workflow_id: str, run: int, task: int) -> str:
    """The execution id of workflow task `task` (of run `run`): one execution per task."""
    return _execution_uuid(workflow_id, run, f"{TASK_STEP}:{task}")


def code_step_execution_id(workflow_id: str, run: int, position: int) -> str:
    """The execution id of the step the code scheduled at `position` of run `run`, stable
    across its attempts."""
    return _execution_uuid(workflow_id, run, str(position))


def code_timer_id(run: int, position: int) -> str:
    """The timer of the sleep or signal wait at `position` of run `run`. `ids.parse_timer`
    reads it as `unknown` (three parts, a first one it does not know): only this kind sees it."""
    return f"{_TIMER_PREFIX}:{run}:{position}"


def parse_code_timer(timer_id: str) -> tuple[int, int] | None:
    """(run, position) of a `code_timer_id`, or None for any other id."""
    parts = timer_id.split(":")
    if len(parts) != 3 or parts[0] != _TIMER_PREFIX:
        return None
    if not (parts[1].isdigit() and parts[2].isdigit()):
        return None
    return int(parts[1]), int(parts[2])


def task_job_type(workflow: str) -> str:
    return f"workflow:{workflow}"


def retry_delay_ms(execution_id: str, attempt: int, policy: RetryPolicy) -> int:
    """The full-jitter delay after failed attempt `attempt`: uniform in [0, min(cap,
    base·2^attempt)], drawn from a digest of the execution and the attempt (no random source
    in the fold: a re-fold draws the same delay)."""
    ceiling = policy.ceiling_ms(attempt)
    raw = hashlib.sha256(f"{execution_id}:{attempt}".encode()).digest()
    return int.from_bytes(raw[:8], "big") % (ceiling + 1)


# -- the task and its answer ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskPayload:
    """What a workflow task carries: the history from `base` on (what the worker's cached
    run has consumed; 0: the whole history, replayed from scratch)."""

    workflow: str
    workflow_id: str
    run: int
    code_version: str
    task: int
    base: int
    events: tuple[HistoryEvent, ...]


def task_payload(
    workflow: str,
    workflow_id: str,
    run: int,
    code_version: str,
    task: int,
    base: int,
    events: Iterable[HistoryEvent],
) -> JsonObject:
    """The payload of a workflow task (decision 0217, "The task's payload")."""
    return {
        "workflow": workflow,
        "workflow_id": workflow_id,
        "run": run,
        "code_version": code_version,
        "task": task,
        "base": base,
        "events": events_to_json(events),
    }


def read_task(payload: Mapping[str, Any]) -> TaskPayload:
    """A task's payload read back; `ValueError` naming the field at fault."""
    for key, kind in (
        ("workflow", str),
        ("workflow_id", str),
        ("run", int),
        ("code_version", str),
        ("task", int),
        ("base", int),
        ("events", list),
    ):
        value = payload.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(
                f"workflow task field {key!r} is {value!r}; accepted: a {kind.__name__}"
            )
    return TaskPayload(
        payload["workflow"],
        payload["workflow_id"],
        payload["run"],
        payload["code_version"],
        payload["task"],
        payload["base"],
        tuple(events_from_json(payload["events"])),
    )


@dataclass(frozen=True, slots=True)
class TaskAnswer:
    """A task execution's result: the commands the code issued on the task's history, and
    what the run then was; or `missed` (the worker holds no run at the task's base)."""

    task: int
    missed: bool = False
    base: int = 0
    commands: tuple[HistoryEvent, ...] = ()
    status: str | None = None
    result: Any = None
    error: str | None = None
    query: Any = None
    waiting_on: tuple[str, ...] = ()


def task_answer(task: int, base: int, activation: Activation) -> JsonObject:
    """The answer a worker gives for task `task` (sent with `base`) after `activation`."""
    return {
        "task": task,
        "base": base,
        "commands": events_to_json(activation.commands),
        "status": activation.status,
        "result": activation.result,
        "error": activation.error,
        "query": activation.query,
        "waiting_on": list(activation.waiting_on),
    }


def missed_answer(task: int) -> JsonObject:
    """The answer of a worker that holds no run at the task's base."""
    return {"task": task, "missed": True}


def read_answer(output: object) -> TaskAnswer:
    """A task execution's result read; `ValueError` saying what is wrong with it."""
    if not isinstance(output, Mapping):
        raise ValueError(f"a workflow task's answer is a JSON object; got {type(output).__name__}")
    task = output.get("task")
    if not isinstance(task, int) or isinstance(task, bool):
        raise ValueError(f"a workflow task's answer names its task number; got {task!r}")
    if output.get("missed") is True:
        return TaskAnswer(task, missed=True)
    base, raw = output.get("base"), output.get("commands")
    if not isinstance(base, int) or isinstance(base, bool) or base < 0:
        raise ValueError(f"the answer to task {task} has base {base!r}; accepted: an integer >= 0")
    if not isinstance(raw, list):
        raise ValueError(f"the answer to task {task} has commands {raw!r}; accepted: a list")
    commands = tuple(events_from_json(raw))
    for command in commands:
        if not command.is_command or command.position is None:
            raise ValueError(
                f"the answer to task {task} holds {command.type!r} without a command position"
            )
        clash = EFFECT_KEYS & set(command.data)
        if clash:
            raise ValueError(
                f"the answer to task {task} has {command.type} with reserved key(s) {sorted(clash)}"
            )
    waiting = output.get("waiting_on") or ()
    status, error = output.get("status"), output.get("error")
    return TaskAnswer(
        task,
        base=base,
        commands=commands,
        status=None if status is None else str(status),
        result=output.get("result"),
        error=None if error is None else str(error),
        query=output.get("query"),
        waiting_on=tuple(str(w) for w in waiting) if isinstance(waiting, list) else (),
    )
