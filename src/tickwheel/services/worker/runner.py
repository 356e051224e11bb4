"""Running attempts on a lane's slots: lease, handler, outcome, and the maximum run time.

No Kafka here (events go to an `EventSink`), so units drive it with an in-memory sink and a
fake clock. An attempt ends once, whichever comes first: its handler returns, or it runs past
its maximum run time. In the second case the attempt is failed as retryable, its
cancellation signal is set, and its slot is given back at once. Python cannot kill a thread,
so the handler's thread is left to finish on its own: it no longer counts against the
pool, a fresh thread takes its place, and it exits when (if ever) its handler returns.
"""

from __future__ import annotations

import logging
import queue as queues
import threading
from collections.abc import Callable
from typing import Any

from tickwheel.clock import Clock
from tickwheel.records import ExecutionRequest
from tickwheel.sdk.worker import HandlerRegistry, UnknownJobType
from tickwheel.services.worker.attempt import DeliveryCallback, EventSink, run_handler
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.events import Outcome
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lifecycle import OVERRUN_REASON, AttemptRun, AttemptServices

log = logging.getLogger("tickwheel.worker")

__all__ = ["NO_HANDLER_REASON", "OVERRUN_REASON", "AttemptRunner", "SlotPool"]

NO_HANDLER_REASON = "no_handler"


class SlotPool:
    """Fixed daemon threads running the attempts of one lane. Daemon, so that a worker past
    its shutdown grace can exit while a handler still runs (its lease then expires)."""

    def __init__(self, size: int, name: str) -> None:
        self._name = name
        self._tasks: queues.SimpleQueue[Callable[[], None] | None] = queues.SimpleQueue()
        self._lock = threading.Lock()
        self._retiring: set[threading.Thread] = set()
        self._serial = size
        for i in range(size):
            self._spawn(f"{name}-{i}")

    def _spawn(self, name: str) -> None:
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def submit(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)

    def abandon(self, thread: threading.Thread) -> None:
        """`thread` is stuck in a task that overran: start a thread in its place, and let it
        end once its task returns, so the pool keeps its size."""
        with self._lock:
            self._retiring.add(thread)
            self._serial += 1
            name = f"{self._name}-{self._serial}"
        self._spawn(name)

    @property
    def abandoned(self) -> int:
        """Threads still stuck in an overrun task."""
        with self._lock:
            return len(self._retiring)

    def _work(self) -> None:
        me = threading.current_thread()
        while (task := self._tasks.get()) is not None:
            task()
            with self._lock:
                if me in self._retiring:
                    self._retiring.discard(me)
                    return

    def shutdown(self, size: int) -> None:
        for _ in range(size):
            self._tasks.put(None)


