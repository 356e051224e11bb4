"""The `ExecutionEvent` record, built in one place for every service that writes one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, get_args

from tickwheel.records import ExecutionEvent, ExecutionEventType, ExecutionRequest

# What the builders read of a request: an ExecutionRequest, or any mapping of its fields (a
# lane that still holds its requests as plain dicts).
RequestLike = ExecutionRequest | Mapping[str, Any]
# Each event type the schema has, as its Literal: a type it lacks is a KeyError, a bug.
_EVENT_TYPES: dict[str, ExecutionEventType] = {t: t for t in get_args(ExecutionEventType)}


def execution_event(
    request: RequestLike,
    event_type: str,
    *,
    event_id: str,
    event_time_ms: int,
    worker_id: str | None = None,
    lease_deadline_ms: int | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> ExecutionEvent:
    """An `ExecutionEvent` about the attempt that `request` (an `ExecutionRequest`) stands for."""
    return {
        "event_id": event_id,
        "event_time": event_time_ms,
        "event_type": _EVENT_TYPES[event_type],
        "job_id": request["job_id"],
        "job_type": request["job_type"],
        "tenant_id": request["tenant_id"],
        "execution_id": request["execution_id"],
        "attempt": request["attempt"],
        "scheduled_time": request["scheduled_time"],
        "fire_time": request["fire_time"],
        "worker_id": worker_id,
        "lease_deadline": lease_deadline_ms,
        "error": error,
        "error_kind": error_kind,
        "reason": reason,
        "details": json.dumps(details, default=str) if details else None,
    }


def requested_event(request: RequestLike) -> ExecutionEvent:
    """The `requested` event an `ExecutionRequest` stands for.

    The timer does not publish it: the request record on `executions.<priority>` is the fact,
    and the history sink derives this row from it (docs/decisions/0007). Its id is the one the
    timer used to publish, so history written before and after that change agrees.
    """
    return execution_event(
        request,
        "requested",
        event_id=f"timer:requested:{request['execution_id']}:{request['attempt']}",
        event_time_ms=request["requested_at"],
        reason=request["trigger"] + (":late" if request["late"] else ""),
    )
