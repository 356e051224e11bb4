"""The replay engine: a workflow function, run from the top against its history.

    run = WorkflowRun(process_order)
    activation = run.feed(history)        # replays, then says what the code wants next
    activation.commands                   # new events to record: steps, timers, the end...

The history's **inputs** are delivered one at a time, in order, and the code runs on a
`DeterministicLoop` until it waits on something only a later input can answer. The same
history therefore drives the same code down the same path, whether it arrives at once (a full
replay) or one input per call (a live instance kept in a cache): `feed` takes either.

The **commands** the code issues (a step, a timer, a recorded `now()`...) are matched in order
against the commands the history recorded: kind, name and input are compared, and a recorded
value (a step's result, `now()`) is handed back. The first difference raises `Divergence`
naming the workflow, the step and the history position; a recorded command the code no
longer issues does too. Commands beyond the recorded ones are new: they are returned, and the
caller records them (and feeds them back, or not if it replays from scratch next time).

A history that ends (`workflow_completed`, ...) is compared up to its end: what new code would
do after that end is not a divergence, since that run will never continue.

Nothing here reads a clock, draws randomness or does I/O: the workflow's time is the `at_ms`
of the last input delivered, and `random()`/`uuid4()` derive from the run's recorded seed and
the command's position (and are recorded anyway).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tickwheel.core.codeflow.context import WorkflowContext
from tickwheel.core.codeflow.errors import (
    ChildFailed,
    ContinueAsNew,
    Divergence,
    NondeterministicCall,
    StepFailed,
)
from tickwheel.core.codeflow.history import ENDINGS, HistoryEvent, JsonObject, as_data, digest
from tickwheel.core.codeflow.loop import DeterministicLoop, Guard
from tickwheel.core.codeflow.spec import (
    WORKFLOW_ATTRIBUTE,
    StepInfo,
    WorkflowSpec,
    step_info_of,
    workflow_spec_of,
)
from tickwheel.durations import format_duration_ms

__all__ = ["STATUS_BY_ENDING", "Activation", "WorkflowRun", "describe", "replay"]

# The data keys compared on replay, per command type (the rest is recorded, not compared:
# a step's retry options may change, a recorded value is handed back).
_COMPARED: dict[str, tuple[str, ...]] = {
    "step_scheduled": ("digest", "compensation"),
    "timer_started": ("duration_ms", "until_ms"),
    "signal_wait_started": ("timeout_ms",),
    "timer_cancelled": ("timer",),
    "side_effect_recorded": (),
    "patch_marker": (),
    "rollback_registered": ("digest",),
    "child_started": ("digest", "child_id"),
    "workflow_parked": (),
}
STATUS_BY_ENDING = {
    "workflow_completed": "completed",
    "workflow_failed": "failed",
    "workflow_cancelled": "cancelled",
    "continued_as_new": "continued_as_new",
}


def describe(event: HistoryEvent) -> str:
    """A command as a person reads it in an error: `step 'authorize'#1`, `timer 24h`."""
    data, name = event.data, event.name
    kind = event.type
    if kind == "step_scheduled":
        what = "compensation" if data.get("compensation") else "step"
        return f"{what} {name!r}#{data.get('occurrence', '?')}"
    if kind == "timer_started":
        if data.get("until_ms") is not None:
            return f"timer until {data['until_ms']} ms"
        return f"timer {format_duration_ms(int(data.get('duration_ms') or 0))}"
    if kind == "signal_wait_started":
        return f"wait for signal {name!r}"
    if kind == "timer_cancelled":
        return f"cancel of timer at position {data.get('timer')}"
    if kind == "side_effect_recorded":
        return f"ctx.{name}()"
    if kind == "patch_marker":
        return f"patch {name!r}"
    if kind == "rollback_registered":
        return f"rollback {name!r}"
    if kind == "child_started":
        return f"child workflow {name!r} ({data.get('child_id')})"
    if kind == "workflow_parked":
        return "park"
    return f"the end ({kind})"


@dataclass(frozen=True, slots=True)
class Activation:
    """What one `feed` leaves: the new commands to record (in order), the run's status
    (`running`, `compensating`, `parked`, or an ending's: `completed`, `failed`, `cancelled`,
    `continued_as_new`), the result or error once ended, the status the code published, and
    what the run waits on."""

    commands: list[HistoryEvent]
    status: str
    result: Any = None
    error: str | None = None
    query: Any = None
    waiting_on: tuple[str, ...] = ()
    continue_input: Any = None

    @property
    def ended(self) -> bool:
        return self.status in STATUS_BY_ENDING.values()


@dataclass(slots=True)
class _Waiter:
    kind: str  # step, timer, signal_wait, child
    label: str
    future: asyncio.Future[Any]
    signal: str | None = None


@dataclass(slots=True)
class _Rollback:
    info: StepInfo
    fn: Callable[..., Any]
    input: list[Any]


@dataclass(slots=True)
class _Ending:
    type: str
    data: JsonObject = field(default_factory=dict)


class WorkflowRun:
    """One run of a workflow instance, fed its history (all at once, or piece by piece)."""

    def __init__(self, workflow: object, *, max_turns: int = 1_000_000) -> None:
        """`max_turns`: loop turns one input may take before the code counts as stuck in a
        busy loop (`WorkflowStuck`)."""
        self.spec: WorkflowSpec = workflow_spec_of(workflow)
        self.workflow_name = self.spec.name
        self.workflow_id = "?"
        self.run_number = 1
        self.custom_status: Any = None
        self.history_length = 0  # events up to the input being handled (deterministic)
        self._guard = Guard()
        # asyncio's base declares every loop method abstract; the ones workflow code may reach
        # are implemented (or refused), the rest are never called.
        self._loop = DeterministicLoop(self._guard, max_turns)  # type: ignore[abstract]
        self._main: asyncio.Task[Any] | None = None
        self._compensation: asyncio.Task[None] | None = None
        self._seed = ""
        self._time_ms = 0
        self._fed = 0
        self._pending_inputs = 0
        self._position = 0
        self._expected: deque[tuple[int, HistoryEvent]] = deque()
        self._unrecorded: deque[HistoryEvent] = deque()
        self._new: list[HistoryEvent] = []
        self._recorded_end: HistoryEvent | None = None
        self._issued_end: HistoryEvent | None = None
        self._parked: HistoryEvent | None = None
        self._occurrences: Counter[tuple[str, str]] = Counter()
        self._waiters: dict[int, _Waiter] = {}
        self._open: dict[int, _Waiter] = {}  # the waiters not answered yet, by position
        self._callables: dict[int, Callable[..., Any]] = {}
        self._signals: dict[str, deque[Any]] = {}
        self._seen_signals: set[str] = set()
        self._signal_waits: dict[str, deque[int]] = {}
        self._rollbacks: list[_Rollback] = []
        self._patches: dict[str, bool] = {}
        self._last_step: str | None = None
        self._broken: BaseException | None = None
        self._divergence: Divergence | None = None
        self._ending_started = False

    # -- feeding the history ----------------------------------------------------------------

    def feed(self, events: Iterable[HistoryEvent]) -> Activation:
        """Take the next events of the history; deliver its inputs, match its commands; return
        what the code issued beyond the history. Raises `Divergence` (and stays broken)."""
        if self._broken is not None:
            raise self._broken
        batch = list(events)
        self._new = []
        try:
            inputs = self._take_commands(batch)
            self._pending_inputs = len(inputs)
            for index, event in inputs:
                self._pending_inputs -= 1
                self._time_ms = max(self._time_ms, event.at_ms)
                self.history_length = index + 1
                self._deliver(index, event)
                self._settle()
            self._fed += len(batch)
            if self._expected:
                index, recorded = self._expected[0]
                raise self._diverge(
                    describe(recorded),
                    index,
                    f"the history has {describe(recorded)} at position {recorded.position}; "
                    "the code no longer runs it",
                )
        except (Divergence, NondeterministicCall, ValueError, TypeError) as exc:
            self._broken = exc
            raise
        return self._activation()

    def step_callable(self, position: int) -> Callable[..., Any] | None:
        """The function the code gave for the step (or compensation) at `position`."""
        return self._callables.get(position)

    def close(self) -> None:
        """Drop the run (an evicted instance): its loop runs nothing more."""
        self._loop.close()

    def is_replaying(self) -> bool:
        return bool(self._expected) or self._pending_inputs > 0

    def _take_commands(self, batch: list[HistoryEvent]) -> list[tuple[int, HistoryEvent]]:
        inputs: list[tuple[int, HistoryEvent]] = []
        for offset, event in enumerate(batch):
            index = self._fed + offset
            if not event.is_command:
                inputs.append((index, event))
                continue
            if event.type in ENDINGS:
                self._recorded_end = event
            if self._unrecorded:
                mine = self._unrecorded.popleft()
                if not mine.same_decision(event):
                    raise self._diverge(
                        describe(event),
                        index,
                        f"the history recorded {describe(event)} at position {event.position} "
                        f"where this run issued {describe(mine)} at position {mine.position}",
                    )
            elif event.type not in ENDINGS:
                self._expected.append((index, event))
        return inputs

    def _diverge(self, step: str, index: int | None, detail: str) -> Divergence:
        error = Divergence(self.workflow_name, self.workflow_id, step, index, detail)
        if self._divergence is None:
            self._divergence = error
        return error

    # -- inputs -----------------------------------------------------------------------------

    def _deliver(self, index: int, event: HistoryEvent) -> None:
        kind, data = event.type, event.data
        if kind == "workflow_started":
            self._start(index, event)
        elif kind in (
            "step_completed",
            "step_failed",
            "timer_fired",
            "child_completed",
            "child_failed",
        ):
            self._answer(index, event)
        elif kind == "signal_received":
            signal_id = data.get("signal_id")
            if signal_id is not None:
                if signal_id in self._seen_signals:
                    return
                self._seen_signals.add(str(signal_id))
            self._signal(str(event.name), data.get("payload"))
        elif kind == "cancel_requested" and self._main is not None and not self._main.done():
            self._main.cancel()

    def _start(self, index: int, event: HistoryEvent) -> None:
        if self._main is not None:
            raise ValueError(
                f"history event {index}: a run starts once (a second workflow_started)"
            )
        if event.name != self.spec.name:
            raise self._diverge(
                "start", index, f"the history is of workflow {event.name!r}, not {self.spec.name!r}"
            )
        self.workflow_id = str(event.data.get("workflow_id", "?"))
        self.run_number = int(event.data.get("run", 1))
        self._seed = str(event.data.get("seed", ""))
        coro = self.spec.fn(WorkflowContext(self), event.data.get("input"))
        self._main = self._loop.start(_as_coroutine(coro))

    def _answer(self, index: int, event: HistoryEvent) -> None:
        position = event.position
        waiter = None if position is None else self._waiters.get(position)
        if waiter is None:
            pending = next((e for _, e in self._expected if e.position == position), None)
            what = (
                describe(pending) if pending is not None else f"the command at position {position}"
            )
            raise self._diverge(
                what,
                index,
                f"the history records {event.type} for {what}; the code has not run it",
            )
        expected_kind = {
            "step_completed": "step",
            "step_failed": "step",
            "child_completed": "child",
            "child_failed": "child",
            "timer_fired": ("timer", "signal_wait"),
        }[event.type]
        if waiter.kind not in expected_kind:
            raise self._diverge(
                waiter.label, index, f"the history records {event.type} for {waiter.label}"
            )
        future = waiter.future
        if future.done():
            return  # cancelled, or answered already (a duplicate outcome)
        data = event.data
        if event.type == "step_completed":
            future.set_result(data.get("result"))
        elif event.type == "step_failed":
            future.set_exception(
                StepFailed(
                    waiter.label.split(" ", 1)[-1],
                    str(data.get("error", "")),
                    str(data.get("error_kind", "retryable")),
                    int(data.get("attempts", 1)),
                )
            )
        elif event.type == "child_completed":
            future.set_result(data.get("result"))
        elif event.type == "child_failed":
            future.set_exception(ChildFailed(waiter.label, str(data.get("error", ""))))
        else:
            future.set_result(None)  # a timer fired: a sleep ends, a wait times out (None)

    def _signal(self, name: str, payload: Any) -> None:
        waits = self._signal_waits.get(name)
        while waits:
            position = waits.popleft()
            waiter = self._waiters[position]
            if waiter.future.done():
                continue
            waiter.future.set_result(payload)
            self._issue("timer_cancelled", name, {"timer": position})
            return
        self._signals.setdefault(name, deque()).append(payload)

    # -- running the code -------------------------------------------------------------------

    def _settle(self) -> None:
        while True:
            self._loop.run_ready(self.spec.name)
            self._raise_noticed()
            if not self._after_main():
                return

    def _raise_noticed(self) -> None:
        if self._guard.violation is not None:
            raise self._guard.violation
        if self._divergence is not None:
            raise self._divergence
        for task in (self._main, self._compensation):
            if task is None or not task.done() or task.cancelled():
                continue
            error = task.exception()
            if isinstance(error, Divergence | NondeterministicCall):
                raise error

    def _after_main(self) -> bool:
        """Once the main task ended, issue the ending or start the compensations; True if
        there is code to run again."""
        main = self._main
        if main is None or not main.done() or self._ending_started:
            if self._compensation is not None and self._compensation.done():
                error = None if self._compensation.cancelled() else self._compensation.exception()
                if error is not None:
                    raise error
            return False
        self._ending_started = True
        ending, compensate = self._ending(main)
        if (
            ending.type in ("workflow_failed", "workflow_cancelled")
            and compensate
            and self._rollbacks
        ):
            self._compensation = self._loop.start(self._compensate(ending))
            return True
        self._end(ending)
        return False

    def _ending(self, main: asyncio.Task[Any]) -> tuple[_Ending, bool]:
        """How the main task ended, and whether its rollbacks run."""
        if main.cancelled():
            return _Ending("workflow_cancelled"), self.spec.compensate_on_cancel
        error = main.exception()
        if error is None:
            try:
                result = as_data(main.result(), f"the result of workflow {self.spec.name!r}")
            except TypeError as exc:
                return _Ending("workflow_failed", {"error": f"TypeError: {exc}"}), True
            return _Ending("workflow_completed", {"result": result}), False
        if isinstance(error, ContinueAsNew):
            return _Ending("continued_as_new", {"input": error.input}), False
        if isinstance(error, asyncio.CancelledError):
            return _Ending("workflow_cancelled"), self.spec.compensate_on_cancel
        if isinstance(error, Exception):
            return _Ending("workflow_failed", {"error": f"{type(error).__name__}: {error}"}), True
        raise error

    async def _compensate(self, ending: _Ending) -> None:
        for rollback in reversed(self._rollbacks):
            try:
                await self._step(rollback.info, rollback.fn, rollback.input, compensation=True)
            except StepFailed as exc:
                self._issue(
                    "workflow_parked",
                    rollback.info.name,
                    {"reason": "compensation_failed", "error": str(exc), "ending": ending.type},
                )
                return
        self._end(ending)

    def _end(self, ending: _Ending) -> None:
        self._issue(ending.type, None, ending.data)

    # -- commands ---------------------------------------------------------------------------

    def _issue(self, kind: str, name: str | None, data: JsonObject) -> HistoryEvent:
        """The code issues a command: matched against the next recorded one (returned, with
        its recorded values), or new (recorded by the caller)."""
        if self._divergence is not None:
            raise self._divergence
        while self._expected:
            index, recorded = self._expected[0]
            if recorded.type == "patch_marker" and not (
                kind == "patch_marker" and name == recorded.name
            ):
                # A marker of a patch the code no longer asks about (a retired patch).
                self._expected.popleft()
                self._position = max(self._position, recorded.position or 0)
                continue
            mine = HistoryEvent(kind, self._time_ms, recorded.position, name, data)
            self._compare(index, recorded, mine)
            self._expected.popleft()
            self._position = recorded.position or self._position + 1
            self._track(recorded)
            return recorded
        self._position += 1
        event = HistoryEvent(kind, self._time_ms, self._position, name, data)
        if self._recorded_end is None:
            self._unrecorded.append(event)
            self._new.append(event)
        self._track(event)
        return event

    def _compare(self, index: int, recorded: HistoryEvent, mine: HistoryEvent) -> None:
        if recorded.type != mine.type or recorded.name != mine.name:
            raise self._diverge(
                describe(recorded),
                index,
                f"the history has {describe(recorded)} at position {recorded.position}; "
                f"the code now runs {describe(mine)}",
            )
        for key in _COMPARED.get(recorded.type, ()):
            was, now = recorded.data.get(key), mine.data.get(key)
            if was != now:
                if key == "digest":
                    detail = (
                        f"{describe(recorded)} was recorded with input "
                        f"{_short(recorded.data.get('input'))} (digest {was}); the code now "
                        f"passes {_short(mine.data.get('input'))} (digest {now})"
                    )
                else:
                    detail = f"{describe(recorded)} was recorded with {key}={was!r}; the code now has {now!r}"
                raise self._diverge(describe(recorded), index, detail)

    def _track(self, event: HistoryEvent) -> None:
        if event.type in ENDINGS:
            self._issued_end = event
        elif event.type == "workflow_parked":
            self._parked = event

    def _occurrence(self, kind: str, name: str) -> int:
        self._occurrences[(kind, name)] += 1
        return self._occurrences[(kind, name)]

    def _wait(
        self, position: int, kind: str, label: str, signal: str | None = None
    ) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        self._waiters[position] = self._open[position] = _Waiter(kind, label, future, signal)
        return future

    # Driver: what WorkflowContext calls.

    def schedule_step(
        self, fn: Callable[..., Any], args: tuple[Any, ...], name: str | None
    ) -> Awaitable[Any]:
        info = step_info_of(fn, name)
        return self._step(info, fn, list(args), compensation=False)

    async def _step(
        self, info: StepInfo, fn: Callable[..., Any], args: list[Any], *, compensation: bool
    ) -> Any:
        what = "compensation" if compensation else "step"
        value = as_data(args, f"the input of {what} {info.name!r}")
        occurrence = self._occurrence("step", info.name)
        event = self._issue(
            "step_scheduled",
            info.name,
            {
                "occurrence": occurrence,
                "input": value,
                "digest": digest(value),
                "compensation": compensation,
                "options": info.options_json(),
            },
        )
        position = event.position or 0
        label = f"{what} {info.name!r}#{occurrence}"
        self._callables[position] = fn
        result = await self._wait(position, "step", label)
        if not compensation:
            self._last_step = f"{info.name}#{occurrence}"
        return result

    async def start_timer(self, name: str, duration_ms: int | None, until_ms: int | None) -> None:
        fire_at = until_ms if until_ms is not None else self._time_ms + (duration_ms or 0)
        data = {"duration_ms": duration_ms, "until_ms": until_ms, "fire_at_ms": fire_at}
        event = self._issue("timer_started", name, data)
        await self._wait(event.position or 0, "timer", describe(event))

    async def wait_signal(self, name: str, timeout_ms: int | None) -> Any:
        buffered = self._signals.get(name)
        if buffered:
            return buffered.popleft()
        fire_at = None if timeout_ms is None else self._time_ms + timeout_ms
        event = self._issue(
            "signal_wait_started", name, {"timeout_ms": timeout_ms, "fire_at_ms": fire_at}
        )
        position = event.position or 0
        future = self._wait(position, "signal_wait", describe(event), name)
        self._signal_waits.setdefault(name, deque()).append(position)
        return await future

    def side_effect(self, kind: str) -> Any:
        position = self._position + 1  # its position if it is new
        if kind == "now":
            value: Any = self._time_ms
        else:
            seed = f"{self._seed}|{self.workflow_id}|{self.run_number}|{position}|{kind}"
            raw = hashlib.sha256(seed.encode()).digest()
            if kind == "random":
                value = int.from_bytes(raw[:7], "big") / float(1 << 56)
            elif kind == "uuid4":
                value = str(uuid.UUID(bytes=raw[:16], version=4))
            else:
                raise ValueError(f"unknown side effect {kind!r}; accepted: now, random, uuid4")
        return self._issue("side_effect_recorded", kind, {"value": value}).data["value"]

    def register_rollback(
        self, fn: Callable[..., Any], args: tuple[Any, ...], name: str | None
    ) -> None:
        info = step_info_of(fn, name)
        value = as_data(list(args), f"the input of rollback {info.name!r}")
        self._issue(
            "rollback_registered",
            info.name,
            {"input": value, "digest": digest(value), "registered_by": self._last_step},
        )
        self._rollbacks.append(_Rollback(info, fn, value))

    def patched(self, change_id: str) -> bool:
        # Decided once per run: a second call (in a loop, in a helper) answers the same.
        decided = self._patches.get(change_id)
        if decided is None:
            decided = self._decide_patch(change_id)
            self._patches[change_id] = decided
        return decided

    def _decide_patch(self, change_id: str) -> bool:
        for _, recorded in self._expected:
            if recorded.type != "patch_marker":
                break
            if recorded.name == change_id:
                self._issue("patch_marker", change_id, {})
                return True
        if self.is_replaying():
            return False  # recorded by the code before this change: take the old path
        self._issue("patch_marker", change_id, {})
        return True

    async def start_child(self, workflow: object, input: Any, workflow_id: str | None) -> Any:
        if isinstance(workflow, str):
            name = workflow
        else:
            spec = getattr(workflow, WORKFLOW_ATTRIBUTE, workflow)
            name = workflow_spec_of(spec).name
        value = as_data(input, f"the input of child workflow {name!r}")
        occurrence = self._occurrence("child", name)
        # Past the first run the run is in the default id: a continued instance's next run
        # starting "the same" child starts a new one, not the last run's again. The id is a
        # path segment of the HTTP API's routes: no "/" or "#" in it.
        run = "" if self.run_number == 1 else f"@{self.run_number}"
        child_id = workflow_id or f"{self.workflow_id}:{name}:{occurrence}{run}"
        event = self._issue(
            "child_started", name, {"child_id": child_id, "input": value, "digest": digest(value)}
        )
        return await self._wait(event.position or 0, "child", f"child {child_id}")

    # -- the outcome ------------------------------------------------------------------------

    def _activation(self) -> Activation:
        end = self._recorded_end or self._issued_end
        result = error = continue_input = None
        if end is not None:
            status = STATUS_BY_ENDING[end.type]
            result = end.data.get("result")
            error = end.data.get("error")
            continue_input = end.data.get("input")
        elif self._parked is not None:
            status, error = "parked", str(self._parked.data.get("error"))
        elif self._compensation is not None:
            status = "compensating"
        else:
            status = "running"
        for position in [p for p, w in self._open.items() if w.future.done()]:
            del self._open[position]
        waiting = tuple(w.label for _, w in sorted(self._open.items()))
        return Activation(
            commands=list(self._new),
            status=status,
            result=result,
            error=error,
            query=self.custom_status,
            waiting_on=() if end is not None else waiting,
            continue_input=continue_input,
        )


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def replay(workflow: object, history: Iterable[HistoryEvent]) -> Activation:
    """Replay a whole history against `workflow`'s current code (a fresh run): what the
    code would do next, or `Divergence`."""
    return WorkflowRun(workflow).feed(history)
