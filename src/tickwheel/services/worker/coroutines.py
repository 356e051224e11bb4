"""`async def` handlers, run natively on one event loop per lane (its own thread): many
attempts wait at once without a thread each. They take the lane's slots like any attempt,
and keep every promise the slot threads keep: the lease is recorded before the handler
starts, heartbeats come from the worker's heartbeat thread, a cancel request sets the
context's signal, and an attempt past its run limit is failed as retryable and its task
cancelled (unlike a thread, a coroutine can be stopped).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from tickwheel.clock import Clock
from tickwheel.sdk.worker import ExecutionContext, JobType, PermanentError
from tickwheel.services.worker.attempt import (
    AttemptLease,
    DeliveryCallback,
    EventSink,
    handler_failure,
    handler_outcome,
    lease_terms,
    parse_payload,
    run_limit,
)
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.events import Outcome
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.runner import OVERRUN_REASON

log = logging.getLogger("tickwheel.worker")


def is_async(job_type: JobType | None) -> bool:
    return job_type is not None and inspect.iscoroutinefunction(job_type.handler)


@dataclass
class _AsyncRun:
    """One attempt on the loop; touched only on the loop's thread."""

    request: dict[str, Any]
    job_type: JobType
    on_done: Callable[[], None]
    lease: AttemptLease | None = None
    task: asyncio.Future[Any] | None = None
    started: float = 0.0
    limit: float = 0.0
    ended: bool = False

    def end(self) -> bool:
        """True for the first caller only: the handler's return and the run limit race."""
        first, self.ended = not self.ended, True
        return first


class CoroutineRunner:
    """One event loop on a daemon thread; `submit` schedules an attempt on it."""

    def __init__(
        self,
        name: str,
        *,
        sink: EventSink,
        cancels: CancelRegistry,
        heartbeats: HeartbeatScheduler,
        clock: Clock,
        worker_id: str,
        max_run_seconds: float,
        on_fatal: Callable[[str], None],
    ) -> None:
        self.sink = sink
        self.cancels = cancels
        self.heartbeats = heartbeats
        self.clock = clock
        self.worker_id = worker_id
        self.max_run_seconds = max_run_seconds
        self.on_fatal = on_fatal
        self.started_count = 0
        self.overrun_count = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(
        self,
        request: dict[str, Any],
        job_type: JobType,
        *,
        on_leased: DeliveryCallback,
        on_done: Callable[[], None],
    ) -> Future[None]:
        run = _AsyncRun(request, job_type, on_done)
        return asyncio.run_coroutine_threadsafe(self._execute(run, on_leased), self._loop)

    def shutdown(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _execute(self, run: _AsyncRun, on_leased: DeliveryCallback) -> None:
        try:
            run.lease = AttemptLease(
                run.request,
                lease_terms(run.request, run.job_type),
                worker_id=self.worker_id,
                clock=self.clock,
                sink=self.sink,
            )
            run.lease.start(on_leased)
            self.started_count += 1
            outcome = await self._outcome(run, run.lease)
            if run.end():
                run.lease.finish(outcome)
                run.on_done()
        except Exception as exc:  # the loop must outlive any bug in one attempt
            log.exception("attempt crashed", extra={"action": "attempt_crashed"})
            self.on_fatal(f"attempt of {run.request['execution_id']} crashed: {exc}")
            if run.end():
                run.on_done()

    async def _outcome(self, run: _AsyncRun, lease: AttemptLease) -> Outcome:
        request = run.request
        try:
            payload = parse_payload(request)
        except PermanentError as exc:
            return Outcome.failed(str(exc), "permanent")
        ctx = ExecutionContext.from_request(
            request, payload, heartbeat=lambda: lease.heartbeat(manual=True)
        )
        run.started = self.clock.now()
        run.limit = run_limit(request, run.job_type, self.max_run_seconds)
        run.task = asyncio.ensure_future(run.job_type.handler(ctx))
        lease.run_deadline = run.started + run.limit

        def overran(_lease: AttemptLease) -> None:
            # Called on the heartbeat thread: the ending is decided on the loop's.
            self._loop.call_soon_threadsafe(self._overran, run, ctx)

        lease.on_overrun = overran
        # A cancel request sets the signal from the control thread; the handler sees it on
        # ctx.cancelled or awaits ctx.cancel_event through a thread, as a thread's handler does.
        self.cancels.started(request["execution_id"], ctx.cancel_event)
        self.heartbeats.add(lease)
        result: Any = None
        failure: Outcome | None = None
        try:
            result = await run.task
        except BaseException as exc:  # failures are data, as on the thread path
            failure = handler_failure(exc)
        finally:
            self.heartbeats.remove(lease)
            self.cancels.finished(request["execution_id"], ctx.cancel_event)
        duration_ms = int((self.clock.now() - run.started) * 1000)
        return handler_outcome(
            ctx, result, failure, duration_ms, lambda: self.cancels.reason(request["execution_id"])
        )

    def _overran(self, run: _AsyncRun, ctx: ExecutionContext) -> None:
        """Past its run limit: fail the attempt as retryable, free its slot, cancel its task."""
        if not run.end():
            return  # the handler returned first
        assert run.lease is not None and run.task is not None
        ctx.cancel_event.set()
        run.task.cancel()
        ran_ms = int((self.clock.now() - run.started) * 1000)
        run.lease.finish(
            Outcome.failed(
                f"the attempt exceeded its max run time of {run.limit:g}s and was failed so it "
                "can be retried; its task was cancelled (raise the job's maxRunTime or the "
                "type's max_run_seconds if it needs longer)",
                "retryable",
                reason=OVERRUN_REASON,
                duration_ms=ran_ms,
                max_run_seconds=run.limit,
            )
        )
        self.overrun_count += 1
        log.warning(
            "attempt overran its max run time; its task is cancelled",
            extra={"action": "execution_overran", "execution_id": run.request["execution_id"],
                   "attempt": run.request["attempt"], "max_run_seconds": run.limit,
                   "duration_ms": ran_ms},
        )  # fmt: skip
        run.on_done()
