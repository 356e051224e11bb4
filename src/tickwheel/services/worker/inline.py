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

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from tickwheel.clock import Clock
from tickwheel.jobtypes.basic import fail, noop
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import ExecutionContext, JobType, PermanentError
from tickwheel.services.worker.attempt import (
    DeliveryCallback,
    EventSink,
    handler_failure,
    handler_outcome,
    lease_terms,
    new_unique,
    parse_payload,
)
from tickwheel.services.worker.codec import AttemptEvents
from tickwheel.services.worker.events import Outcome

log = logging.getLogger("tickwheel.worker")

# Handlers that return at once without waiting on anything: safe to run on the lane thread.
NON_WAITING_HANDLERS: frozenset[Callable[..., Any]] = frozenset({noop, fail})


def runs_inline(job_type: JobType | None) -> bool:
    return job_type is not None and job_type.handler in NON_WAITING_HANDLERS


class InlineAttempt(NamedTuple):
    request: ExecutionRequest
    job_type: JobType


def _no_cancel_reason() -> str | None:
    return None


# The cancellation signal of every inline context: an inline attempt ends before a cancel
# request could reach it, and the non-waiting handlers never look at it, so one event that
# is never set stands in for a fresh one per attempt.
_NEVER_CANCELLED = threading.Event()


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
        # ends on this thread, so its two events are written straight from its encoder. The
        # batch's leases share one instant, and go to the sink as one batch.
        now = self.clock.now()
        now_ms = int(now * 1000)
        worker_id = self.worker_id
        lease_ms: dict[tuple[str, int], int] = {}  # (type, request's lease) -> deadline
        leases: list[tuple[str, bytes]] = []
        encoders: list[AttemptEvents] = []
        for attempt in attempts:
            request = attempt.request
            terms_key = (attempt.job_type.name, request["lease_seconds"])
            deadline_ms = lease_ms.get(terms_key)
            if deadline_ms is None:
                terms = lease_terms(request, attempt.job_type)
                deadline_ms = lease_ms[terms_key] = int((now + terms.lease_seconds) * 1000)
            events = AttemptEvents(request, worker_id)
            leases.append((events.job_key, events.encode(
                "leased", event_time_ms=now_ms, unique=new_unique(), lease_deadline_ms=deadline_ms,
            )))  # fmt: skip
            encoders.append(events)
        self.sink.publish_batch(leases, on_leased)
        self.started_count += len(encoders)
        debug = log.isEnabledFor(logging.DEBUG)
        clock_now = self.clock.now
        outcomes: list[tuple[str, bytes]] = []
        for attempt, events in zip(attempts, encoders, strict=True):
            outcome, ended, duration_ms = self._outcome(attempt, clock_now)
            if outcome is None:  # returned None: succeeded, as `handler_outcome` says
                value = events.encode(
                    "succeeded", event_time_ms=int(ended * 1000), unique=new_unique(),
                    details={"duration_ms": duration_ms},
                )  # fmt: skip
            else:
                value = events.encode(
                    outcome.event_type, event_time_ms=int(ended * 1000), unique=new_unique(),
                    error=outcome.error, error_kind=outcome.error_kind, reason=outcome.reason,
                    details=outcome.details,
                )  # fmt: skip
            outcomes.append((events.job_key, value))
            if debug:  # the history is the record; a line per execution only when asked for
                kind = outcome.event_type if outcome else "succeeded"
                log.debug(
                    f"execution {kind}",
                    extra={"action": f"execution_{kind}", "inline": True,
                           "execution_id": attempt.request["execution_id"],
                           "job_id": attempt.request["job_id"],
                           "attempt": attempt.request["attempt"], "priority": self.priority,
                           "error": outcome.error if outcome else None},
                )  # fmt: skip
        self.sink.publish_batch(outcomes)
        return len(encoders)

    def _outcome(
        self, attempt: InlineAttempt, clock_now: Callable[[], float]
    ) -> tuple[Outcome | None, float, int]:
        """How the attempt ended (None: the handler returned None, the usual no-op), when,
        and the handler's milliseconds."""
        try:
            payload = parse_payload(attempt.request)
        except PermanentError as exc:
            return Outcome.failed(str(exc), "permanent"), clock_now(), 0
        ctx = ExecutionContext.from_request(attempt.request, payload, cancel_event=_NEVER_CANCELLED)
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
