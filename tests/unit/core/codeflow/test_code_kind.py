"""`CodeKind`, the orchestrator's fold of code workflows (decision 0217), driven the way the
stack drives it: every `@task` execution it schedules is answered by a real `WorkflowRun` of a
real `@workflow` (the worker's side, below), every code step by running the step function.
After every input the state goes through its snapshot JSON and deciding goes on from the
copy, so each test also holds the snapshot round trip at every point of its instance."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from dataclasses import replace
from typing import Any

import pytest

from tickwheel.core.codeflow import HistoryEvent, WorkflowRun, replay, workflow_spec_of
from tickwheel.core.codeflow.definition import CodeWorkflowDefinition
from tickwheel.core.codeflow.fold import TASK_MAX_ATTEMPTS
from tickwheel.core.codeflow.kind import MAX_ATTEMPTS_BOUND, CodeKind, histories_from_events
from tickwheel.core.codeflow.state import CodeState
from tickwheel.core.codeflow.tasks import (
    EFFECT_KEYS,
    TASK_STEP,
    code_step_execution_id,
    code_timer_id,
    missed_answer,
    parse_code_timer,
    read_task,
    retry_delay_ms,
    task_answer,
    task_execution_id,
)
from tickwheel.core.retry import RetryPolicy
from tickwheel.core.workflow import parse_definition
from tickwheel.core.workflow.events import (
    CancelExecution,
    CancelTimer,
    ClearAlert,
    Command,
    Event,
    RaiseAlert,
    ScheduleStep,
    SendInput,
    StartTimer,
)
from tickwheel.core.workflow.ids import parse_timer
from tickwheel.core.workflow.inputs import (
    Cancel,
    ChildEnded,
    CompleteStep,
    Input,
    RetryStep,
    Signal,
    SkipStep,
    Start,
    StartChild,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
    input_from_json,
    input_to_json,
)
from tickwheel.core.workflow.kinds import (
    CODE,
    DAG,
    kind_of,
    kind_of_state,
    state_from_snapshot,
    state_to_snapshot,
)
from tickwheel.sdk import PermanentError, WorkflowContext, step, workflow
from tickwheel.sdk import StepFailed as CodeStepFailed
from tickwheel.sdk.workflow_testing import WorkflowRunner

T0 = 1_800_000_000_000
ORDER = {"id": "o-1", "amount": 10}
HOUR = 3_600_000


# -- the workflows ----------------------------------------------------------------------------


@step
async def reserve(order: dict[str, Any]) -> str:
    return f"reservation-{order['id']}"


@step
async def charge(order: dict[str, Any]) -> dict[str, Any]:
    return {"charged": order["amount"]}


@step
async def ship(order: dict[str, Any]) -> str:
    return f"shipped-{order['id']}"


@step(max_attempts=3, backoff="1s", max_backoff="10s")
async def hold(order: dict[str, Any]) -> str:
    return f"hold-{order['id']}"


@step
async def release(reservation: str) -> str:
    return f"released {reservation}"


@step
async def unhold(held: str) -> str:
    return f"unheld {held}"


@step
async def decline(order: dict[str, Any]) -> None:
    raise PermanentError("card declined")


@workflow("three_steps")
async def three_steps(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    reservation = await ctx.run(reserve, order)
    charged = await ctx.run(charge, order)
    shipped = await ctx.run(ship, order)
    return {"reservation": reservation, "charge": charged, "shipment": shipped}


@workflow("three_steps")
async def three_steps_reordered(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    """A deploy that changed the code under running instances: it diverges from them."""
    charged = await ctx.run(charge, order)
    reservation = await ctx.run(reserve, order)
    return {"reservation": reservation, "charge": charged}


@workflow("napper")
async def napper(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    await ctx.sleep("1h")
    return str(await ctx.run(ship, order))


@workflow("approval")
async def approval(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    await ctx.run(reserve, order)
    decision = await ctx.wait_signal("approve", timeout="1h")
    return {"decision": decision}


@workflow("two_items")
async def two_items(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.wait_signal("item")
    second = await ctx.wait_signal("item", timeout="1h")
    return [first, second]


@workflow("saga")
async def saga(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    reservation = await ctx.run(reserve, order)
    ctx.on_rollback(release, reservation)
    held = await ctx.run(hold, order)
    ctx.on_rollback(unhold, held)
    await ctx.run(hold, order)  # the step the test fails
    return "done"


@workflow("forgiving")
async def forgiving(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    try:
        await ctx.run(decline, order)
    except CodeStepFailed as exc:
        return f"declined: {exc.error}"
    return "charged"


@workflow("both")
async def both(ctx: WorkflowContext, order: dict[str, Any]) -> list[Any]:
    return list(await asyncio.gather(ctx.run(reserve, order), ctx.run(charge, order)))


@workflow("undo_fails")
async def undo_fails(ctx: WorkflowContext, order: dict[str, Any]) -> None:
    reservation = await ctx.run(reserve, order)
    ctx.on_rollback(release, reservation)
    await ctx.run(decline, order)


@workflow("parent")
async def parent(ctx: WorkflowContext, order: dict[str, Any]) -> Any:
    return await ctx.child(napper, order)


@workflow("counter")
async def counter(ctx: WorkflowContext, count: int) -> int:
    await ctx.sleep("1d")
    if count < 3:
        ctx.continue_as_new(count + 1)
    return count


# -- the worker's side and the driver ---------------------------------------------------------


class Worker:
    """What a worker does with a workflow task (decision 0217, "The worker"): live runs kept
    by (workflow id, run) with the history length each has consumed; a task at that base is a
    feed of its events, base 0 a full replay, anything else `missed`. An activation that
    raises evicts the run and fails the task permanently with the error's one-line text."""

    def __init__(self, code: object) -> None:
        self.code = code
        self.runs: dict[tuple[str, int], tuple[WorkflowRun, int]] = {}

    def forget(self) -> None:
        """Another worker takes the next task (a rebalance, a restart): nothing cached."""
        self.runs.clear()

    def answer(self, command: ScheduleStep, at_ms: int) -> StepSucceeded | StepFailed:
        task = read_task(command.payload)
        key = (task.workflow_id, task.run)
        if task.base == 0:
            run = WorkflowRun(self.code)
        else:
            cached = self.runs.get(key)
            if cached is None or cached[1] != task.base:
                return StepSucceeded(
                    at_ms, TASK_STEP, command.attempt, output=missed_answer(task.task)
                )
            run = cached[0]
        try:
            activation = run.feed(task.events)
            run.feed(activation.commands)  # recorded: the run matches its own commands
        except Exception as exc:
            self.runs.pop(key, None)
            error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            return StepFailed(at_ms, TASK_STEP, command.attempt, error=error, permanent=True)
        consumed = task.base + len(task.events) + len(activation.commands)
        self.runs[key] = (run, consumed)
        return StepSucceeded(
            at_ms, TASK_STEP, command.attempt, output=task_answer(task.task, task.base, activation)
        )


