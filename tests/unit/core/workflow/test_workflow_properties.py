"""Property tests of the workflow fold over random DAGs and arbitrary interleavings,
duplications and outcomes of everything the instance asked for (executions, timers,
approvals, cancellations), with a cancel dropped in at a random moment.

The harness plays the services: every command the fold emits puts the inputs that could
answer it into a pool (a schedule_step can come back succeeded, failed or failed
permanently; a start_timer as its firing; a cancel_execution as a cancelled verdict; an
open_approval as an approve or reject), and hypothesis picks which arrives next, whether it
also arrives twice, and how it turned out.
"""

from __future__ import annotations

from collections import Counter
from functools import reduce
from typing import Any

from hypothesis import event as note_case
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tickwheel.core.workflow import (
    TERMINAL,
    Approve,
    Cancel,
    CancelExecution,
    Command,
    Event,
    Input,
    OpenApproval,
    Reject,
    ScheduleCompensation,
    ScheduleStep,
    Start,
    StartTimer,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
    WorkflowDefinition,
    evolve,
    initial_state,
    parse_definition,
    step,
)

STARTS = ("step_scheduled", "sleep_started", "approval_requested")


@st.composite
def definitions(draw: st.DrawFn) -> WorkflowDefinition:
    count = draw(st.integers(1, 7))
    steps: list[dict[str, Any]] = []
    for i in range(count):
        deps = draw(st.lists(st.sampled_from(range(i)), unique=True, max_size=3)) if i else []
        kind = draw(st.sampled_from(["task", "task", "task", "sleep", "approval"]))
        spec: dict[str, Any] = {"id": f"s{i}", "kind": kind, "dependsOn": [f"s{d}" for d in deps],
                                "onFailure": draw(st.sampled_from(["retry", "skip", "fail",
                                                                   "compensate"]))}  # fmt: skip
        if kind == "task":
            spec.update(type="t", maxAttempts=draw(st.integers(1, 3)))
            if draw(st.booleans()):
                spec["timeout"] = "1m"
        elif kind == "sleep":
            spec["duration"] = "1h"
        elif draw(st.booleans()):
            spec.update(timeout="1h", onTimeout=draw(st.sampled_from(["fail", "escalate"])))
        if draw(st.booleans()):
            spec["compensation"] = {"type": "undo", "maxAttempts": draw(st.integers(1, 2))}
        steps.append(spec)
    return parse_definition({
        "definitionId": "p", "version": 1, "steps": steps,
        "onFailure": draw(st.sampled_from(["compensate", "fail"])),
        "onCancel": draw(st.sampled_from(["compensate", "abandon"])),
    })  # fmt: skip


def answers(command: Command, at: int) -> list[list[Input]]:
    """The inputs that could answer `command`, as alternatives (hypothesis picks one)."""
    if isinstance(command, ScheduleStep | ScheduleCompensation):
        comp = isinstance(command, ScheduleCompensation)
        s, a = command.step, command.attempt
        return [[StepSucceeded(at, s, a, {"n": a}, comp)], [StepFailed(at, s, a, "x", False, comp)],
                [StepFailed(at, s, a, "x", True, comp)]]  # fmt: skip
    if isinstance(command, StartTimer):
        return [[TimerFired(at, command.timer_id)]]
    if isinstance(command, CancelExecution):
        return [[StepCancelled(at, command.step, command.attempt)],
                [StepSucceeded(at, command.step, command.attempt)]]  # fmt: skip
    if isinstance(command, OpenApproval):
        return [[Approve(at, command.step, command.round, "ann")],
                [Reject(at, command.step, command.round, "ann")]]  # fmt: skip
    return []


