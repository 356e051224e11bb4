"""Testing workflows written as code, without Kafka: a local runner on a fake clock, and a
replay helper for recorded histories (docs/workflows-code.md).

    from tickwheel.clock import FakeClock
    from tickwheel.sdk.workflow_testing import WorkflowRunner, replay_history

    async def test_an_order_is_captured_after_approval() -> None:
        runner = WorkflowRunner(process_order)        # steps run in-process
        order_id = await runner.start(process_order, {"id": "o-1"})
        await runner.advance("24h")                   # milliseconds: the clock is fake
        await runner.signal(order_id, "approval", {"ok": True})
        assert await runner.result(order_id) == {...}

    def test_production_histories_still_replay() -> None:
        replay_history(process_order, "tests/histories/order-1.json")   # raises Divergence

The runner uses the same replay engine as the services: each input (a step's outcome, a timer
firing, a signal, a cancel) is recorded in the instance's history and fed to the instance, and
the commands it answers with are carried out here: steps run at once (with their retry policy:
a failed attempt is retried after its full-jitter delay, on the fake clock), timers wait on the
fake clock, which jumps to the next one (`run_until_idle`) or moves by hand (`advance`). When an
instance ends, its whole history is replayed from scratch against the code, so a workflow that
is not deterministic fails its own test.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickwheel.clock import FakeClock
from tickwheel.core.codeflow import (
    Activation,
    HistoryEvent,
    WorkflowRun,
    WorkflowSpec,
    duration_ms,
    events_from_json,
    events_to_json,
    replay,
    step_info_of,
    workflow_spec_of,
)
from tickwheel.core.codeflow.history import JsonObject, as_data
from tickwheel.core.retry import ErrorKind, decide_retry
from tickwheel.errors import TickwheelError
from tickwheel.sdk.code_workflows import fails_permanently

__all__ = [
    "WorkflowNotCompleted",
    "WorkflowRunner",
    "load_history",
    "replay_history",
]


class WorkflowNotCompleted(TickwheelError, RuntimeError):
    """`WorkflowRunner.result` of an instance that did not complete: `status` (failed,
    cancelled, parked, running...), its `error`, and what it waits on."""

    def __init__(self, workflow_id: str, activation: Activation) -> None:
        waiting = ", ".join(activation.waiting_on) or "nothing"
        detail = f": {activation.error}" if activation.error else f"; waiting on {waiting}"
        super().__init__(f"workflow {workflow_id} is {activation.status}{detail}")
        self.workflow_id = workflow_id
        self.status = activation.status
        self.error = activation.error
        self.waiting_on = activation.waiting_on


@dataclass(slots=True)
class _Instance:
    workflow_id: str
    spec: WorkflowSpec
    run: WorkflowRun
    history: list[HistoryEvent]
    activation: Activation
    parent: tuple[str, int] | None = None
    earlier_runs: list[list[HistoryEvent]] = field(default_factory=list)
    commands: dict[int, HistoryEvent] = field(default_factory=dict)
    cancelled_timers: set[int] = field(default_factory=set)


class WorkflowRunner:
    """Runs code workflows in this process on a fake clock: start, signal, cancel, advance
    time, read the status and the history. Steps run in-process with their retry policy."""

    def __init__(
        self,
        *workflows: object,
        clock: FakeClock | None = None,
        seed: int = 0,
        replay_check: bool = True,
    ) -> None:
        self.clock = clock or FakeClock()
        self._workflows: dict[str, WorkflowSpec] = {}
        for item in workflows:
            self.register(item)
        self._instances: dict[str, _Instance] = {}
        self._due: list[tuple[int, int, str, str, int, int]] = []
        self._order = itertools.count()
        self._ids = itertools.count(1)
        self._rng = random.Random(seed)
        self._seed = seed
        self._replay_check = replay_check

    def register(self, workflow: object) -> WorkflowSpec:
        """Make a workflow startable by name (as a child, for one)."""
        spec = workflow_spec_of(workflow)
        self._workflows[spec.name] = spec
        return spec

    # -- driving instances -------------------------------------------------------------------

    async def start(
        self, workflow: object, input: Any = None, *, workflow_id: str | None = None
    ) -> str:
        """Start an instance and run it until it waits on time, a signal or nothing."""
        spec = self.register(workflow)
        workflow_id = workflow_id or f"{spec.name}-{next(self._ids)}"
        if workflow_id in self._instances:
            raise ValueError(f"workflow instance {workflow_id!r} exists already")
        self._begin(spec, workflow_id, as_data(input, "a workflow input"), 1, None)
        await self._drain()
        return workflow_id

    async def execute(
        self, workflow: object, input: Any = None, *, workflow_id: str | None = None
    ) -> Any:
        """Start an instance, run it to its end (jumping the clock from timer to timer), and
        return its result; raises `WorkflowNotCompleted` if it fails or waits on a signal."""
        workflow_id = await self.start(workflow, input, workflow_id=workflow_id)
        await self.run_until_idle()
        return await self.result(workflow_id)

    async def signal(
        self, workflow_id: str, name: str, payload: Any = None, *, signal_id: str | None = None
    ) -> None:
        """Send signal `name` (buffered if the code does not wait for it yet; a `signal_id`
        seen before counts once)."""
        instance = self._instance(workflow_id)
        data = {
            "signal_id": signal_id or f"signal-{next(self._ids)}",
            "payload": as_data(payload, "a signal payload"),
        }
        self._input(instance, HistoryEvent("signal_received", self._now_ms(), None, name, data))
        await self._drain()

    async def cancel(self, workflow_id: str, reason: str = "cancelled by the test") -> None:
        """Request cancellation: the code sees `CancelledError` where it waits, and the
        rollbacks run (unless the workflow opted out)."""
        instance = self._instance(workflow_id)
        event = HistoryEvent("cancel_requested", self._now_ms(), data={"reason": reason})
        self._input(instance, event)
        await self._drain()

    async def advance(self, duration: str | Any) -> None:
        """Move the fake clock by `duration` ("24h", a timedelta), firing what falls due in
        order, each at its own time."""
        target = self._now_ms() + duration_ms(duration)
        self._prune()
        while self._due and self._due[0][0] <= target:
            self._move_to(self._due[0][0])
            await self._drain()
        self._move_to(target)
        await self._drain()

    async def run_until_idle(self, max_turns: int = 100_000) -> None:
        """Run until nothing is due: the clock jumps to each next timer or retry."""
        for _ in range(max_turns):
            await self._drain()
            if not self._due:
                return
            self._move_to(self._due[0][0])
        raise RuntimeError(
            f"still busy after {max_turns} clock jumps (a workflow that never ends?)"
        )

    # -- reading instances -------------------------------------------------------------------

    def status(self, workflow_id: str) -> Activation:
        """The instance's latest activation: `status`, `waiting_on`, `result`, `error`."""
        return self._instance(workflow_id).activation

    def query(self, workflow_id: str) -> Any:
        """The status the workflow code published with `ctx.set_status` (read-only)."""
        return self._instance(workflow_id).activation.query

    async def result(self, workflow_id: str) -> Any:
        """The result of a completed instance; raises `WorkflowNotCompleted` otherwise."""
        activation = self._instance(workflow_id).activation
        if activation.status != "completed":
            raise WorkflowNotCompleted(workflow_id, activation)
        return activation.result

    def history(self, workflow_id: str, run: int | None = None) -> list[HistoryEvent]:
        """The history of the instance's current run (or of run number `run`)."""
        instance = self._instance(workflow_id)
        runs = [*instance.earlier_runs, instance.history]
        return list(runs[-1] if run is None else runs[run - 1])

    def export(self, workflow_id: str) -> list[JsonObject]:
        """The current run's history as JSON data (what `replay_history` reads back)."""
        return events_to_json(self.history(workflow_id))

    # -- the machinery -----------------------------------------------------------------------

    def _now_ms(self) -> int:
        return round(self.clock.now() * 1000)

    def _move_to(self, at_ms: int) -> None:
        if at_ms > self._now_ms():
            self.clock.set(at_ms / 1000)

    def _instance(self, workflow_id: str) -> _Instance:
        instance = self._instances.get(workflow_id)
        if instance is None:
            known = ", ".join(sorted(self._instances)) or "(none)"
            raise LookupError(f"no workflow instance {workflow_id!r}; started here: {known}")
        return instance

    def _begin(
        self,
        spec: WorkflowSpec,
        workflow_id: str,
        input: Any,
        run: int,
        parent: tuple[str, int] | None,
    ) -> _Instance:
        started = HistoryEvent(
            "workflow_started",
            self._now_ms(),
            name=spec.name,
            data={
                "workflow_id": workflow_id,
                "run": run,
                "input": input,
                "seed": f"{self._seed}:{workflow_id}:{run}",
            },
        )
        engine = WorkflowRun(spec)
        activation = engine.feed([started])
        instance = _Instance(workflow_id, spec, engine, [started], activation, parent)
        self._instances[workflow_id] = instance
        self._apply(instance, activation)
        return instance

    def _input(self, instance: _Instance, event: HistoryEvent) -> None:
        if instance.activation.ended:
            return
        instance.history.append(event)
        self._apply(instance, instance.run.feed([event]))

    def _apply(self, instance: _Instance, activation: Activation) -> None:
        instance.history.extend(activation.commands)
        instance.run.feed(activation.commands)  # recorded: the run matches its own commands
        instance.activation = activation
        for command in activation.commands:
            if command.position is not None:
                instance.commands[command.position] = command
            self._carry_out(instance, command)
        if activation.ended:
            self._ended(instance, activation)

    def _push(
        self, due_ms: int, action: str, workflow_id: str, position: int, attempt: int
    ) -> None:
        heapq.heappush(
            self._due, (due_ms, next(self._order), action, workflow_id, position, attempt)
        )

    def _carry_out(self, instance: _Instance, command: HistoryEvent) -> None:
        position = command.position or 0
        data = command.data
        if command.type == "step_scheduled":
            self._push(self._now_ms(), "step", instance.workflow_id, position, 1)
        elif command.type in ("timer_started", "signal_wait_started"):
            if data.get("fire_at_ms") is not None:
                self._push(int(data["fire_at_ms"]), "timer", instance.workflow_id, position, 0)
        elif command.type == "timer_cancelled":
            instance.cancelled_timers.add(int(data["timer"]))
        elif command.type == "child_started":
            spec = self._workflows.get(str(command.name))
            if spec is None:
                known = ", ".join(sorted(self._workflows))
                raise LookupError(
                    f"child workflow {command.name!r} is not registered with this runner; "
                    f"registered: {known}"
                )
            self._begin(
                spec, str(data["child_id"]), data.get("input"), 1, (instance.workflow_id, position)
            )

    def _ended(self, instance: _Instance, activation: Activation) -> None:
        if self._replay_check:
            again = replay(instance.spec, instance.history)  # raises Divergence
            if again.status != activation.status:
                raise AssertionError(
                    f"workflow {instance.workflow_id} replayed from its history ends "
                    f"{again.status}, but ran to {activation.status}"
                )
        if activation.status == "continued_as_new":
            instance.earlier_runs.append(instance.history)
            run = len(instance.earlier_runs) + 1
            del self._instances[instance.workflow_id]
            successor = self._begin(
                instance.spec, instance.workflow_id, activation.continue_input, run, instance.parent
            )
            successor.earlier_runs = instance.earlier_runs
            return
        if instance.parent is not None:
            parent_id, position = instance.parent
            parent = self._instances.get(parent_id)
            if parent is not None:
                if activation.status == "completed":
                    answer = HistoryEvent(
                        "child_completed",
                        self._now_ms(),
                        position,
                        data={"result": activation.result},
                    )
                else:
                    error = activation.error or activation.status
                    answer = HistoryEvent(
                        "child_failed", self._now_ms(), position, data={"error": error}
                    )
                self._input(parent, answer)

    def _prune(self) -> None:
        """Drop what is due for nothing (an ended instance, a cancelled timer), so the clock
        never jumps to it."""
        while self._due:
            _, _, action, workflow_id, position, _ = self._due[0]
            instance = self._instances.get(workflow_id)
            if (
                instance is not None
                and not instance.activation.ended
                and not (action == "timer" and position in instance.cancelled_timers)
            ):
                return
            heapq.heappop(self._due)

    async def _drain(self) -> None:
        self._prune()
        while self._due and self._due[0][0] <= self._now_ms():
            _, _, action, workflow_id, position, attempt = heapq.heappop(self._due)
            instance = self._instances.get(workflow_id)
            if instance is None or instance.activation.ended:
                continue
            if action == "timer":
                if position not in instance.cancelled_timers:
                    self._input(instance, HistoryEvent("timer_fired", self._now_ms(), position))
            else:
                await self._run_step(instance, position, attempt)
            self._prune()

    async def _run_step(self, instance: _Instance, position: int, attempt: int) -> None:
        command = instance.commands[position]
        fn = instance.run.step_callable(position)
        if fn is None:
            raise LookupError(f"no function for {command.name!r} at position {position}")
        info = step_info_of(fn, command.name)
        not_data = False
        try:
            value = fn(*command.data.get("input", []))
            if inspect.isawaitable(value):
                timeout = None if info.timeout_ms is None else info.timeout_ms / 1000
                value = await asyncio.wait_for(_awaited(value), timeout)
            try:
                result = as_data(value, f"the result of step {command.name!r}")
            except TypeError:
                not_data = True  # the same on every attempt: not worth retrying
                raise
        except Exception as exc:
            permanent = not_data or fails_permanently(exc, info)
            kind: ErrorKind = "permanent" if permanent else "retryable"
            if isinstance(exc, TimeoutError):
                text = f"TimeoutError: the attempt ran past its timeout of {info.timeout_ms} ms"
            else:
                text = f"{type(exc).__name__}: {exc}"
            decision = decide_retry(info.retry, attempt, kind, self._rng)
            if decision.action == "retry":
                delay = int(decision.delay_ms or 0)
                self._push(
                    self._now_ms() + delay, "step", instance.workflow_id, position, attempt + 1
                )
                return
            data = {
                "error": text,
                "error_kind": kind,
                "attempts": attempt,
                "reason": decision.reason,
            }
            event = HistoryEvent("step_failed", self._now_ms(), position, command.name, data)
            self._input(instance, event)
            return
        data = {"result": result, "attempts": attempt}
        self._input(
            instance, HistoryEvent("step_completed", self._now_ms(), position, command.name, data)
        )