def run_step(command: ScheduleStep, at_ms: int) -> StepSucceeded | StepFailed:
    """A `code:<module:qualname>` execution: the step function on the recorded arguments."""
    assert command.job_type.startswith("code:")
    module, qualname = command.job_type.removeprefix("code:").split(":")
    fn: Any = importlib.import_module(module)
    for part in qualname.split("."):
        fn = getattr(fn, part)
    try:
        value = fn(*command.payload["args"])
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
    except PermanentError as exc:
        return StepFailed(
            at_ms, command.step, command.attempt, error=f"PermanentError: {exc}", permanent=True
        )
    return StepSucceeded(at_ms, command.step, command.attempt, output=value)


async def _awaited(value: Any) -> Any:
    return await value


class Instance:
    """One instance of `code`, folded by `CodeKind`, its commands carried out by hand or by
    `settle` (tasks answered by `worker`, steps run), the clock moved by the test."""

    def __init__(
        self, code: object, *, worker_code: object | None = None, workflow_id: str = "wf-1"
    ) -> None:
        self.kind = CodeKind()
        name = workflow_spec_of(code).name
        self.definition = CodeWorkflowDefinition(name, 1, "code-v1")
        self.state: CodeState = self.kind.initial(workflow_id, self.definition)
        self.worker = Worker(worker_code or code)
        self.code = code
        self.now = T0
        self.events: list[Event] = []
        self.commands: list[Command] = []
        self.tasks: list[ScheduleStep] = []  # workflow tasks not answered yet
        self.steps: dict[str, ScheduleStep] = {}  # the latest attempt of each code step out
        self.timers: dict[str, int] = {}
        self.runs: dict[int, tuple[HistoryEvent, ...]] = {}

    def send(self, item: Input) -> list[Event]:
        state, events, statuses = self.kind.decide(self.state, self.definition, item)
        assert events, "an input is always recorded"
        assert [e.seq for e in events] == list(range(self.state.seq + 1, state.seq + 1))
        assert statuses[-1] == state.status
        # The snapshot round trip, at every point: decided on from the copy.
        snapshot = json.loads(json.dumps(self.kind.to_json(state)))
        restored = self.kind.from_json(snapshot)
        assert restored == state
        self.state = restored
        self.events += events
        self.runs[state.run] = state.history
        for event in events:
            for command in self.kind.effects(event):
                self.commands.append(command)
                self._track(command)
        return events

    def _track(self, command: Command) -> None:
        if isinstance(command, ScheduleStep):
            if command.step == TASK_STEP:
                self.tasks.append(command)
            else:
                self.steps[command.step] = command
        elif isinstance(command, StartTimer):
            self.timers[command.timer_id] = command.fire_at_ms
        elif isinstance(command, CancelTimer):
            self.timers.pop(command.timer_id, None)
        elif isinstance(command, CancelExecution):
            self.steps.pop(command.step, None)

    def tick(self, ms: int = 1_000) -> int:
        self.now += ms
        return self.now

    def answer_task(self) -> StepSucceeded | StepFailed:
        """Answer the oldest task outstanding (returned, as the timer delivered it)."""
        task = self.tasks.pop(0)
        outcome = self.worker.answer(task, self.tick())
        self.send(outcome)
        return outcome

    def settle(self) -> None:
        """Answer tasks until none is out (steps and timers wait for the test)."""
        while self.tasks:
            self.answer_task()

    def complete(self, label: str) -> StepSucceeded | StepFailed:
        """Run the step's attempt out now, deliver its outcome, and settle."""
        command = self.steps.pop(label)
        outcome = run_step(command, self.tick())
        self.send(outcome)
        self.settle()
        return outcome

    def fail(self, label: str, error: str = "boom", *, permanent: bool = False) -> None:
        command = self.steps.pop(label)
        self.send(StepFailed(self.tick(), label, command.attempt, error=error, permanent=permanent))
        self.settle()

    def fire(self, timer_id: str) -> None:
        self.now = max(self.now, self.timers.pop(timer_id))
        self.send(TimerFired(self.now, timer_id))
        self.settle()

    def start(self, value: Any = ORDER) -> None:
        self.send(Start(self.now, value))
        self.settle()

    def history(self) -> list[HistoryEvent]:
        return list(self.state.history)

    def types(self) -> list[str]:
        return [e.type for e in self.state.history]

    def commands_of(self, kind: type[Any]) -> list[Any]:
        return [c for c in self.commands if isinstance(c, kind)]


def completed_in_order(instance: Instance, *labels: str) -> None:
    for label in labels:
        assert set(instance.steps) == {label}, f"expected only {label} out: {set(instance.steps)}"
        instance.complete(label)