def run(definition: WorkflowDefinition, data: st.DataObject) -> tuple[list[Input], list[Event]]:
    state = initial_state("wf-p", definition)
    pool: list[list[list[Input]]] = []
    delivered: list[Input] = []
    history: list[Event] = []
    cancel_at = data.draw(st.integers(0, 60) | st.none(), label="cancel_at")
    at = 0
    item: Input = Start(0, {"k": 1})
    for turn in range(400):
        state, events, commands = step(state, definition, item)
        delivered.append(item)
        history.extend(events)
        at += 1_000
        pool.extend(options for c in commands if (options := answers(c, at)))
        if turn == cancel_at:
            item = Cancel(at, "ops")
            continue
        if not pool:
            break
        options = pool.pop(data.draw(st.integers(0, len(pool) - 1), label="next"))
        choice = options[data.draw(st.integers(0, len(options) - 1), label="outcome")]
        if data.draw(st.integers(0, 9), label="duplicate") == 0:
            pool.append([choice])
        item = choice[0]
    return delivered, history


def _states(definition: WorkflowDefinition, history: list[Event]) -> list[Any]:
    """The state before each event."""
    before, state = [], initial_state("wf-p", definition)
    for event in history:
        before.append(state)
        state = evolve(state, event)
    return [*before, state]


@PROPS
@given(definitions(), st.data())
def test_every_instance_ends_terminal_or_blocked_once_every_outcome_arrived(
    definition: WorkflowDefinition, data: st.DataObject
) -> None:
    _, history = run(definition, data)
    final = _states(definition, history)[-1]
    note_case(f"ended {final.status}")
    note_case(f"compensations {sum(e.type == 'compensation_scheduled' for e in history) > 0}")
    assert final.status in TERMINAL | {"blocked"}, [e.type for e in history]
    if final.status in TERMINAL:
        assert not final.timers, "a finished instance holds no timers"


@PROPS
@given(definitions(), st.data())
def test_a_step_is_scheduled_at_most_once_per_attempt_and_never_after_it_succeeded(
    definition: WorkflowDefinition, data: st.DataObject
) -> None:
    _, history = run(definition, data)
    scheduled = Counter((e.type, e.step, e.attempt) for e in history
                        if e.type in ("step_scheduled", "compensation_scheduled"))  # fmt: skip
    assert all(n == 1 for n in scheduled.values()), scheduled
    succeeded: set[str | None] = set()
    for e in history:
        if e.type in STARTS:
            assert e.step not in succeeded, f"{e.step} ran again after it succeeded"
        if e.type == "step_succeeded":
            succeeded.add(e.step)


@PROPS
@given(definitions(), st.data())
def test_no_dependent_starts_before_its_dependencies_succeeded_or_were_skipped(
    definition: WorkflowDefinition, data: st.DataObject
) -> None:
    _, history = run(definition, data)
    for before, event in zip(_states(definition, history), history, strict=False):
        if event.type in STARTS:
            spec = definition.step(event.step or "")
            assert spec is not None
            for dep in spec.depends_on:
                assert before.steps[dep].status in ("succeeded", "skipped"), (event, dep)
            assert before.status == "running"


@PROPS
@given(definitions(), st.data())
def test_compensations_run_one_at_a_time_in_exact_reverse_completion_order(
    definition: WorkflowDefinition, data: st.DataObject
) -> None:
    _, history = run(definition, data)
    states = _states(definition, history)
    final = states[-1]
    order = [e.step for e in history if e.type == "compensation_scheduled" and e.attempt == 1]
    undoable = [s for s in reversed(final.completed)
                if (spec := definition.step(s)) is not None and spec.compensation is not None]  # fmt: skip
    assert order == undoable[: len(order)]
    if final.status == "compensated" or (final.status == "cancelled" and final.compensate):
        assert order == undoable
    for before, event in zip(states, history, strict=False):
        if event.type == "compensation_scheduled":
            running = [k for k, s in before.steps.items() if s.comp_status == "running"]
            assert running in ([], [event.step]), running
            assert not any(s.status == "cancelling" for s in before.steps.values())


@PROPS
@given(definitions(), st.data())
def test_replaying_the_same_inputs_gives_the_same_events_and_the_fold_rebuilds_the_state(
    definition: WorkflowDefinition, data: st.DataObject
) -> None:
    delivered, history = run(definition, data)
    state, again = initial_state("wf-p", definition), []
    for item in delivered:
        state, events, _ = step(state, definition, item)
        again.extend(events)
    assert again == history
    assert reduce(evolve, history, initial_state("wf-p", definition)) == state
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
