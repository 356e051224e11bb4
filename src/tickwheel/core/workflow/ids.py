"""Deterministic names within one workflow instance: step execution ids, timer ids, alert ids.

A step's `execution_id` is a UUIDv5 over `(workflow_id, step_id)` alone, so it is the same
on every attempt and after every operator retry: the timer fences by `attempt`, the worker
is handed the id as its idempotency key, and history groups all attempts under it. The
name is length-prefixed like `tickwheel.core.identity` and starts `wf1:` so it can never
equal a job occurrence's name (those start `v1:`):

    name = f"wf1:{len(workflow_id)}:{workflow_id}:{step_id}"      (+ ":compensate")
    execution_id = uuid5(EXECUTION_NAMESPACE, name)

Step ids are `[A-Za-z0-9_.-]`, so a timer id splits on `:` without ambiguity.
"""

from __future__ import annotations

import uuid
from functools import lru_cache

from tickwheel.core.identity import EXECUTION_NAMESPACE

__all__ = [
    "alert_id",
    "deadline_timer",
    "parse_timer",
    "sleep_timer",
    "step_execution_id",
]


@lru_cache(maxsize=65_536)  # pure; asked again on every attempt and every cancel of a step
def step_execution_id(workflow_id: str, step_id: str, *, compensation: bool = False) -> str:
    """The execution id of a step (or of its compensation), stable across attempts."""
    name = f"wf1:{len(workflow_id.encode())}:{workflow_id}:{step_id}"
    return str(uuid.uuid5(EXECUTION_NAMESPACE, name + (":compensate" if compensation else "")))


def sleep_timer(step_id: str) -> str:
    return f"sleep:{step_id}"


def deadline_timer(step_id: str, attempt: int) -> str:
    return f"deadline:{step_id}:{attempt}"


def approval_timer(step_id: str, round_: int) -> str:
    return f"approval:{step_id}:{round_}"


def overdue_timer(step_id: str) -> str:
    return f"overdue:{step_id}"


def alert_id(workflow_id: str, kind: str, step_id: str) -> str:
    """Deterministic, so a replayed raise or clear is the same alert, not a second one."""
    return f"wf:{workflow_id}:{kind}:{step_id}"


def parse_timer(timer_id: str) -> tuple[str, str, int]:
    """(kind, step_id, number) of a timer id; number is 0 where the id has none."""
    parts = timer_id.split(":")
    if len(parts) == 2 and parts[0] in ("sleep", "overdue"):
        return parts[0], parts[1], 0
    if len(parts) == 3 and parts[0] in ("deadline", "approval") and parts[2].isdigit():
        return parts[0], parts[1], int(parts[2])
    return "unknown", "", 0