# -- the tests --------------------------------------------------------------------------------


def test_a_start_records_the_run_and_schedules_task_1_of_the_workflow_job_type() -> None:
    instance = Instance(three_steps)
    events = instance.send(Start(T0, ORDER))
    assert [e.type for e in events] == ["workflow_started", "task_scheduled"]
    assert instance.state.status == "running"
    [task] = instance.tasks
    assert (task.step, task.attempt, task.job_type) == (TASK_STEP, 1, "workflow:three_steps")
    assert task.execution_id == task_execution_id("wf-1", 1, 1)
    assert task.not_before_ms == T0
    payload = read_task(task.payload)
    assert (payload.workflow, payload.workflow_id, payload.run, payload.task, payload.base) == (
        "three_steps",
        "wf-1",
        1,
        1,
        0,
    )
    assert payload.code_version == "code-v1"
    [started] = payload.events
    assert started.type == "workflow_started" and started.data["input"] == ORDER


def test_a_three_step_workflow_runs_to_its_result_one_task_per_input() -> None:
    instance = Instance(three_steps)
    instance.start()
    [first] = instance.steps.values()
    assert (first.step, first.attempt, first.job_type) == (
        "reserve#1",
        1,
        f"code:{__name__}:reserve",
    )
    assert first.payload == {"args": [ORDER]}
    position = instance.state.steps["reserve#1"].position
    assert first.execution_id == code_step_execution_id("wf-1", 1, position)
    completed_in_order(instance, "reserve#1", "charge#1", "ship#1")
    assert instance.state.status == "succeeded"
    assert instance.state.result == {
        "reservation": "reservation-o-1",
        "charge": {"charged": 10},
        "shipment": "shipped-o-1",
    }
    assert not instance.steps and not instance.tasks and not instance.state.outstanding
    # One task for the start and one per step outcome; each after the first sent only what
    # the worker's cached run had not consumed.
    tasks = [c for c in instance.commands if isinstance(c, ScheduleStep) and c.step == TASK_STEP]
    assert [t.attempt for t in tasks] == [1, 2, 3, 4]
    assert [read_task(t.payload).base for t in tasks] == [0, 2, 4, 6]
    assert all(len(read_task(t.payload).events) == 1 for t in tasks)
    # The history is the engine's: a fresh replay of it ends where the instance did.
    assert replay(three_steps, instance.history()).result == instance.state.result


def test_the_fold_produces_the_history_the_in_process_runner_does() -> None:
    instance = Instance(three_steps)
    instance.start()
    completed_in_order(instance, "reserve#1", "charge#1", "ship#1")

    runner = WorkflowRunner(three_steps)
    result = asyncio.run(runner.execute(three_steps, ORDER, workflow_id="wf-1"))
    assert result == instance.state.result

    def comparable(history: list[HistoryEvent]) -> list[tuple[Any, ...]]:
        # The seed is each driver's own; times are each clock's.
        return [
            (e.type, e.position, e.name, {k: v for k, v in e.data.items() if k != "seed"})
            for e in history
        ]

    assert comparable(instance.history()) == comparable(runner.history("wf-1"))


def test_a_sleep_starts_a_timer_named_by_run_and_position_and_its_firing_resumes_the_code() -> None:
    instance = Instance(napper)
    instance.start()
    [(timer_id, fire_at)] = instance.timers.items()
    [started] = [e for e in instance.history() if e.type == "timer_started"]
    assert timer_id == code_timer_id(1, started.position or 0)
    assert parse_code_timer(timer_id) == (1, started.position)
    assert parse_timer(timer_id)[0] == "unknown"  # the DAG's parser takes it for none of its own
    assert fire_at == started.data["fire_at_ms"] == T0 + HOUR
    assert not instance.steps
    instance.fire(timer_id)
    assert instance.types()[-1] == "step_scheduled"
    [fired] = [e for e in instance.history() if e.type == "timer_fired"]
    assert (fired.position, fired.at_ms) == (started.position, T0 + HOUR)
    instance.complete("ship#1")
    assert instance.state.status == "succeeded" and instance.state.result == "shipped-o-1"


def test_a_timer_that_is_not_open_is_recorded_and_changes_nothing() -> None:
    instance = Instance(napper)
    instance.start()
    before = instance.state
    for timer_id in ("code:2:2", "code:1:99", "sleep:x", "code:a:b"):
        [event] = instance.send(TimerFired(instance.tick(), timer_id))
        assert event.type == "timer_fired_ignored" and event.data["timer_id"] == timer_id
    assert instance.state.history == before.history and not instance.tasks


def test_a_signal_sent_before_the_wait_is_buffered_by_the_engine_and_taken_by_the_wait() -> None:
    instance = Instance(approval)
    instance.start()
    instance.send(Signal(instance.tick(), "approve", "sig-1", {"ok": True}))
    assert instance.types()[-1] == "signal_received"
    instance.settle()  # the code waits on its step: nothing new
    assert instance.types()[-1] == "signal_received"
    instance.complete("reserve#1")
    assert instance.state.status == "succeeded"
    assert instance.state.result == {"decision": {"ok": True}}
    assert "signal_wait_started" not in instance.types()
    assert not instance.commands_of(StartTimer)


def test_a_signal_sent_after_the_wait_answers_it_and_cancels_its_timeout() -> None:
    instance = Instance(approval)
    instance.start()
    instance.complete("reserve#1")
    [(timer_id, fire_at)] = instance.timers.items()
    [wait] = [e for e in instance.history() if e.type == "signal_wait_started"]
    assert timer_id == code_timer_id(1, wait.position or 0) and fire_at == wait.data["fire_at_ms"]
    instance.send(Signal(instance.tick(), "approve", "sig-1", "yes"))
    instance.settle()
    assert instance.state.status == "succeeded" and instance.state.result == {"decision": "yes"}
    assert CancelTimer(timer_id) in instance.commands
    assert not instance.timers


