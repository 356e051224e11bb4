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
from dataclasses import dataclass
from typing import Any

from tickwheel.clock import Clock
from tickwheel.jobtypes.basic import fail, noop
from tickwheel.sdk.worker import ExecutionContext, JobType, PermanentError
from tickwheel.services.worker.attempt import (
    DeliveryCallback,
    EventSink,
    lease_terms,
    new_unique,
    parse_payload,
    run_handler,
)
from tickwheel.services.worker.codec import AttemptEvents
from tickwheel.services.worker.events import Outcome

log = logging.getLogger("tickwheel.worker")

# Handlers that return at once without waiting on anything: safe to run on the lane thread.
NON_WAITING_HANDLERS: frozenset[Callable[..., Any]] = frozenset({noop, fail})


def runs_inline(job_type: JobType | None) -> bool:
    return job_type is not None and job_type.handler in NON_WAITING_HANDLERS


@dataclass(frozen=True)
class InlineAttempt:
    request: dict[str, Any]
    job_type: JobType
    on_leased: DeliveryCallback


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

    def run(self, attempts: Sequence[InlineAttempt]) -> int:
        # No AttemptLease here: an inline attempt is never heartbeaten, overruns nothing and
        # ends on this thread, so its two events are written straight from its encoder.
        encoders = []
        for attempt in attempts:
            events = AttemptEvents(attempt.request, self.worker_id)
            terms = lease_terms(attempt.request, attempt.job_type)
            now = self.clock.now()
            leased = events.encode(
                "leased", event_time_ms=int(now * 1000), unique=new_unique(),
                lease_deadline_ms=int((now + terms.lease_seconds) * 1000),
            )  # fmt: skip
            self.sink.publish_record(events.job_key, leased, attempt.on_leased)
            encoders.append(events)
        self.started_count += len(encoders)
        debug = log.isEnabledFor(logging.DEBUG)
        for attempt, events in zip(attempts, encoders, strict=True):
            outcome = self._outcome(attempt)
            value = events.encode(
                outcome.event_type, event_time_ms=int(self.clock.now() * 1000),
                unique=new_unique(), error=outcome.error, error_kind=outcome.error_kind,
                reason=outcome.reason, details=outcome.details,
            )  # fmt: skip
            self.sink.publish_record(events.job_key, value)
            if debug:  # the history is the record; a line per execution only when asked for
                log.debug(
                    f"execution {outcome.event_type}",
                    extra={"action": f"execution_{outcome.event_type}", "inline": True,
                           "execution_id": attempt.request["execution_id"],
                           "job_id": attempt.request["job_id"],
                           "attempt": attempt.request["attempt"], "priority": self.priority,
                           "error": outcome.error},
                )  # fmt: skip
        return len(encoders)

    def _outcome(self, attempt: InlineAttempt) -> Outcome:
        try:
            payload = parse_payload(attempt.request)
        except PermanentError as exc:
            return Outcome.failed(str(exc), "permanent")
        ctx = ExecutionContext.from_request(attempt.request, payload, cancel_event=_NEVER_CANCELLED)
        return run_handler(attempt.job_type, ctx, self.clock, _no_cancel_reason)
