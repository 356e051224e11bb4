"""Attempts run inline, on the lane's own thread, a batch at a time: for job types whose
handler neither waits nor blocks (the built-in `noop` and `fail`), a hand-off to a slot
thread, a heartbeat schedule and a run limit cost far more than the handler.

A batch records every lease first (each `leased` event produced before its handler runs, and
its delivery report the one that lets the request's offset be committed, as on the slot
path), then runs the handlers and produces the outcomes. Which types qualify is decided here,
by the handler's identity, never by its name: a user module that registers its own `noop`
runs on slots like any other handler (decision 0071).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from tickwheel.clock import Clock
from tickwheel.jobtypes.basic import fail, noop
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType, PermanentError
from tickwheel.services.worker.attempt import (
    DeliveryCallback,
    EventSink,
    handler_failure,
    handler_outcome,
    lease_terms,
    parse_payload,
)
from tickwheel.services.worker.codec import BatchEvents
from tickwheel.services.worker.events import Outcome

log = logging.getLogger("tickwheel.worker")

# Handlers that return at once without waiting on anything: safe to run on the lane thread.
NON_WAITING_HANDLERS: frozenset[Callable[..., Any]] = frozenset({noop, fail})


def runs_inline(job_type: JobType | None) -> bool:
    return job_type is not None and job_type.handler in NON_WAITING_HANDLERS


class JobKinds:
    """Job type name -> (its registered type or None, whether it runs inline), looked up once
    per registered name (an unknown name is looked up each time: the memo stays small)."""

    def __init__(self, registry: HandlerRegistry) -> None:
        self.registry = registry
        self._kinds: dict[str, tuple[JobType | None, bool]] = {}

    def of(self, name: str) -> tuple[JobType | None, bool]:
        kind = self._kinds.get(name)
        if kind is None:
            job_type = self.registry.get(name) if name in self.registry else None
            kind = (job_type, runs_inline(job_type))
            if job_type is not None:
                self._kinds[name] = kind
        return kind


class InlineAttempt(NamedTuple):
    request: ExecutionRequest
    job_type: JobType


def _no_cancel_reason() -> str | None:
    return None


# The cancellation signal of every inline context: an inline attempt ends before a cancel
# request could reach it, and the non-waiting handlers never look at it, so one event that
# is never set stands in for a fresh one per attempt.
_NEVER_CANCELLED = threading.Event()


# The context's fields, in order, as `inline_context` writes them; another list (a field
# added to the SDK's context) sends every inline attempt through `from_request`.
_CONTEXT_FIELDS = (
    "execution_id",
    "job_id",
    "job_type",
    "tenant_id",
    "attempt",
    "scheduled_time",
    "period_start",
    "period_end",
    "payload",
    "fire_time",
    "max_attempts",
    "workflow_id",
    "step_id",
    "cancel_event",
    "_heartbeat",
)
_FIELDS = {f.name: f for f in dataclasses.fields(ExecutionContext)}
# ...and a `__post_init__` there (setting the fields at once would skip it) does the same.
_CONTEXT_KNOWN = tuple(_FIELDS) == _CONTEXT_FIELDS and not hasattr(
    ExecutionContext, "__post_init__"
)
_NO_HEARTBEAT = _FIELDS["_heartbeat"].default if _CONTEXT_KNOWN else None
_new_context = object.__new__


@functools.lru_cache(maxsize=4096)
def _utc(epoch_ms: int | None) -> datetime | None:
    """A burst's contexts share their instants, and a datetime is immutable: one each."""
    return None if epoch_ms is None else datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