def test_a_repeated_signal_id_is_recorded_as_duplicate_and_never_delivered_twice() -> None:
    instance = Instance(two_items)
    instance.start()
    instance.send(Signal(instance.tick(), "item", "s-1", "first"))
    instance.settle()
    [event] = instance.send(Signal(instance.tick(), "item", "s-1", "first again"))
    assert event.type == "signal_duplicate" and event.data["signal_id"] == "s-1"
    assert not instance.tasks
    assert instance.types().count("signal_received") == 1
    assert instance.state.status == "running"
    instance.send(Signal(instance.tick(), "item", "s-2", "second"))
    instance.settle()
    assert instance.state.result == ["first", "second"]


def test_a_signal_wait_times_out_when_its_timer_fires() -> None:
    instance = Instance(approval)
    instance.start()
    instance.complete("reserve#1")
    [timer_id] = instance.timers
    instance.fire(timer_id)
    assert instance.state.status == "succeeded" and instance.state.result == {"decision": None}
    # A signal after the end is recorded and goes nowhere.
    [event] = instance.send(Signal(instance.tick(), "approve", "late", "yes"))
    assert event.type == "signal_ignored" and event.data["reason"] == "workflow_succeeded"


def test_a_failed_attempt_with_attempts_left_is_rescheduled_by_the_fold_after_its_backoff() -> None:
    instance = Instance(saga)
    instance.start()
    instance.complete("reserve#1")
    first = instance.steps["hold#1"]
    length = len(instance.state.history)
    at = instance.now + 1_000
    instance.fail("hold#1", "flaky")
    again = instance.steps["hold#1"]
    assert (again.step, again.attempt, again.execution_id) == ("hold#1", 2, first.execution_id)
    assert (again.job_type, again.payload) == (first.job_type, first.payload)
    policy = RetryPolicy(base_ms=1_000, cap_ms=10_000, max_attempts=3)
    delay = retry_delay_ms(first.execution_id, 1, policy)
    assert 0 <= delay <= policy.ceiling_ms(1)
    assert again.not_before_ms == at + delay
    # Not in the history: the code sees the step's last outcome only.
    assert len(instance.state.history) == length and not instance.tasks
    [event] = [e for e in instance.events if e.type == "step_attempt_failed"]
    assert (event.step, event.attempt, event.data["error"]) == ("hold#1", 1, "flaky")
    # The first attempt's late verdict is fenced.
    [fenced] = instance.send(StepSucceeded(instance.tick(), "hold#1", 1, output="late"))
    assert fenced.type == "step_outcome_fenced" and fenced.data["reason"] == "stale_attempt"


def test_the_last_failure_reaches_the_code_and_its_rollbacks_run_in_reverse() -> None:
    instance = Instance(saga)
    instance.start()
    completed_in_order(instance, "reserve#1", "hold#1")
    for attempt in (1, 2, 3):
        assert instance.steps["hold#2"].attempt == attempt
        instance.fail("hold#2", f"flaky {attempt}")
    [failed] = [e for e in instance.history() if e.type == "step_failed"]
    assert failed.data == {
        "error": "flaky 3",
        "error_kind": "retryable",
        "attempts": 3,
        "reason": "max_attempts_exhausted",
    }
    # The code's failure runs its rollbacks, newest first, each a step of its own.
    assert set(instance.steps) == {"unhold#1"}
    assert instance.steps["unhold#1"].payload == {"args": ["hold-o-1"]}
    instance.complete("unhold#1")
    assert set(instance.steps) == {"release#1"}
    instance.complete("release#1")
    compensations = [
        e.name for e in instance.history() if e.type == "step_scheduled" and e.data["compensation"]
    ]
    assert compensations == ["unhold", "release"]
    assert instance.state.status == "failed"
    assert "flaky 3" in (instance.state.error or "")


def test_a_permanent_failure_reaches_the_code_at_once() -> None:
    instance = Instance(forgiving)
    instance.start()
    instance.complete("decline#1")
    [failed] = [e for e in instance.history() if e.type == "step_failed"]
    assert (failed.data["error_kind"], failed.data["attempts"]) == ("permanent", 1)
    assert instance.state.status == "succeeded"
    assert instance.state.result == "declined: PermanentError: card declined"


def test_a_cancel_ends_the_run_and_stops_what_is_open() -> None:
    instance = Instance(three_steps)
    instance.start()
    running = instance.steps["reserve#1"]
    events = instance.send(Cancel(instance.tick(), "ops", "no longer wanted"))
    assert [e.type for e in events] == ["cancel_requested", "task_scheduled"]
    assert events[0].actor == "ops" and events[0].data["reason"] == "no longer wanted"
    instance.settle()
    assert instance.state.status == "cancelled"
    assert CancelExecution("reserve#1", running.execution_id, 1) in instance.commands
    # The timer's verdict on the stopped attempt comes back, and is fenced.
    [fenced] = instance.send(StepCancelled(instance.tick(), "reserve#1", 1))
    assert fenced.type == "step_outcome_fenced" and fenced.data["reason"] == "workflow_cancelled"
    [ignored] = instance.send(Cancel(instance.tick(), "ops"))
    assert ignored.type == "cancel_ignored"


def test_a_cancel_during_a_sleep_cancels_its_timer() -> None:
    instance = Instance(napper)
    instance.start()
    [timer_id] = instance.timers
    instance.send(Cancel(instance.tick(), "ops"))
    instance.settle()
    assert instance.state.status == "cancelled"
    assert CancelTimer(timer_id) in instance.commands and not instance.timers


