"""One attempt on this worker: its lease (leased, heartbeats, outcome as events) and running
the handler into an `Outcome`. No Kafka here: events go to an `EventSink`, time comes from a
`Clock`, so units drive both by hand."""

from __future__ import annotations

import itertools
import json
import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tickwheel.clock import Clock
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import (
    ExecutionCancelled,
    ExecutionContext,
    JobType,
    PermanentError,
)
from tickwheel.services.worker.codec import AttemptEvents, new_unique
from tickwheel.services.worker.events import Outcome

log = logging.getLogger("tickwheel.worker")

DeliveryCallback = Callable[[str | None], None]
MAX_RESULT_BYTES = 64 * 1024
MAX_TRACEBACK_CHARS = 4000


class EventSink(Protocol):
    def publish_record(
        self, job_id: str, value: bytes, on_delivery: DeliveryCallback | None = None
    ) -> None:
        """Queue an encoded `ExecutionEvent` for `executions.events` (key = `job_id`);
        `on_delivery(error_or_None)` once the broker acknowledged it (or gave up)."""
        ...

    def publish_batch(
        self, records: Sequence[tuple[str, bytes]], on_delivery: DeliveryCallback | None = None
    ) -> None:
        """Queue encoded events (`(job_id, value)` each, in order); `on_delivery(None)` once
        every one is acknowledged, or `on_delivery(error)` once, at the first that is not."""
        ...


class AllDelivered:
    """Counts the delivery reports of a batch into one: `report(None)` after the last
    acknowledgement, `report(error)` at the first failure (and nothing after it). Safe when
    reports arrive on several threads: the count is an `itertools.count`, atomic in CPython."""

    __slots__ = ("_acknowledged", "_failed", "_report", "_total")

    def __init__(self, total: int, report: DeliveryCallback) -> None:
        self._total = total
        self._report = report
        self._acknowledged = itertools.count(1)
        self._failed = False

    def __call__(self, error: str | None) -> None:
        if error is not None:
            if not self._failed:
                self._failed = True
                self._report(error)
        elif next(self._acknowledged) == self._total and not self._failed:
            self._report(None)


class RecordBatches:
    """`publish_batch` in terms of `publish_record`, for sinks with no batch path of their own
    (the in-memory and test sinks)."""

    def publish_record(
        self, job_id: str, value: bytes, on_delivery: DeliveryCallback | None = None
    ) -> None:
        raise NotImplementedError

    def publish_batch(
        self, records: Sequence[tuple[str, bytes]], on_delivery: DeliveryCallback | None = None
    ) -> None:
        if on_delivery is not None and not records:
            on_delivery(None)  # nothing to wait for
        each = AllDelivered(len(records), on_delivery) if on_delivery and records else None
        for job_id, value in records:
            self.publish_record(job_id, value, each)


@dataclass(frozen=True)
class LeaseTerms:
    lease_seconds: float
    heartbeat_seconds: float


def lease_terms(request: ExecutionRequest, job_type: JobType | None) -> LeaseTerms:
    """The job type's own lease settings win over the request's (its author knows how the
    handler behaves); the heartbeat is kept to at most half the lease so one late heartbeat
    does not lose it."""
    lease = float((job_type and job_type.lease_seconds) or request.get("lease_seconds") or 30)
    beat = float(
        (job_type and job_type.heartbeat_seconds) or request.get("heartbeat_seconds") or 10
    )
    lease = max(lease, 1.0)
    return LeaseTerms(lease, max(0.1, min(beat, lease / 2)))


def run_limit(request: ExecutionRequest, job_type: JobType | None, default: float) -> float:
    """Seconds one attempt may run: the job's own limit (carried in the request) is the most
    specific, then the job type's, then the worker's default."""
    for limit in (request.get("max_run_seconds"), job_type and job_type.max_run_seconds):
        if limit and limit > 0:  # a non-positive value from a foreign producer means unset
            return max(float(limit), 1.0)
    return default


