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
from typing import Any

from tickwheel.clock import Clock
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import JobType
from tickwheel.services.worker.attempt import (
    AttemptLease,
    DeliveryCallback,
    EventSink,
    handler_failure,
    handler_outcome,
)
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.events import Outcome
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lifecycle import AttemptRun, AttemptServices

log = logging.getLogger("tickwheel.worker")


def is_async(job_type: JobType | None) -> bool:
    return job_type is not None and inspect.iscoroutinefunction(job_type.handler)


class _AsyncRun(AttemptRun):
    """One attempt on the loop: the shared lifecycle, plus the task its handler runs as."""

    task: asyncio.Future[Any] | None = None


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
        self.services = AttemptServices(
            sink, cancels, heartbeats, clock, worker_id, max_run_seconds
        )
        self.started_count = 0
        self.overrun_count = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(
        self,
        request: ExecutionRequest,
        job_type: JobType,
        *,
        on_leased: DeliveryCallback,
        on_done: Callable[[], None],
    ) -> Future[None]:
        run = _AsyncRun(request, job_type, self.services, on_done)
        return asyncio.run_coroutine_threadsafe(self._execute(run, on_leased), self._loop)

    def shutdown(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _execute(self, run: _AsyncRun, on_leased: DeliveryCallback) -> None:
        try:
            lease = run.open(on_leased)
            self.started_count += 1
            outcome = await self._outcome(run)
            if run.end():
                lease.finish(outcome)
                run.on_done()
        except Exception as exc:  # the loop must outlive any bug in one attempt
            log.exception("attempt crashed", extra={"action": "attempt_crashed"})
            self.on_fatal(f"attempt of {run.execution_id} crashed: {exc}")
            if run.end():
                run.on_done()

    async def _outcome(self, run: _AsyncRun) -> Outcome:
        assert run.job_type is not None
        ctx = run.context()
        if isinstance(ctx, Outcome):
            return ctx

        def overran(_lease: AttemptLease) -> None:
            # Called on the heartbeat thread: the ending is decided on the loop's.
            self._loop.call_soon_threadsafe(self._overran, run)

        result: Any = None
        failure: Outcome | None = None
        # A cancel request sets the signal from the control thread; the handler sees it on
        # ctx.cancelled or awaits ctx.cancel_event through a thread, as a thread's handler does.
        with run.watched(overran):
            run.task = asyncio.ensure_future(run.job_type.handler(ctx))
            try:
                result = await run.task
            except BaseException as exc:  # failures are data, as on the thread path
                failure = handler_failure(exc)
        return handler_outcome(ctx, result, failure, run.ran_ms(), run.cancel_reason)

    def _overran(self, run: _AsyncRun) -> None:
        """Past its run limit: fail the attempt as retryable, free its slot, cancel its task."""
        if not run.end():
            return  # the handler returned first
        assert run.task is not None
        run.task.cancel()
        outcome = run.overrun("its task was cancelled")
        self.overrun_count += 1
        log.warning(
            "attempt overran its max run time; its task is cancelled",
            extra={
                "action": "execution_overran",
                "execution_id": run.execution_id,
                "attempt": run.request["attempt"],
                "max_run_seconds": run.limit,
                "duration_ms": outcome.details["duration_ms"],
            },
        )
        run.on_done()