def test_inputs_that_arrive_while_a_task_is_out_are_held_and_go_after_its_commands() -> None:
    instance = Instance(approval)
    instance.send(Start(instance.now, ORDER))
    [held] = instance.send(Signal(instance.tick(), "approve", "sig-1", "early"))
    assert held.type == "input_held" and held.data["event"]["name"] == "approve"
    assert len(instance.tasks) == 1  # one task out at a time
    sent_length = instance.state.sent_length
    instance.answer_task()
    # The answer's commands go right after the history the task carried, then what was held.
    assert instance.types()[sent_length:] == ["step_scheduled", "signal_received"]
    [task] = instance.tasks
    payload = read_task(task.payload)
    assert payload.base == sent_length + 1
    assert [e.type for e in payload.events] == ["signal_received"]
    instance.settle()
    instance.complete("reserve#1")
    assert instance.state.result == {"decision": "early"}


def test_a_cancel_held_while_a_task_is_out_is_recorded_with_who_asked() -> None:
    instance = Instance(approval)
    instance.send(Start(instance.now, ORDER))
    [held] = instance.send(Cancel(instance.tick(), "ops", "no longer wanted"))
    assert held.type == "input_held" and held.actor == "ops"
    task = instance.tasks.pop(0)
    events = instance.send(instance.worker.answer(task, instance.tick()))
    [cancel] = [e for e in events if e.type == "cancel_requested"]
    assert cancel.actor == "ops" and cancel.data["reason"] == "no longer wanted"


def test_a_missed_task_sends_the_next_one_with_the_whole_history() -> None:
    instance = Instance(three_steps)
    instance.start()
    instance.complete("reserve#1")
    instance.worker.forget()
    command = instance.steps.pop("charge#1")
    instance.send(run_step(command, instance.tick()))
    [task] = instance.tasks
    assert read_task(task.payload).base > 0
    answer = instance.answer_task()
    assert isinstance(answer, StepSucceeded) and answer.output == missed_answer(task.attempt)
    assert [e.type for e in instance.events[-2:]] == ["task_missed", "task_scheduled"]
    [again] = instance.tasks
    payload = read_task(again.payload)
    assert again.attempt == task.attempt + 1
    assert payload.base == 0 and list(payload.events) == instance.history()
    instance.settle()
    instance.complete("ship#1")
    assert instance.state.status == "succeeded"


def test_an_answer_for_a_task_that_is_not_outstanding_is_stale_and_dropped() -> None:
    instance = Instance(three_steps)
    instance.send(Start(instance.now, ORDER))
    task = instance.tasks[0]
    answer = instance.worker.answer(task, instance.tick())
    instance.send(answer)
    instance.tasks.clear()
    state = instance.state
    [stale] = instance.send(answer)  # the same answer again
    assert stale.type == "task_stale" and stale.step == TASK_STEP
    ahead = StepSucceeded(instance.tick(), TASK_STEP, 7, output={"task": 7, "missed": True})
    [stale] = instance.send(ahead)  # a task never sent
    assert stale.type == "task_stale"
    [stale] = instance.send(StepFailed(instance.tick(), TASK_STEP, 1, error="late", permanent=True))
    assert stale.type == "task_stale"
    assert instance.state.history == state.history and instance.state.status == "running"
    assert not instance.tasks


def test_a_failed_task_parks_the_instance_until_an_operator_retries_it() -> None:
    instance = Instance(three_steps)
    instance.start()
    instance.worker = Worker(three_steps_reordered)  # a deploy diverges from the history
    instance.complete("reserve#1")
    assert instance.state.status == "blocked"
    [alert] = instance.commands_of(RaiseAlert)
    assert alert.step == TASK_STEP and alert.kind == "workflow_task_failed"
    assert "wf-1" in alert.message and "three_steps" in alert.message
    assert "Divergence" in alert.message
    assert not instance.tasks
    # A retry on the same code fails the same way; a step's retry is not the task's.
    [ignored] = instance.send(RetryStep(instance.tick(), "charge#1", "ops"))
    assert ignored.type == "retry_step_ignored"
    instance.send(RetryStep(instance.tick(), TASK_STEP, "ops"))
    instance.settle()
    assert instance.state.status == "blocked" and len(instance.commands_of(RaiseAlert)) == 2
    instance.worker = Worker(three_steps)  # the code is fixed
    events = instance.send(RetryStep(instance.tick(), TASK_STEP, "ops"))
    assert [e.type for e in events] == ["task_resumed", "task_scheduled"]
    assert ClearAlert(alert.alert_id) in instance.commands
    assert read_task(instance.tasks[-1].payload).base == 0
    instance.settle()
    completed_in_order(instance, "charge#1", "ship#1")
    assert instance.state.status == "succeeded"


def test_a_signal_to_a_parked_instance_sends_a_new_task() -> None:
    instance = Instance(approval, worker_code=three_steps_reordered)
    instance.start()
    assert instance.state.status == "blocked" and not instance.tasks
    instance.worker = Worker(approval)
    events = instance.send(Signal(instance.tick(), "approve", "sig-1", "ok"))
    assert [e.type for e in events] == ["signal_received", "task_resumed", "task_scheduled"]
    assert instance.state.status == "running"
    payload = read_task(instance.tasks[0].payload)
    assert payload.base == 0 and list(payload.events) == instance.history()
    instance.settle()
    instance.complete("reserve#1")
    assert instance.state.result == {"decision": "ok"}


