"""`code_steps`: what a code workflow's recorded events tell people about its steps, sleeps and
signal waits (the timeline of `workflows get` and the console)."""

from __future__ import annotations

from typing import Any

from tickwheel.core.codeflow.timeline import code_steps


def _event(seq: int, kind: str, at: int, step: str | None = None, **data: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "event_type": kind,
        "event_time": at,
        "step_id": step,
        "attempt": data.pop("attempt", 0),
        "data": {"type": kind, "at_ms": at, **data},
    }


def test_steps_sleeps_and_waits_show_as_they_ran_with_their_deadlines() -> None:
    events = [
        _event(1, "workflow_started", 10, name="order", run=1),
        _event(2, "step_scheduled", 10, "charge#1", position=1, name="charge", attempt=1),
        _event(3, "step_completed", 50, "charge#1", position=1, result={"ok": 1}),
        _event(4, "timer_started", 50, position=2, name="sleep", fire_at_ms=1050),
        _event(5, "timer_fired", 1050, position=2),
        _event(6, "signal_wait_started", 1050, position=3, name="approval", fire_at_ms=9050),
    ]
    steps = code_steps(events)
    assert list(steps) == ["charge#1", "sleep@2", "signal:approval@3"]
    assert steps["charge#1"]["status"] == "succeeded" and steps["charge#1"]["output"] == {"ok": 1}
    assert (steps["sleep@2"]["status"], steps["sleep@2"]["endedAt"]) == ("succeeded", 1050)
    assert steps["signal:approval@3"]["status"] == "waiting"
    assert steps["signal:approval@3"]["deadline"] == 9050

    answered = code_steps([*events, _event(7, "signal_received", 2000, name="approval", payload=1)])
    assert answered["signal:approval@3"]["status"] == "succeeded"
    timed_out = code_steps([*events, _event(7, "timer_fired", 9050, position=3)])
    assert timed_out["signal:approval@3"]["status"] == "timed_out"


def test_a_failed_step_a_rollback_and_an_early_signal_are_told_apart() -> None:
    events = [
        _event(1, "workflow_started", 0, name="order", run=1),
        _event(2, "signal_received", 1, name="approval", payload={"yes": True}),
        _event(3, "step_scheduled", 2, "charge#1", position=1, name="charge", attempt=1),
        _event(4, "step_scheduled", 9, "charge#1", position=1, name="charge", attempt=3),
        _event(5, "step_failed", 20, "charge#1", position=1, error="declined"),
        _event(6, "step_scheduled", 21, "undo#1", position=2, name="undo", compensation=True),
    ]
    steps = code_steps(events)
    assert steps["signal:approval#2"]["status"] == "received"
    assert (steps["charge#1"]["status"], steps["charge#1"]["attempt"]) == ("failed", 3)
    assert steps["charge#1"]["output"] == {"error": "declined"}
    assert (steps["undo#1"]["kind"], steps["undo#1"]["status"]) == ("compensation", "running")


def test_a_continued_run_replaces_the_steps_of_the_run_before() -> None:
    events = [
        _event(1, "workflow_started", 0, name="loop", run=1),
        _event(2, "step_scheduled", 1, "tick#1", position=1, name="tick", attempt=1),
        _event(3, "step_completed", 2, "tick#1", position=1, result=1),
        _event(4, "workflow_started", 3, name="loop", run=2),
        _event(5, "step_scheduled", 4, "tick#1", position=1, name="tick", attempt=1),
    ]
    steps = code_steps(events)
    assert list(steps) == ["tick#1"] and steps["tick#1"]["status"] == "running"


def test_children_show_running_then_with_their_result_or_error() -> None:
    events = [
        _event(1, "workflow_started", 0, name="parent", run=1),
        _event(2, "child_started", 1, position=1, name="pack", child_id="p/pack#1"),
        _event(3, "child_started", 2, position=2, name="pack", child_id="p/pack#2"),
        _event(4, "child_completed", 30, position=1, result="parcel"),
    ]
    steps = code_steps(events)
    assert list(steps) == ["child:p/pack#1", "child:p/pack#2"]
    assert steps["child:p/pack#1"]["status"] == "succeeded"
    assert steps["child:p/pack#1"]["output"] == "parcel"
    assert steps["child:p/pack#2"]["status"] == "running"
    failed = code_steps([*events, _event(5, "child_failed", 40, position=2, error="no items")])
    assert failed["child:p/pack#2"]["status"] == "failed"
    assert failed["child:p/pack#2"]["output"] == {"error": "no items"}


def test_a_child_the_parents_end_left_running_shows_cancelled() -> None:
    events = [
        _event(1, "workflow_started", 0, name="parent", run=1),
        _event(2, "child_started", 1, position=1, name="pack", child_id="p:pack:1"),
        _event(3, "workflow_cancelled", 5, position=2),
    ]
    assert code_steps(events)["child:p:pack:1"]["status"] == "cancelled"
