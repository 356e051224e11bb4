"""The worker process: one lane per priority, one heartbeat thread, one control listener, one
event producer. It records leases, heartbeats and outcomes; the timer that owns each job
decides what they mean (deadlines, retries, fencing, dead letters)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import threading
from typing import Any, NoReturn

from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.clock import Clock, SystemClock
from tickwheel.errors import InvalidInput
from tickwheel.jobtypes import builtin_registry
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import KAFKA_BUDGET_S, ShutdownDeadline, serve
from tickwheel.sdk import worker as sdk
from tickwheel.sdk.worker import HandlerRegistry
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.services.environment import log_level, service_parser
from tickwheel.services.worker.code_workflows import (
    CodeWorkflowRegistry,
    CodeWorkflows,
    is_code_job_type,
    publish_definitions,
    resume_parked,
)
from tickwheel.services.worker.control import CancelRegistry, ControlListener
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lane import PriorityLane
from tickwheel.services.worker.publisher import EventPublisher
from tickwheel.services.worker.settings import (
    WorkerSettings,
    settings_from_args,
)

log = logging.getLogger("tickwheel.worker")


def build_registry(settings: WorkerSettings) -> HandlerRegistry:
    """Built-ins plus the `@job` handlers of `settings.modules`, narrowed to `settings.types`;
    with modules, their code workflows' and steps' job types too (decision 0217)."""
    sdk.load_modules(settings.modules)
    # `workflow:`/`code:` names are resolved from the modules, not registered: `--types`
    # narrows the registered ones.
    types = (
        None
        if settings.types is None
        else [name for name in settings.types if not is_code_job_type(name)]
    )
    registered = builtin_registry().merged(sdk.registry).only(types)
    if not settings.modules:
        return registered
    code = CodeWorkflows.load(settings.modules, settings.workflow_cache)
    return CodeWorkflowRegistry(registered, code)


class WorkerService:
    def __init__(
        self,
        settings: WorkerSettings,
        registry: HandlerRegistry | None = None,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
    ) -> None:
        self.settings = settings
        # Set by the process entry point only: past it, a stop gives up and the process exits.
        self.deadline = deadline
        self.clock = clock or SystemClock()
        self.registry = registry if registry is not None else build_registry(settings)
        self.cancels = CancelRegistry(settings.cancel_memory)
        self.heartbeats = HeartbeatScheduler(self.clock)
        self.dead_letters = DeadLetterWriter(settings.bootstrap, self.clock)
        self.exit_code = 0
        self._stopping = threading.Event()
        self.publisher: EventPublisher | None = None
        self.control: ControlListener | None = None
        self.lanes: list[PriorityLane] = []

    def run(self) -> int:
        """Serve until `stop()` (SIGTERM/SIGINT) or a fatal error; returns the exit code."""
        verify_topology(bootstrap=self.settings.bootstrap)
        self._publish_code_definitions()
        self.publisher = EventPublisher(self.settings.bootstrap)
        self.control = ControlListener(
            self.cancels,
            self.clock,
            bootstrap=self.settings.bootstrap,
            lookback_s=self.settings.cancel_lookback_s,
            dead_letters=self.dead_letters,
        )
        # Cancellations known at start-up are read before any request is taken.
        self.control.start()
        if self._stopping.is_set():  # stopped while starting: no lane has taken anything yet
            self._shutdown()
            return self.exit_code
        self.heartbeats.start()
        for priority in self.settings.priorities:
            lane = PriorityLane(
                priority,
                self.settings,
                registry=self.registry,
                sink=self.publisher,
                cancels=self.cancels,
                heartbeats=self.heartbeats,
                dead_letters=self.dead_letters,
                clock=self.clock,
                on_fatal=self.fail,
            )
            self.lanes.append(lane)
            lane.start()
        log.info(
            "worker started",
            extra={
                "action": "worker_started",
                "worker_id": self.settings.worker_id,
                "types": list(self.registry.names()),
                "priorities": list(self.settings.priorities),
                "concurrency": self.settings.concurrency,
                "group": self.settings.group_id,
            },
        )
        while not self._stopping.wait(0.5):
            pass
        self._shutdown()
        return self.exit_code

    def _publish_code_definitions(self) -> None:
        """Before any task is taken, the definitions topic holds a version of each loaded
        code workflow whose `codeVersion` is the code this worker runs."""
        if not isinstance(self.registry, CodeWorkflowRegistry) or not self.registry.code.workflows:
            return
        client = WorkflowsClient(self.settings.bootstrap, self.clock)
        try:
            actor = self.settings.worker_id
            published = publish_definitions(self.registry.code, client, actor=actor)
            if published:
                resume_parked(client, (d.definition_id for d in published), actor)
        finally:
            client.close()

    def stop(self, *_args: Any) -> None:
        self._stopping.set()
        if self.deadline is not None:
            # The longest a stop may need (handlers still running); `_shutdown` tightens it.
            self.deadline.arm(self.settings.shutdown_grace_s + KAFKA_BUDGET_S)

    def fail(self, reason: str) -> None:
        """Stop with a non-zero exit: the supervisor restarts us and Kafka redelivers every
        request whose lease was not acknowledged."""
        log.error("worker failing", extra={"action": "worker_failed", "reason": reason})
        self.exit_code = 1
        self.stop()

    def _remaining(self, at_most: float) -> float:
        return min(at_most, self.deadline.remaining()) if self.deadline else at_most

    def _shutdown(self) -> None:
        running = sum(lane.running_count for lane in self.lanes)
        log.info("worker stopping", extra={"action": "worker_stopping", "running": running})
        if self.deadline is not None:
            # The grace is for handlers; with none running, only Kafka's share is left.
            grace = self.settings.shutdown_grace_s if running else 0.0
            self.deadline.arm(grace + KAFKA_BUDGET_S)
        for lane in self.lanes:
            lane.stop()
        for lane in self.lanes:
            lane.join(self._remaining(self.settings.shutdown_grace_s + 15))
        self.heartbeats.stop()
        if self.control is not None:
            self.control.stop()
        if self.publisher is not None:
            self.publisher.close(self._remaining(10))
        code = self.registry.code if isinstance(self.registry, CodeWorkflowRegistry) else None
        log.info(
            "worker stopped",
            extra={
                "action": "worker_stopped",
                "started": sum(lane.started_count for lane in self.lanes),
                # How often workflow tasks found their run live (hits) or replayed it.
                **({"workflow_cache": dataclasses.asdict(code.stats)} if code else {}),
            },
        )


def main(argv: list[str] | None = None) -> None:
    parser = service_parser(
        WorkerSettings,
        "tickwheel.services.worker",
        description="A tickwheel worker: runs execution requests with the registered handlers.",
    )
    args = parser.parse_args(argv)
    try:
        run_from_args(args)
    except InvalidInput as exc:
        print(f"tickwheel worker: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def run_from_args(args: argparse.Namespace) -> NoReturn:
    """Run a worker process from parsed `add_worker_arguments` flags, and exit with its code
    (past a stop's deadline, or once stopped: nothing left may hold the process up). A bad
    setting raises InvalidInput before anything starts."""
    settings = settings_from_args(args)
    configure_logging(log_level(settings.log_level))
    serve(
        log,
        "worker",
        lambda deadline: WorkerService(settings, deadline=deadline),
        on_main_thread=threading.current_thread() is threading.main_thread(),
    )