def test_a_retryable_task_failure_is_sent_again_then_parks_after_the_bound() -> None:
    instance = Instance(three_steps)
    instance.send(Start(instance.now, ORDER))
    for failures in range(1, TASK_MAX_ATTEMPTS + 1):
        [task] = instance.tasks
        instance.tasks.clear()
        at = instance.tick()
        instance.send(StepFailed(at, TASK_STEP, task.attempt, error="lease expired"))
        if failures < TASK_MAX_ATTEMPTS:
            [again] = instance.tasks
            assert again.attempt == task.attempt + 1 and again.not_before_ms >= at
            assert read_task(again.payload).base == 0
            assert instance.state.status == "running"
    assert instance.state.status == "blocked" and not instance.tasks
    instance.send(RetryStep(instance.tick(), TASK_STEP, "ops"))
    instance.settle()
    assert set(instance.steps) == {"reserve#1"}


def test_continue_as_new_starts_the_next_run_with_a_fresh_history() -> None:
    instance = Instance(counter)
    instance.start(1)
    for run in (1, 2, 3):
        assert instance.state.run == run
        [started] = instance.history()[:1]
        assert started.type == "workflow_started"
        assert started.data["input"] == run and started.data["run"] == run
        [timer_id] = instance.timers
        assert parse_code_timer(timer_id) == (run, 1)
        instance.fire(timer_id)
    assert instance.state.status == "succeeded" and instance.state.result == 3
    runs = histories_from_events(instance.events)
    assert len(runs) == 3
    assert runs[0][-1].type == "continued_as_new" and runs[0][-1].data["input"] == 2
    assert tuple(runs[2]) == instance.state.history
    tasks = [c for c in instance.commands if isinstance(c, ScheduleStep)]
    assert len({t.execution_id for t in tasks}) == len(tasks)
    assert {read_task(t.payload).run for t in tasks} == {1, 2, 3}


def test_the_recorded_events_rebuild_exactly_the_engine_history() -> None:
    instance = Instance(approval)
    instance.send(Start(instance.now, ORDER))
    instance.send(Signal(instance.tick(), "approve", "sig-1", "held"))  # held, then appended
    instance.settle()
    instance.fail("reserve#1", "flaky")  # an attempt: bookkeeping, not history
    instance.complete("reserve#1")
    [run] = histories_from_events(instance.events)
    assert run == instance.history()
    step_labels(instance)
    # Through JSON, as the events topic holds them.
    recorded = [Event.from_json(json.loads(json.dumps(e.to_json()))) for e in instance.events]
    assert histories_from_events(recorded) == [instance.history()]
    # Effects keep out of the history's data, and the history replays to the same end.
    for event in instance.events:
        if event.type == "step_scheduled":
            assert EFFECT_KEYS & set(event.data)
            assert event.step == f"{event.data['name']}#{event.data['occurrence']}"
    assert replay(approval, run).result == instance.state.result


def test_effects_are_a_function_of_the_event_alone() -> None:
    instance = Instance(napper)
    instance.start()
    instance.fire(next(iter(instance.timers)))
    instance.complete("ship#1")
    again = [c for e in instance.events for c in CodeKind().effects(Event.from_json(e.to_json()))]
    assert again == instance.commands


def test_the_kind_is_registered_and_its_snapshot_names_it() -> None:
    definition = CodeWorkflowDefinition("three_steps", 1, "code-v1")
    assert kind_of(definition) is CODE and CODE.name == "code"
    instance = Instance(three_steps)
    instance.start()
    assert kind_of_state(instance.state) is CODE
    snapshot = state_to_snapshot(instance.state)
    assert snapshot["kind"] == "code"
    assert state_from_snapshot(json.loads(json.dumps(snapshot))) == instance.state
    assert CODE.max_attempts(definition, TASK_STEP, False) == MAX_ATTEMPTS_BOUND


def test_an_instance_pinned_to_another_version_is_the_callers_bug() -> None:
    state = CODE.initial("wf-1", CodeWorkflowDefinition("three_steps", 1, "a"))
    with pytest.raises(ValueError, match="pinned to three_steps v1, not three_steps v2"):
        CODE.decide(state, CodeWorkflowDefinition("three_steps", 2, "b"), Start(T0))


def test_inputs_before_the_start_and_a_second_start_are_recorded_and_ignored() -> None:
    instance = Instance(three_steps)
    [event] = instance.send(Signal(T0, "approve", "s-1"))
    assert event.type == "signal_ignored" and event.data["reason"] == "not_started"
    [event] = instance.send(StepSucceeded(T0, TASK_STEP, 1, output={}))
    assert event.type == "step_outcome_fenced"
    instance.start()
    [event] = instance.send(Start(instance.tick(), ORDER))
    assert event.type == "start_ignored"


def test_a_signal_input_reads_back_from_json_and_a_dag_instance_ignores_it() -> None:
    item = Signal(T0, "approve", "s-1", {"ok": True})
    assert input_from_json(json.loads(json.dumps(input_to_json(item)))) == item
    document = {"definitionId": "d", "version": 1, "steps": [{"id": "a", "type": "noop"}]}
    definition = parse_definition(document)
    state = DAG.initial("w", definition)
    state, _, _ = DAG.decide(state, definition, Start(T0))
    before = state
    state, events, _ = DAG.decide(state, definition, item)
    assert [e.type for e in events] == ["signal_ignored"]
    assert state.status == before.status and state.steps == before.steps


def step_labels(instance: Instance) -> None:
    """Every recorded event of a step names it `name#occurrence`."""
    occurrence = {
        e.position: f"{e.name}#{e.data['occurrence']}"
        for e in instance.history()
        if e.type == "step_scheduled"
    }
    for event in instance.events:
        if event.type in ("step_scheduled", "step_completed", "step_failed"):
            assert event.step == occurrence[event.data["position"]]