def inline_context(request: ExecutionRequest, payload: dict[str, Any]) -> ExecutionContext:
    """`ExecutionContext.from_request(request, payload, cancel_event=<never set>)`, equal
    field by field (the unit test holds them equal), its fields set at once: the dataclass's
    keyword `__init__` was the largest single cost of an inline no-op (decision 0162)."""
    if not _CONTEXT_KNOWN:
        return ExecutionContext.from_request(request, payload, cancel_event=_NEVER_CANCELLED)
    ctx = _new_context(ExecutionContext)
    ctx.__dict__.update(
        {
            "execution_id": request["execution_id"],
            "job_id": request["job_id"],
            "job_type": request["job_type"],
            "tenant_id": request["tenant_id"],
            "attempt": request["attempt"],
            "scheduled_time": _utc(request["scheduled_time"]),
            "period_start": _utc(request["period_start"]),
            "period_end": _utc(request.get("period_end")),
            "payload": payload,
            "fire_time": _utc(request.get("fire_time")),
            "max_attempts": request.get("max_attempts", 1),
            "workflow_id": request.get("workflow_id"),
            "step_id": request.get("step_id"),
            "cancel_event": _NEVER_CANCELLED,
            "_heartbeat": _NO_HEARTBEAT,
        }
    )
    return ctx


class InlineBatch:
    """Runs batches of inline attempts; `run` returns how many it ran."""

    def __init__(self, *, sink: EventSink, clock: Clock, worker_id: str, priority: str) -> None:
        self.sink = sink
        self.clock = clock
        self.worker_id = worker_id
        self.priority = priority
        self.started_count = 0

    def run(
        self, attempts: Sequence[InlineAttempt], on_leased: DeliveryCallback | None = None
    ) -> int:
        """Lease, run and report `attempts`; `on_leased` once every lease is acknowledged (or
        at the first that is not). Returns how many ran."""
        # No AttemptLease here: an inline attempt is never heartbeaten, overruns nothing and
        # ends on this thread, so its two events are written straight from the batch's
        # encoder. The batch's leases share one instant, and go to the sink as one batch.
        now = self.clock.now()
        lease_ms: dict[tuple[str, int], int] = {}  # (type, request's lease) -> deadline
        deadlines: list[int] = []
        for attempt in attempts:
            request = attempt.request
            terms_key = (attempt.job_type.name, request["lease_seconds"])
            deadline_ms = lease_ms.get(terms_key)
            if deadline_ms is None:
                terms = lease_terms(request, attempt.job_type)
                deadline_ms = lease_ms[terms_key] = int((now + terms.lease_seconds) * 1000)
            deadlines.append(deadline_ms)
        events = BatchEvents([attempt.request for attempt in attempts], self.worker_id)
        self.sink.publish_batch(events.leases(int(now * 1000), deadlines), on_leased)
        self.started_count += len(attempts)
        clock_now = self.clock.now
        outcome_of = self._outcome
        ends = [outcome_of(attempt, clock_now) for attempt in attempts]
        if log.isEnabledFor(logging.DEBUG):  # the history is the record: a line only if asked
            for attempt, (outcome, _ended, _ms) in zip(attempts, ends, strict=True):
                kind = outcome.event_type if outcome else "succeeded"
                log.debug(
                    f"execution {kind}",
                    extra={
                        "action": f"execution_{kind}",
                        "inline": True,
                        "execution_id": attempt.request["execution_id"],
                        "job_id": attempt.request["job_id"],
                        "attempt": attempt.request["attempt"],
                        "priority": self.priority,
                        "error": outcome.error if outcome else None,
                    },
                )
        self.sink.publish_batch(events.outcomes(ends))
        return len(attempts)

    def _outcome(
        self, attempt: InlineAttempt, clock_now: Callable[[], float]
    ) -> tuple[Outcome | None, float, int]:
        """How the attempt ended (None: the handler returned None, the usual no-op), when,
        and the handler's milliseconds."""
        try:
            payload = parse_payload(attempt.request)
        except PermanentError as exc:
            return Outcome.failed(str(exc), "permanent"), clock_now(), 0
        ctx = inline_context(attempt.request, payload)
        started = clock_now()
        failure = None
        result: Any = None
        try:
            result = attempt.job_type.handler(ctx)
        except BaseException as exc:  # classified as the slot threads classify it
            failure = handler_failure(exc)
        ended = clock_now()
        duration_ms = int((ended - started) * 1000)
        if result is None and failure is None:
            return None, ended, duration_ms
        outcome = handler_outcome(ctx, result, failure, duration_ms, _no_cancel_reason)
        return outcome, ended, duration_ms
