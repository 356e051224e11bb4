"""Properties of the replay engine, whatever order the world answers in: hypothesis picks
which open step completes (or fails) next, when a timer fires, when signals arrive
(duplicates included) and whether a cancel does. However the live run went, replaying its history whole takes the same
path to the same end, and feeding it again one event at a time issues exactly the recorded
commands."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import event as note_case
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.core.codeflow import flows
from tickwheel.core.codeflow import (
    HistoryEvent,
    StepFailed,
    WorkflowContext,
    WorkflowRun,
    WorkflowSpec,
    replay,
)

T0 = 1_800_000_000_000


async def busy(ctx: WorkflowContext, items: list[str]) -> dict[str, Any]:
    ctx.on_rollback(flows.release_inventory, "held")
    prices = await asyncio.gather(*(ctx.run(flows.price, item) for item in items))
    first = await ctx.wait_signal("go", timeout="1h")
    await ctx.sleep("1m")
    try:
        extra = await ctx.run(flows.notify, {"id": "x"})
    except StepFailed:
        extra = "failed"
    second = await ctx.wait_signal("go", timeout="1h")
    return {
        "prices": prices,
        "signals": [first, second],
        "extra": extra,
        "at": ctx.now().isoformat(),
    }


BUSY = WorkflowSpec("busy", busy)


def answers(command: HistoryEvent) -> list[str]:
    if command.type == "step_scheduled":
        return ["complete", "fail"]
    if command.type in ("timer_started", "signal_wait_started") and command.data.get("fire_at_ms"):
        return ["fire"]
    return []


@settings(max_examples=150, deadline=None)
@given(items=st.lists(st.sampled_from("abc"), min_size=1, max_size=4), data=st.data())
def test_any_order_of_answers_replays_to_the_same_end(
    items: list[str], data: st.DataObject
) -> None:
    run = WorkflowRun(BUSY)
    now = T0
    first = HistoryEvent(
        "workflow_started", now, name="busy", data={"workflow_id": "b", "input": items, "seed": "p"}
    )
    history = [first]
    live = run.feed([first])
    open_: dict[int, HistoryEvent] = {}
    signals = data.draw(st.integers(min_value=0, max_value=3))
    cancels = data.draw(st.integers(min_value=0, max_value=1))
    for _ in range(200):
        history += live.commands
        run.feed(live.commands)
        for command in live.commands:
            if command.type == "timer_cancelled":
                open_.pop(int(command.data["timer"]), None)
            elif answers(command):
                open_[command.position or 0] = command
        if live.ended or live.status == "parked":
            break
        choices = [(p, a) for p, c in sorted(open_.items()) for a in answers(c)]
        if signals:
            choices.append((0, "signal"))
        if cancels:
            choices.append((0, "cancel"))
        if not choices:
            break
        position, action = data.draw(st.sampled_from(choices))
        now += data.draw(st.integers(min_value=0, max_value=7_200_000))
        if action == "cancel":
            cancels -= 1
            event = HistoryEvent("cancel_requested", now, data={"reason": "test"})
        elif action == "signal":
            signals -= 1
            sid = data.draw(st.sampled_from(["s-1", "s-2", "s-3"]))  # repeats count once
            event = HistoryEvent(
                "signal_received", now, None, "go", {"signal_id": sid, "payload": sid}
            )
        else:
            del open_[position]
            if action == "fire":
                event = HistoryEvent("timer_fired", now, position)
            elif action == "complete":
                command = history[[e.position for e in history].index(position)]
                value = {"a": 3, "b": 4, "c": 5}.get(str(command.data["input"][0]), "done")
                event = HistoryEvent("step_completed", now, position, data={"result": value})
            else:
                event = HistoryEvent("step_failed", now, position, data={"error": "boom"})
        history.append(event)
        live = run.feed([event])
    else:
        history += live.commands

    note_case(f"ended {live.status}")
    whole = replay(BUSY, history)
    assert (whole.status, whole.result, whole.error) == (live.status, live.result, live.error)
    assert whole.commands == []

    again = WorkflowRun(BUSY)
    issued: list[HistoryEvent] = []
    for event in history:
        issued += again.feed([event]).commands
    assert [c.to_json() for c in issued] == [e.to_json() for e in history if e.is_command]