def test_a_step_outcome_held_while_a_task_is_out_goes_in_after_its_commands() -> None:
    instance = Instance(both)
    instance.start()
    assert set(instance.steps) == {"reserve#1", "charge#1"}
    instance.send(run_step(instance.steps.pop("reserve#1"), instance.tick()))
    [held] = instance.send(run_step(instance.steps.pop("charge#1"), instance.tick()))
    assert held.type == "input_held" and held.step == "charge#1" and held.attempt == 1
    instance.settle()
    assert instance.state.result == ["reservation-o-1", {"charged": 10}]
    step_labels(instance)
    assert histories_from_events(instance.events) == [instance.history()]


def test_a_compensation_that_fails_finally_parks_the_instance_with_an_alert() -> None:
    instance = Instance(undo_fails)
    instance.start()
    instance.complete("reserve#1")
    instance.complete("decline#1")  # fails permanently: the rollback runs
    instance.fail("release#1", "still broken", permanent=True)
    assert instance.types()[-1] == "workflow_parked"
    assert instance.state.status == "blocked" and instance.state.parked == "compensation_failed"
    [alert] = instance.commands_of(RaiseAlert)
    assert alert.kind == "workflow_parked" and "still broken" in alert.message
    step_labels(instance)


def started_child(parent_run: Instance) -> tuple[SendInput, Instance]:
    """The parent's start of its child, and the child told it (as the orchestrator does)."""
    [start] = parent_run.commands_of(SendInput)
    child = Instance(napper, workflow_id=start.workflow_id)
    child.now = parent_run.now
    child.send(start.item)
    child.settle()
    return start, child


def test_a_child_workflow_runs_as_an_instance_of_its_own_and_its_end_answers_the_parent() -> None:
    parent_run = Instance(parent)
    parent_run.start()
    assert parent_run.types()[-1] == "child_started" and parent_run.state.status == "running"
    start, child = started_child(parent_run)
    assert (start.workflow_id, start.definition_id) == ("wf-1:napper:1", "napper")
    assert start.input_id == "wf:wf-1:child:1:wf-1:napper:1"  # the same on a retried batch
    position = parent_run.history()[-1].position
    assert start.item == StartChild(parent_run.now, "wf-1", position, ORDER)
    assert parent_run.state.children == {"wf-1:napper:1": position}
    assert child.state.parent == ("wf-1", 1, position) and child.state.status == "running"
    [timer_id] = child.timers
    child.fire(timer_id)
    child.complete("ship#1")
    assert child.state.status == "succeeded"
    [ended] = child.commands_of(SendInput)
    assert ended.workflow_id == "wf-1" and ended.input_id == "wf:wf-1:napper:1:ended:wf-1:1"
    assert ended.item == ChildEnded(
        child.now, "wf-1:napper:1", position, "succeeded", "shipped-o-1"
    )
    parent_run.now = child.now
    parent_run.send(ended.item)
    parent_run.settle()
    assert parent_run.types()[-2:] == ["child_completed", "workflow_completed"]
    assert parent_run.state.status == "succeeded" and parent_run.state.result == "shipped-o-1"
    assert parent_run.state.children == {}
    # Told again (a retried batch): recorded, and changes nothing.
    [again] = parent_run.send(ended.item)
    assert again.type == "child_ended_ignored"