async def _awaited(value: Any) -> Any:
    return await value


def load_history(
    source: str | Path | Mapping[str, Any] | Iterable[Mapping[str, Any]],
) -> list[HistoryEvent]:
    """A recorded history: a JSON file (a list of events, or an object with `events`), or
    the events as JSON data (`WorkflowRunner.export`, `tickwheel workflows export ID`)."""
    if isinstance(source, str | Path):
        raw: Any = json.loads(Path(source).read_text(encoding="utf-8"))
    elif isinstance(source, Mapping):
        raw = source
    else:
        raw = list(source)
    if isinstance(raw, Mapping):
        raw = raw.get("events", raw.get("history"))
    if not isinstance(raw, list):
        raise ValueError("a history is a JSON list of events (or an object with 'events')")
    return events_from_json(raw)


def replay_history(
    workflow: object, history: str | Path | Iterable[Mapping[str, Any]] | list[HistoryEvent]
) -> Activation:
    """Replay a recorded history against the workflow's current code: returns what the code
    would do next, or raises `Divergence` naming the step and the history position (a pytest
    test that calls it fails with that message)."""
    events = (
        history
        if isinstance(history, list) and all(isinstance(e, HistoryEvent) for e in history)
        else load_history(history)  # type: ignore[arg-type]
    )
    return replay(workflow, events)