class AttemptLease:
    """The lease of one attempt: `start()` records it, `heartbeat()` extends it, `finish()`
    reports the outcome. Thread-safe: the heartbeat thread and the handler both extend it."""

    def __init__(
        self,
        request: ExecutionRequest,
        terms: LeaseTerms,
        *,
        worker_id: str,
        clock: Clock,
        sink: EventSink,
        new_id: Callable[[], str] = new_unique,
    ) -> None:
        self.request = request
        self.terms = terms
        self.worker_id = worker_id
        self.events = AttemptEvents(request, worker_id)
        self.clock = clock
        self.sink = sink
        self.new_id = new_id
        self.deadline_ms = 0
        self.next_due = 0.0  # clock seconds of the next automatic heartbeat
        self.last_beat = 0.0
        self.heartbeats = 0
        self.finished = False
        # Clock seconds past which the attempt has overrun (None: no limit), and what to do
        # then; the heartbeat scheduler watches both, since it is what keeps the lease alive.
        self.run_deadline: float | None = None
        self.on_overrun: Callable[[AttemptLease], None] | None = None
        self._lock = threading.Lock()

    @property
    def next_wake(self) -> float:
        """When the heartbeat scheduler must look at this lease next."""
        if self.run_deadline is None:
            return self.next_due
        return min(self.next_due, self.run_deadline)

    def overran(self, now: float) -> bool:
        return self.run_deadline is not None and now >= self.run_deadline

    @property
    def min_interval(self) -> float:
        """Manual heartbeats closer together than this are merged."""
        return min(1.0, self.terms.heartbeat_seconds / 2)

    def _publish(
        self,
        event_type: str,
        now: float,
        on_delivery: DeliveryCallback | None = None,
        **fields: Any,
    ) -> None:
        value = self.events.encode(
            event_type, event_time_ms=int(now * 1000), unique=self.new_id(), **fields
        )
        self.sink.publish_record(self.events.job_key, value, on_delivery)

    def _extend(self, now: float) -> int:
        self.deadline_ms = int((now + self.terms.lease_seconds) * 1000)
        self.last_beat = now
        self.next_due = now + self.terms.heartbeat_seconds
        return self.deadline_ms

    def start(self, on_delivery: DeliveryCallback | None = None) -> None:
        """Record the lease: a `leased` event with `lease_deadline = now + lease`."""
        with self._lock:
            now = self.clock.now()
            self._publish("leased", now, on_delivery, lease_deadline_ms=self._extend(now))

    def heartbeat(self, manual: bool = False) -> bool:
        """Extend the lease to `now + lease`; False when finished, or when a manual call
        comes within `min_interval` of the last heartbeat."""
        with self._lock:
            if self.finished:
                return False
            now = self.clock.now()
            if manual and now - self.last_beat < self.min_interval:
                return False
            if now * 1000 > self.deadline_ms:
                # Stalled past the lease (a paused process, a starved thread): the timer may
                # have re-issued the execution; our later events will be fenced, not accepted.
                log.warning(
                    "heartbeat after the lease deadline",
                    extra={
                        "action": "lease_overrun",
                        "execution_id": self.request["execution_id"],
                        "attempt": self.request["attempt"],
                        "late_ms": int(now * 1000) - self.deadline_ms,
                    },
                )
            self._publish("heartbeat", now, lease_deadline_ms=self._extend(now))
            self.heartbeats += 1
            return True

    def finish(self, outcome: Outcome, on_delivery: DeliveryCallback | None = None) -> None:
        """Report the outcome; no heartbeat follows it."""
        with self._lock:
            self.finished = True
            self._publish(
                outcome.event_type,
                self.clock.now(),
                on_delivery,
                error=outcome.error,
                error_kind=outcome.error_kind,
                reason=outcome.reason,
                details=outcome.details,
            )


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _result_details(result: Any) -> tuple[dict[str, Any], str | None]:
    """The handler's return value as JSON details, or why it cannot be recorded. A result
    over the limit is dropped with a note rather than failing the attempt: the handler's
    side effects have happened, and a failure would retry or dead-letter work that is done."""
    if result is None:
        return {}, None
    try:
        text = json.dumps(result)  # ASCII only, so its length is its size in bytes
    except (TypeError, ValueError) as exc:
        return (
            {},
            f"the handler returned a value that is not JSON ({exc}); return data, not objects",
        )
    if len(text) > MAX_RESULT_BYTES:
        note = (
            f"the handler's result was {len(text)} bytes of JSON, over the "
            f"{MAX_RESULT_BYTES // 1024} KiB limit, so it was not recorded; the attempt "
            "succeeded (return a small summary, and store large data elsewhere)"
        )
        return {"result_dropped": note, "result_bytes": len(text)}, None
    return {"result": result}, None


def run_handler(
    job_type: JobType, ctx: ExecutionContext, clock: Clock, cancel_reason: Callable[[], str | None]
) -> Outcome:
    """Run the handler and classify how it ended. Never raises for a handler's failure:
    failures are data. Once cancellation was requested the outcome is `cancelled`, whatever
    the handler did after seeing the signal."""
    started = clock.now()
    result: Any = None
    failure: Outcome | None = None
    try:
        result = job_type.handler(ctx)
    except BaseException as exc:  # any ending, even SystemExit, is classified as data
        failure = handler_failure(exc)
    return handler_outcome(ctx, result, failure, int((clock.now() - started) * 1000), cancel_reason)


def handler_failure(exc: BaseException) -> Outcome | None:
    """How a handler's exception ends its attempt: None for `ExecutionCancelled` (the outcome
    is then `cancelled`), permanent for `PermanentError`, retryable for anything else."""
    if isinstance(exc, ExecutionCancelled):
        return None
    if isinstance(exc, PermanentError):
        return Outcome.failed(_error_text(exc), "permanent")
    return Outcome.failed(
        _error_text(exc),
        "retryable",
        traceback="".join(traceback.format_exception(exc))[-MAX_TRACEBACK_CHARS:],
    )


def handler_outcome(
    ctx: ExecutionContext,
    result: Any,
    failure: Outcome | None,
    duration_ms: int,
    cancel_reason: Callable[[], str | None],
) -> Outcome:
    """The outcome of a handler that returned `result` or failed with `failure` (shared by
    the thread, inline and event-loop paths, so all three classify alike)."""
    if ctx.cancelled:
        return Outcome.cancelled(cancel_reason() or "cancel requested", duration_ms=duration_ms)
    if failure is not None:
        return Outcome(
            failure.event_type,
            failure.error,
            failure.error_kind,
            failure.reason,
            {**failure.details, "duration_ms": duration_ms},
        )
    details, problem = _result_details(result)
    if problem is not None:
        return Outcome.failed(problem, "permanent", duration_ms=duration_ms)
    if "result_dropped" in details:
        log.warning(
            "result over the limit dropped",
            extra={
                "action": "result_dropped",
                "execution_id": ctx.execution_id,
                "job_id": ctx.job_id,
                "attempt": ctx.attempt,
                "result_bytes": details["result_bytes"],
            },
        )
    return Outcome.succeeded(duration_ms=duration_ms, **details)


def parse_payload(request: ExecutionRequest) -> dict[str, Any]:
    """The request's payload as a JSON object (arbitrary JSON: the handler's input);
    `PermanentError` if it is not one."""
    text = request.get("payload") or "{}"
    if text == "{}":  # most payloads, and every no-op's: no parser needed
        return {}
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise PermanentError(f"the payload is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise PermanentError(f"the payload must be a JSON object, got {type(payload).__name__}")
    return payload
