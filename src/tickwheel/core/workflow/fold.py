"""`decide`: what an input means for an instance, as events. The heart of the fold.

The shape (docs/decisions/0059):

    decide(state, definition, input) -> list[Event]     pure; never raises for an outcome
    evolve(state, event) -> state                       (state.py) applies one event
    effects(event) -> list[Command]                     (events.py) what to tell the services

`decide` builds its events one at a time and folds each into a working state as it goes, so
later decisions in the same input see earlier ones (a success makes dependents ready in the
same batch), and `reduce(evolve, decide(...), state)` is the state `step` returns. An input
that cannot apply — a duplicate, an outcome for a replaced attempt, a stale approval round,
an operator action on a step not in a state to take it — becomes one recorded
`*_ignored` / `*_fenced` event with a `reason`, and changes nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tickwheel.core.workflow import repair
from tickwheel.core.workflow.decider import Decider
from tickwheel.core.workflow.deciding import check_pinned
from tickwheel.core.workflow.definition import WorkflowDefinition
from tickwheel.core.workflow.events import (
    Command,
    Event,
    child_start_refused,
    effects,
    send_input_entry,
)
from tickwheel.core.workflow.ids import approval_timer, parse_timer
from tickwheel.core.workflow.inputs import (
    Approve,
    Cancel,
    ChildEnded,
    Input,
    Reassign,
    Reject,
    Signal,
    Start,
    StartChild,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
)
from tickwheel.core.workflow.state import WorkflowState, evolve

__all__ = ["decide", "decide_folded", "step"]


def _start(d: Decider, item: Start) -> None:
    if d.state.status != "new":
        d.emit("start_ignored", reason=f"already {d.state.status}")
        return
    try:
        json.dumps(item.input)
    except (TypeError, ValueError):
        d.emit("start_ignored", reason="the input is not JSON data")
        return
    d.emit("workflow_started", input=item.input)


def _outcome(d: Decider, item: StepSucceeded | StepFailed | StepCancelled) -> None:
    spec = d.definition.step(item.step)
    st = d.state.steps.get(item.step)
    about: dict[str, Any] = {
        "outcome": item.kind.removeprefix("step_"),
        "compensation": item.compensation,
    }
    if spec is None or st is None:
        d.fence(item, "unknown_step", **about)
        return
    if item.compensation:
        if st.comp_status != "running" or item.attempt != st.comp_attempt:
            reason = "stale_attempt" if item.attempt < st.comp_attempt else "not_running"
            d.fence(item, reason, **about)
        else:
            d.compensation_outcome(spec, item)
        return
    if spec.task is None:
        d.fence(item, f"a {spec.kind} step has no executions", **about)
    elif item.attempt != st.attempt:
        d.fence(item, "stale_attempt" if item.attempt < st.attempt else "unknown_attempt", **about)
    elif st.status not in ("running", "cancelling"):
        d.fence(
            item,
            "duplicate" if st.status in ("succeeded", "failed") else f"step_{st.status}",
            **about,
        )
    elif isinstance(item, StepSucceeded):
        problem = d.output_problem(item.output)
        if problem is None:
            d.succeed(spec, output=item.output)
        else:
            d.emit("step_output_rejected", spec.id, item.attempt, error=problem)
            d.fail_attempt(spec, problem, permanent=True)
    elif st.status == "cancelling":
        d.emit(
            "step_cancelled" if isinstance(item, StepCancelled) else "step_failed",
            spec.id,
            item.attempt,
            final=True,
            error=getattr(item, "error", None) or None,
            cancel_timers=d.step_timers(spec.id),
            clear_alerts=d.step_alerts(spec.id),
        )
    elif isinstance(item, StepFailed):
        d.fail_attempt(spec, item.error, permanent=item.permanent)
    else:
        # Cancelled without the fold asking (executions.control by hand): the attempt is over.
        d.fail_attempt(spec, "cancelled outside the workflow", permanent=True)


def _timer(d: Decider, item: TimerFired) -> None:
    kind, step_id, number = parse_timer(item.timer_id)
    spec = d.definition.step(step_id)
    st = d.state.steps.get(step_id)
    if item.timer_id not in d.state.timers or spec is None or st is None:
        d.emit("timer_fired_ignored", step_id or None, timer_id=item.timer_id, reason="not_open")
        return
    fired: dict[str, Any] = {"fired_timer": item.timer_id}
    if kind == "sleep":
        d.succeed(spec, output=None, **fired)
    elif kind == "deadline":
        assert spec.timeout_ms is not None
        d.emit(
            "step_timed_out",
            spec.id,
            number,
            **fired,
            cancel_execution=d.execution(spec.id, number),
            timeout_ms=spec.timeout_ms,
        )
        d.fail_attempt(
            spec, f"attempt {number} timed out after {spec.timeout_ms} ms", permanent=False
        )
    elif kind == "approval":
        d.emit("approval_timed_out", spec.id, **fired, round=number)
        if spec.on_timeout == "escalate" and st.escalations < spec.max_escalations:
            d.emit("approval_escalated", spec.id, round=number)
            d.request_approval(spec, spec.escalate_to or spec.assignees)
        else:
            d.fail_attempt(spec, f"approval round {number} timed out", permanent=True)
    else:  # overdue: a fact of the step's timeline; the watchdog raises the alert (0130)
        d.emit(
            "step_overdue",
            spec.id,
            st.attempt,
            **fired,
            expected_duration_ms=spec.expected_duration_ms,
        )


def _approval(d: Decider, item: Approve | Reject) -> None:
    spec = d.definition.step(item.step)
    st = d.state.steps.get(item.step)
    about: dict[str, Any] = {"round": item.round, "note": item.note, "decision": item.kind}
    reason = None
    if spec is None or st is None or spec.kind != "approval":
        reason = "not_an_approval_step"
    elif d.state.status != "running":
        reason = f"workflow_{d.state.status}"
    elif st.status != "waiting":
        reason = f"step_{st.status}"
    elif item.round != st.round:
        reason = "stale_round" if item.round < st.round else "unknown_round"
    if reason is not None or spec is None:
        d.emit("approval_fenced", item.step, actor=item.actor, reason=reason, **about)
        return
    if isinstance(item, Approve):
        d.emit("approval_approved", spec.id, actor=item.actor, **about)
        d.succeed(
            spec,
            output={"approved": True, "round": item.round, "actor": item.actor, "note": item.note},
            actor=item.actor,
        )
    else:
        d.emit("approval_rejected", spec.id, actor=item.actor, **about)
        d.fail_attempt(spec, f"rejected by {item.actor}: {item.note}", permanent=True)


def _reassign(d: Decider, item: Reassign) -> None:
    """A waiting approval goes to `assignees` as a new round; the old round's timer goes
    with it (its timeout no longer applies), and escalations are not spent."""
    spec = d.definition.step(item.step)
    st = d.state.steps.get(item.step)
    reason = None
    if spec is None or st is None or spec.kind != "approval":
        reason = "not_an_approval_step"
    elif d.state.status != "running":
        reason = f"workflow_{d.state.status}"
    elif st.status != "waiting":
        reason = f"step_{st.status}"
    elif not item.assignees:
        reason = "no_assignees"
    if reason is not None or spec is None or st is None:
        d.emit("reassign_ignored", item.step, actor=item.actor, reason=reason)
        return
    d.emit(
        "approval_reassigned",
        spec.id,
        actor=item.actor,
        round=st.round,
        assignees=list(item.assignees),
        cancel_timers=[t for t in d.state.timers if t == approval_timer(spec.id, st.round)],
    )
    d.request_approval(spec, item.assignees)


def _cancel(d: Decider, item: Cancel) -> None:
    if d.state.status != "running":
        d.emit("cancel_ignored", actor=item.actor, reason=f"workflow_{d.state.status}")
        return
    d.stop(
        "cancelled",
        compensate=d.definition.on_cancel == "compensate",
        actor=item.actor,
        reason=item.reason,
    )


def _signal(d: Decider, item: Signal) -> None:
    # Signals are for workflows written as code; one sent to a DAG instance is recorded, and
    # changes nothing.
    d.emit(
        "signal_ignored",
        name=item.name,
        signal_id=item.signal_id,
        reason="a DAG workflow takes no signals",
    )


def _start_child(d: Decider, item: StartChild) -> None:
    # A child must be written as code (`ctx.child`): its parent is told at once that this
    # one cannot be, and the instance is not started.
    reason = f"{d.state.definition_id} is a DAG workflow; a child must be written as code"
    told = child_start_refused(d.state.workflow_id, item, item.at_ms, "dag", reason)
    d.emit("start_child_refused", reason=reason, send_inputs=[send_input_entry(told)])


def _child_ended(d: Decider, item: ChildEnded) -> None:
    d.emit("child_ended_ignored", child_id=item.child_id, reason="a DAG workflow has no children")


_HANDLERS: dict[str, Callable[[Decider, Any], None]] = {
    "start": _start,
    "start_child": _start_child,
    "child_ended": _child_ended,
    "step_succeeded": _outcome,
    "step_failed": _outcome,
    "step_cancelled": _outcome,
    "timer_fired": _timer,
    "approve": _approval,
    "reject": _approval,
    "reassign": _reassign,
    "cancel": _cancel,
    "signal": _signal,
    "retry_step": repair.retry_step,
    "complete_step": repair.complete_step,
    "skip_step": repair.skip_step,
}


def decide(state: WorkflowState, definition: WorkflowDefinition, item: Input) -> list[Event]:
    """The events `item` gives rise to in `state` (at least one: an input is always recorded).

    `definition` must be the version the instance is pinned to (`ValueError` otherwise: that
    is the caller's bug, not data).
    """
    return _decided(state, definition, item).events


def decide_folded(
    state: WorkflowState, definition: WorkflowDefinition, item: Input
) -> tuple[WorkflowState, list[Event], list[str]]:
    """`decide`, with what it folded on the way: the state after every event, and the
    instance's status after each one (so a caller need not `evolve` the events again)."""
    d = _decided(state, definition, item)
    return d.state, d.events, d.statuses


def _decided(state: WorkflowState, definition: WorkflowDefinition, item: Input) -> Decider:
    check_pinned(state, definition)
    d = Decider(state, definition, item.at_ms)
    if state.status == "new" and item.kind not in ("start", "start_child"):
        d.emit(
            f"{item.kind}_ignored"
            if item.kind in repair.OPERATOR
            or item.kind in ("cancel", "timer_fired", "reassign", "signal")
            else "step_outcome_fenced"
            if item.kind.startswith("step_")
            else "approval_fenced",
            getattr(item, "step", None),
            reason="not_started",
        )
        return d
    _HANDLERS[item.kind](d, item)
    d.advance()
    return d


def step(
    state: WorkflowState, definition: WorkflowDefinition, item: Input
) -> tuple[WorkflowState, list[Event], list[Command]]:
    """`decide`, then `evolve` and `effects` of every event: what the orchestrator does per
    input (the events, the new snapshot and the commands go out in one transaction)."""
    events = decide(state, definition, item)
    commands: list[Command] = []
    for event in events:
        state = evolve(state, event)
        commands.extend(effects(event))
    return state, events, commands
