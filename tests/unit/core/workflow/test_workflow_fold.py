"""The fold's rules that golden histories show less directly: identity, pinning, the output
budget, and that evolve over the recorded events rebuilds the state decide worked on."""

from __future__ import annotations

import dataclasses
import uuid
from functools import reduce

import pytest

from tickwheel.core.identity import EXECUTION_NAMESPACE
from tickwheel.core.workflow import (
    MAX_OUTPUT_BYTES,
    ClearAlert,
    Event,
    RaiseAlert,
    Start,
    StepFailed,
    StepSucceeded,
    TimerFired,
    decide,
    evolve,
    initial_state,
    parse_definition,
    step,
    step_execution_id,
)

DEFINITION = parse_definition({"definitionId": "d", "version": 3, "steps": [
    {"id": "a", "type": "t", "maxAttempts": 2},
    {"id": "b", "type": "t", "dependsOn": ["a"]},
]})  # fmt: skip


def test_a_steps_execution_id_is_a_uuid5_of_its_workflow_and_step_alone() -> None:
    expected = str(uuid.uuid5(EXECUTION_NAMESPACE, "wf1:3:wf1:a"))
    assert step_execution_id("wf1", "a") == expected
    assert step_execution_id("wf1", "a", compensation=True) != expected
    state, events, _ = step(initial_state("wf1", DEFINITION), DEFINITION, Start(0))
    state, events, _ = step(state, DEFINITION, StepFailed(1, "a", 1, "flaky"))
    ids = {e.data["execution_id"] for e in events if e.type == "step_scheduled"}
    assert ids == {expected} and state.steps["a"].attempt == 2


def test_an_instance_refuses_a_definition_it_is_not_pinned_to() -> None:
    other = parse_definition(
        {"definitionId": "d", "version": 4, "steps": [{"id": "a", "type": "t"}]}
    )
    with pytest.raises(ValueError, match="pinned to d v3"):
        decide(initial_state("wf1", DEFINITION), other, Start(0))


def test_an_output_over_the_budget_fails_the_step_with_the_reason_and_is_compensated() -> None:
    state, _, _ = step(initial_state("wf1", DEFINITION), DEFINITION, Start(0))
    big = "x" * (MAX_OUTPUT_BYTES + 1)
    state, events, _ = step(state, DEFINITION, StepSucceeded(1, "a", 1, big))
    rejected = [e for e in events if e.type == "step_output_rejected"]
    assert rejected and f"at most {MAX_OUTPUT_BYTES} bytes" in rejected[0].data["error"]
    assert state.completed == ("a",)
    assert state.status == "compensated"


def test_events_round_trip_json_and_evolve_rebuilds_the_state() -> None:
    state = initial_state("wf1", DEFINITION)
    history: list[Event] = []
    for item in (Start(0, {"k": 1}), StepSucceeded(1, "a", 1, {"o": 1}), StepSucceeded(2, "b", 1)):
        state, events, _ = step(state, DEFINITION, item)
        history.extend(Event.from_json(e.to_json()) for e in events)
    assert reduce(evolve, history, initial_state("wf1", DEFINITION)) == state
    assert state.status == "succeeded" and [e.seq for e in history] == list(range(1, 7))


SLOW = parse_definition({"definitionId": "slow", "version": 1, "steps": [
    {"id": "crawl", "type": "t", "expectedDuration": "1m"},
]})  # fmt: skip


def test_a_step_past_its_expected_duration_is_a_timeline_fact_and_raises_no_alert() -> None:
    # Decision 0130: the watchdog's workflow_step_stuck is the one alert for a stuck step.
    state, events, _ = step(initial_state("wf1", SLOW), SLOW, Start(0))
    assert ["overdue:crawl", 60_000] in events[-1].data["start_timers"]
    state, events, commands = step(state, SLOW, TimerFired(60_000, "overdue:crawl"))
    assert [e.type for e in events] == ["step_overdue"]
    assert events[0].data == {"fired_timer": "overdue:crawl", "expected_duration_ms": 60_000}
    assert commands == [] and state.alerts == frozenset()
    state, _, commands = step(state, SLOW, StepSucceeded(70_000, "crawl", 1, None))
    assert not any(isinstance(c, ClearAlert | RaiseAlert) for c in commands)


def test_an_overdue_alert_raised_before_0130_is_still_cleared_when_its_step_ends() -> None:
    state, _, _ = step(initial_state("wf1", SLOW), SLOW, Start(0))
    legacy = "wf:wf1:overdue:crawl"
    state = dataclasses.replace(state, alerts=frozenset({legacy}))  # a snapshot from before
    state, _, commands = step(state, SLOW, StepSucceeded(70_000, "crawl", 1, None))
    assert ClearAlert(legacy) in commands and state.alerts == frozenset()