class AttemptRunner:
    """Runs attempts on `capacity` threads. `submit` hands one over with `on_leased` (the
    `leased` event's delivery) and `on_done` (called once, when its slot is free again)."""

    def __init__(
        self,
        capacity: int,
        name: str,
        *,
        registry: HandlerRegistry,
        sink: EventSink,
        cancels: CancelRegistry,
        heartbeats: HeartbeatScheduler,
        clock: Clock,
        worker_id: str,
        max_run_seconds: float,
        on_fatal: Callable[[str], None],
        priority: str = "",
    ) -> None:
        self.capacity = capacity
        self.registry = registry
        self.sink = sink
        self.cancels = cancels
        self.heartbeats = heartbeats
        self.clock = clock
        self.worker_id = worker_id
        self.max_run_seconds = max_run_seconds
        self.on_fatal = on_fatal
        self.priority = priority
        self.services = AttemptServices(
            sink, cancels, heartbeats, clock, worker_id, max_run_seconds
        )
        self.started_count = 0
        self.overrun_count = 0
        self._pool = SlotPool(capacity, name)

    @property
    def abandoned(self) -> int:
        """Handler threads still running past their attempt's limit (not counted as slots)."""
        return self._pool.abandoned

    def submit(
        self,
        request: ExecutionRequest,
        *,
        on_leased: DeliveryCallback,
        on_done: Callable[[], None],
        extra: dict[str, Any] | None = None,
    ) -> None:
        name = request["job_type"]
        job_type = self.registry.get(name) if name in self.registry else None
        run = AttemptRun(request, job_type, self.services, on_done)
        self._pool.submit(lambda: self._execute(run, on_leased, extra or {}))

    def shutdown(self) -> None:
        self._pool.shutdown(self.capacity)

    def _ids(self, request: ExecutionRequest) -> dict[str, Any]:
        return {
            "execution_id": request["execution_id"],
            "job_id": request["job_id"],
            "attempt": request["attempt"],
            "job_type": request["job_type"],
            "tenant_id": request["tenant_id"],
            "priority": self.priority,
        }

    def _execute(self, run: AttemptRun, on_leased: DeliveryCallback, extra: dict[str, Any]) -> None:
        thread = threading.current_thread()
        ended_here = False
        try:
            lease = run.open(on_leased)
            self.started_count += 1
            log.debug(
                "execution started",
                extra={
                    "action": "execution_started",
                    **self._ids(run.request),
                    "lease_deadline": lease.deadline_ms,
                    **extra,
                },
            )
            outcome = self._outcome(run, thread)
            if run.end():
                ended_here = True
                lease.finish(outcome)
                # DEBUG: a line per execution is not on the hot path; the history is the record.
                log.debug(
                    f"execution {outcome.event_type}",
                    extra={
                        "action": f"execution_{outcome.event_type}",
                        **self._ids(run.request),
                        "error": outcome.error,
                        "error_kind": outcome.error_kind,
                        "heartbeats": lease.heartbeats,
                        "duration_ms": outcome.details.get("duration_ms"),
                    },
                )
            else:
                log.warning(
                    "handler returned after its attempt was failed for overrunning",
                    extra={
                        "action": "overrun_handler_returned",
                        **self._ids(run.request),
                        "ignored_outcome": outcome.event_type,
                        "ran_s": round(self.clock.now() - run.started, 3),
                    },
                )
        except Exception as exc:  # the lane must outlive any bug in one attempt
            log.exception("attempt crashed", extra={"action": "attempt_crashed"})
            self.on_fatal(f"attempt of {run.request['execution_id']} crashed: {exc}")
        finally:
            if run.end() or ended_here:
                run.on_done()

    def _outcome(self, run: AttemptRun, thread: threading.Thread) -> Outcome:
        if run.job_type is None:
            return self._no_handler(run.request)
        ctx = run.context()
        if isinstance(ctx, Outcome):
            return ctx
        with run.watched(lambda _lease: self._overran(run, thread)):
            return run_handler(run.job_type, ctx, self.clock, run.cancel_reason)

    def _no_handler(self, request: ExecutionRequest) -> Outcome:
        """A type this worker lacks is not the job's fault: a worker of an older release in
        a rolling deploy, or one narrowed with --types, shares the group with workers that
        have it. Retryable, so the execution is offered again rather than dead-lettered."""
        unknown = UnknownJobType(request["job_type"], self.registry.names())
        log.warning(
            "no handler for this job type here",
            extra={"action": "no_handler", **self._ids(request), "handles": list(unknown.known)},
        )
        return Outcome.failed(
            f"{unknown} (worker {self.worker_id}); failed as retryable so that a worker "
            "with this handler can run it",
            "retryable",
            reason=NO_HANDLER_REASON,
            handles=list(unknown.known),
        )

    def _overran(self, run: AttemptRun, thread: threading.Thread) -> None:
        """Called by the heartbeat thread once the attempt is past its limit (heartbeats for
        it have stopped): fail it as retryable and give its slot back, even if the handler
        never returns."""
        if not run.end():
            return  # the handler returned first
        outcome = run.overrun("its handler was signalled to cancel")
        self.overrun_count += 1
        self._pool.abandon(thread)
        log.warning(
            "attempt overran its max run time; its slot is freed, its thread left to finish",
            extra={
                "action": "execution_overran",
                **self._ids(run.request),
                "max_run_seconds": run.limit,
                "duration_ms": outcome.details["duration_ms"],
                "abandoned_threads": self._pool.abandoned,
            },
        )
        run.on_done()
