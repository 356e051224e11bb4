"""The events a worker writes to `executions.events` (key = job_id), built from the request
they belong to. Pure: time and ids are arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tickwheel.events import execution_event as build_execution_event
from tickwheel.records import ExecutionEvent, ExecutionRequest

OutcomeType = Literal["succeeded", "failed", "cancelled"]
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as data. The worker reports it; the timer decides what follows
    (retry, dead letter, fencing)."""

    event_type: OutcomeType
    error: str | None = None
    error_kind: Literal["retryable", "permanent"] | None = None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def succeeded(cls, **details: Any) -> Outcome:
        return cls("succeeded", details=details)

    @classmethod
    def failed(
        cls,
        error: str,
        kind: Literal["retryable", "permanent"],
        *,
        reason: str | None = None,
        **details: Any,
    ) -> Outcome:
        """`reason` is a stable code for failures the worker itself decides
        (`max_run_time_exceeded`, `no_handler`); a handler's own failures have none."""
        return cls(
            "failed",
            error=error[:MAX_ERROR_CHARS],
            error_kind=kind,
            reason=reason,
            details=details,
        )

    @classmethod
    def cancelled(cls, reason: str | None, **details: Any) -> Outcome:
        return cls("cancelled", reason=reason, details=details)


def event_id(event_type: str, request: ExecutionRequest, worker_id: str, unique: str) -> str:
    """`<type>:<execution>:<attempt>:<worker>:<unique>`: unique per event, readable in SQL."""
    return f"{event_type}:{request['execution_id']}:{request['attempt']}:{worker_id}:{unique}"


def execution_event(
    request: ExecutionRequest,
    event_type: str,
    *,
    worker_id: str,
    event_time_ms: int,
    unique: str,
    lease_deadline_ms: int | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> ExecutionEvent:
    """An `ExecutionEvent` record for one attempt of `request`."""
    # `tickwheel.events` builds every field of the event, typed.
    return build_execution_event(
        request,
        event_type,
        event_id=event_id(event_type, request, worker_id, unique),
        event_time_ms=event_time_ms,
        worker_id=worker_id,
        lease_deadline_ms=lease_deadline_ms,
        error=error,
        error_kind=error_kind,
        reason=reason,
        details=details,
    )


def outcome_event(
    request: ExecutionRequest,
    outcome: Outcome,
    *,
    worker_id: str,
    event_time_ms: int,
    unique: str,
) -> ExecutionEvent:
    return execution_event(
        request,
        outcome.event_type,
        worker_id=worker_id,
        event_time_ms=event_time_ms,
        unique=unique,
        error=outcome.error,
        error_kind=outcome.error_kind,
        reason=outcome.reason,
        details=outcome.details,
    )