@workflow("careful_parent")
async def careful_parent(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    try:
        return str(await ctx.child(napper, order))
    except Exception as exc:
        return f"the child failed: {exc}"


def test_a_child_that_fails_or_is_cancelled_fails_the_parents_wait() -> None:
    parent_run = Instance(careful_parent)
    parent_run.start()
    _, child = started_child(parent_run)
    child.send(Cancel(child.tick(), "ops", "not needed"))
    child.settle()
    assert child.state.status == "cancelled"
    [ended] = child.commands_of(SendInput)
    assert ended.item.status == "cancelled" and ended.item.error
    parent_run.send(ended.item)
    parent_run.settle()
    assert parent_run.types()[-2] == "child_failed"
    assert parent_run.state.result.startswith("the child failed:")


def test_a_child_id_another_instance_has_fails_the_parents_wait_at_once() -> None:
    parent_run = Instance(careful_parent)
    parent_run.start()
    start, child = started_child(parent_run)
    # The same start again changes nothing; another parent's start of that id is told no.
    [ignored] = child.send(start.item)
    assert ignored.type == "start_ignored" and not child.kind.effects(ignored)
    [refused] = child.send(replace(start.item, parent_id="wf-2"))
    [told] = child.kind.effects(refused)
    assert isinstance(told, SendInput) and told.workflow_id == "wf-2"
    assert told.item.status == "failed" and "exists already" in (told.item.error or "")


@workflow("looping_parent")
async def looping_parent(ctx: WorkflowContext, count: int) -> Any:
    result = await ctx.child(napper, ORDER, workflow_id="fixed-child")
    if count < 2:
        ctx.continue_as_new(count + 1)
    return result


def test_a_fixed_child_id_started_again_by_the_next_run_fails_that_wait_at_once() -> None:
    """The id names an instance that ended (a child of the parent's first run): the second run
    must not wait for it forever, nor take the first child's end for its own."""
    parent_run = Instance(looping_parent)
    parent_run.start(1)
    start, child = started_child(parent_run)
    [timer_id] = child.timers
    child.fire(timer_id)
    child.complete("ship#1")
    [ended] = child.commands_of(SendInput)
    assert ended.item.run == 1
    parent_run.send(ended.item)
    parent_run.settle()
    assert parent_run.state.run == 2
    [_, again] = parent_run.commands_of(SendInput)
    assert again.workflow_id == "fixed-child" and again.item.run == 2
    assert again.input_id != start.input_id
    [refused] = child.send(again.item)
    [told] = child.kind.effects(refused)
    assert isinstance(told, SendInput) and told.item.run == 2 and told.item.status == "failed"
    # The first run's end, delivered late to the second run, answers nothing.
    [late] = parent_run.send(ended.item)
    assert late.type == "child_ended_ignored"
    parent_run.send(told.item)
    parent_run.settle()
    assert parent_run.types()[-2] == "child_failed" and parent_run.state.status == "failed"
    assert "exists already" in (parent_run.state.error or "")


@workflow("twins")
async def twins(ctx: WorkflowContext, order: dict[str, Any]) -> list[Any]:
    both = await asyncio.gather(
        ctx.child(napper, order, workflow_id="twin"),
        ctx.child(napper, order, workflow_id="twin"),
        return_exceptions=True,
    )
    return [str(result) for result in both]


def test_one_run_starting_one_child_id_twice_fails_the_second_wait_and_keeps_the_first() -> None:
    parent_run = Instance(twins)
    parent_run.start()
    assert len(parent_run.commands_of(SendInput)) == 1  # one start: the second is no instance
    assert parent_run.types().count("child_started") == 2
    assert parent_run.types()[-1] == "child_failed"
    _, child = started_child(parent_run)
    [timer_id] = child.timers
    child.fire(timer_id)
    child.complete("ship#1")
    [ended] = child.commands_of(SendInput)
    parent_run.send(ended.item)
    parent_run.settle()
    assert parent_run.state.status == "succeeded"
    first, second = parent_run.state.result
    assert first == "shipped-o-1" and "running already" in second


def test_a_parent_that_ends_cancels_its_open_children() -> None:
    parent_run = Instance(parent)
    parent_run.start()
    parent_run.send(Cancel(parent_run.tick(), "ops", "stop everything"))
    parent_run.settle()
    assert parent_run.state.status == "cancelled" and parent_run.state.children == {}
    _, cancel = parent_run.commands_of(SendInput)
    assert cancel.workflow_id == "wf-1:napper:1"
    assert isinstance(cancel.item, Cancel) and cancel.item.actor == "workflow:wf-1"


def test_a_dag_named_as_a_child_refuses_and_tells_the_parent_at_once() -> None:
    document = {
        "definitionId": "a_dag",
        "version": 1,
        "steps": [{"id": "a", "type": "noop"}],
    }
    definition = parse_definition(document)
    dag = kind_of(definition)
    state = dag.initial("wf-1:a_dag:1", definition)
    _, [event], _ = dag.decide(state, definition, StartChild(T0, "wf-1", 2, {}))
    assert event.type == "start_child_refused"
    [send] = dag.effects(event)
    assert isinstance(send, SendInput) and send.workflow_id == "wf-1"
    assert send.item == ChildEnded(T0, "wf-1:a_dag:1", 2, "failed", error=event.data["reason"])
    assert "must be written as code" in send.item.error


def test_an_operator_retry_of_an_open_step_stops_its_attempt_and_runs_the_next_at_once() -> None:
    instance = Instance(saga)
    instance.start()
    first = instance.steps["reserve#1"]
    at = instance.tick()
    [repaired] = instance.send(RetryStep(at, "reserve#1", "ops"))
    assert (repaired.type, repaired.actor, repaired.data["action"]) == (
        "step_repaired",
        "ops",
        "retry",
    )
    stop = instance.commands_of(CancelExecution)[-1]
    assert (stop.step, stop.execution_id, stop.attempt) == ("reserve#1", first.execution_id, 1)
    again = instance.steps["reserve#1"]
    assert (again.attempt, again.execution_id, again.not_before_ms) == (2, first.execution_id, at)
    # The stopped attempt's late verdict is fenced; the new attempt's goes on to the code.
    [fenced] = instance.send(StepSucceeded(instance.tick(), "reserve#1", 1, output="late"))
    assert fenced.data["reason"] == "stale_attempt"
    instance.complete("reserve#1")
    assert "hold#1" in instance.steps


def test_an_operator_completes_a_stuck_step_with_an_output_the_code_receives() -> None:
    instance = Instance(saga)
    instance.start()
    first = instance.steps["reserve#1"]
    instance.send(CompleteStep(instance.tick(), "reserve#1", "ops", output="by-hand"))
    stop = instance.commands_of(CancelExecution)[-1]
    assert (stop.execution_id, stop.attempt) == (first.execution_id, 1)
    [completed] = [e for e in instance.state.history if e.type == "step_completed"]
    assert completed.data["result"] == "by-hand"
    instance.settle()
    assert "hold#1" in instance.steps  # the code went on with the output given


def test_a_skip_or_a_repair_of_a_step_that_is_not_open_changes_nothing() -> None:
    instance = Instance(saga)
    instance.start()
    for item in (
        SkipStep(instance.tick(), "reserve#1", "ops"),
        CompleteStep(instance.tick(), "nowhere#1", "ops"),
    ):
        [ignored] = instance.send(item)
        assert ignored.type == f"{item.kind}_ignored"
    assert set(instance.steps) == {"reserve#1"}


@workflow("impatient")
async def impatient(ctx: WorkflowContext, run: int) -> int:
    # Run 1 starts a step and moves on to its next run before the step answers.
    pending = asyncio.ensure_future(ctx.run(reserve, {"id": run}))
    if run == 1:
        ctx.continue_as_new(2)
    return len(await pending)


def test_a_step_left_running_by_continue_as_new_cannot_answer_for_the_next_runs_step() -> None:
    instance = Instance(impatient)
    instance.start(1)
    assert instance.state.run == 2
    [old] = [c for c in instance.commands_of(CancelExecution) if c.step == "reserve#1"]
    assert set(instance.steps) == {"reserve#1@2"}
    # The stopped run-1 attempt's verdict comes in late: fenced, never the run-2 step's.
    [fenced] = instance.send(StepCancelled(instance.tick(), old.step, old.attempt))
    assert (fenced.type, fenced.data["reason"]) == ("step_outcome_fenced", "unknown_step")
    instance.complete("reserve#1@2")
    assert instance.state.status == "succeeded"
