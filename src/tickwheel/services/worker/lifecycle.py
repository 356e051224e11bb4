"""One attempt's life on a slot thread or on a lane's event loop, written once for both runners
(`runner.py`, `coroutines.py`): the lease recorded before the handler runs, the handler's
context, the watch while it runs (heartbeats, the cancellation signal, the run limit), and an
ending that happens once, whichever comes first: the handler's return or the run limit.

What differs between the two runners stays with them: how the handler is called (on a
thread, or awaited as a task), and what an overrun does to it (a thread is left to finish;
a task is cancelled).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tickwheel.clock import Clock
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import ExecutionContext, JobType, PermanentError
from tickwheel.services.worker.attempt import (
    AttemptLease,
    DeliveryCallback,
    EventSink,
    lease_terms,
    parse_payload,
    run_limit,
)
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.events import Outcome
from tickwheel.services.worker.heartbeats import HeartbeatScheduler

OVERRUN_REASON = "max_run_time_exceeded"


@dataclass(frozen=True)
class AttemptServices:
    """What running any attempt of a lane needs."""

    sink: EventSink
    cancels: CancelRegistry
    heartbeats: HeartbeatScheduler
    clock: Clock
    worker_id: str
    max_run_seconds: float


class AttemptRun:
    """One attempt's claim on its ending, and what its watch set up. Thread-safe: the
    handler's return and the heartbeat thread's overrun race for `end()`."""

    def __init__(
        self,
        request: ExecutionRequest,
        job_type: JobType | None,
        services: AttemptServices,
        on_done: Callable[[], None],
    ) -> None:
        self.request = request
        self.job_type = job_type
        self.services = services
        self.on_done = on_done
        self.execution_id: str = request["execution_id"]
        self.lease: AttemptLease | None = None
        self.ctx: ExecutionContext | None = None
        self.started = 0.0
        self.limit = 0.0
        self._ended = False
        self._lock = threading.Lock()

    def end(self) -> bool:
        """True for the first caller only: that one reports the outcome and frees the slot."""
        with self._lock:
            first, self._ended = not self._ended, True
            return first

    def open(self, on_leased: DeliveryCallback) -> AttemptLease:
        """Record the lease (the `leased` event, whose delivery is `on_leased`)."""
        s = self.services
        self.lease = AttemptLease(
            self.request,
            lease_terms(self.request, self.job_type),
            worker_id=s.worker_id,
            clock=s.clock,
            sink=s.sink,
        )
        self.lease.start(on_leased)
        return self.lease

    def context(self) -> ExecutionContext | Outcome:
        """The handler's context, or the permanent failure of a payload it cannot take."""
        assert self.lease is not None
        lease = self.lease
        try:
            payload = parse_payload(self.request)
        except PermanentError as exc:
            return Outcome.failed(str(exc), "permanent")
        self.ctx = ExecutionContext.from_request(
            self.request, payload, heartbeat=lambda: lease.heartbeat(manual=True)
        )
        return self.ctx

    def cancel_reason(self) -> str | None:
        return self.services.cancels.reason(self.execution_id)

    @contextmanager
    def watched(self, on_overrun: Callable[[AttemptLease], None]) -> Iterator[None]:
        """While the handler runs: heartbeats, the cancellation signal, and the run limit
        (past it the heartbeat thread calls `on_overrun` instead of heartbeating)."""
        assert self.lease is not None and self.ctx is not None
        s, lease, signal = self.services, self.lease, self.ctx.cancel_event
        self.started = s.clock.now()
        self.limit = run_limit(self.request, self.job_type, s.max_run_seconds)
        lease.run_deadline = self.started + self.limit
        lease.on_overrun = on_overrun
        s.cancels.started(self.execution_id, signal, int(self.request["attempt"]))
        s.heartbeats.add(lease)
        try:
            yield
        finally:
            s.heartbeats.remove(lease)
            s.cancels.finished(self.execution_id, signal)

    def ran_ms(self) -> int:
        return int((self.services.clock.now() - self.started) * 1000)

    def overrun(self, what_happened: str) -> Outcome:
        """Past the run limit (once `end()` was won): signal the handler to cancel and report
        the retryable failure; `what_happened` says what became of the handler."""
        assert self.lease is not None and self.ctx is not None
        self.ctx.cancel_event.set()  # a handler that looks at the signal can still stop cleanly
        outcome = Outcome.failed(
            f"the attempt exceeded its max run time of {self.limit:g}s and was failed so it "
            f"can be retried; {what_happened} (raise the job's maxRunTime or the type's "
            "max_run_seconds if it needs longer)",
            "retryable",
            reason=OVERRUN_REASON,
            duration_ms=self.ran_ms(),
            max_run_seconds=self.limit,
        )
        self.lease.finish(outcome)
        return outcome
