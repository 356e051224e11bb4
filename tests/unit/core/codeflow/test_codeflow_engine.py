"""The replay engine beyond the golden histories: patches old and new, what a divergence does
to a run, the workflow's time and recorded randomness, the history's JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.core.codeflow import flows
from tickwheel.core.codeflow import (
    Divergence,
    HistoryEvent,
    WorkflowContext,
    WorkflowRun,
    WorkflowSpec,
    events_from_json,
    events_to_json,
    replay,
)

T0 = 1_800_000_000_000
ORDER = {"id": "o-1", "amount": 10}


def started(name: str, input: Any = None, at: int = T0, seed: str = "s") -> HistoryEvent:
    return HistoryEvent(
        "workflow_started", at, name=name, data={"workflow_id": "w-1", "input": input, "seed": seed}
    )


def drive(workflow: object, inputs: list[HistoryEvent], input: Any = ORDER) -> list[HistoryEvent]:
    """A live instance: each input fed, its commands recorded after it."""
    name = getattr(workflow, "__tickwheel_workflow__", workflow).name  # type: ignore[union-attr]
    run = WorkflowRun(workflow)
    first = started(name, input)
    history = [first, *run.feed([first]).commands]
    run.feed(history[1:])
    for event in inputs:
        commands = run.feed([event]).commands
        run.feed(commands)
        history += [event, *commands]
    return history


def done(position: int, result: Any) -> HistoryEvent:
    return HistoryEvent("step_completed", T0, position, data={"result": result})


def test_a_first_activation_schedules_the_first_step_and_nothing_else() -> None:
    activation = replay(flows.order, [started("order", ORDER)])
    assert activation.status == "running"
    [command] = activation.commands
    assert (command.type, command.position, command.name) == ("step_scheduled", 1, "authorize")
    assert command.data["input"] == [ORDER]
    assert command.data["options"]["max_attempts"] == 3
    assert command.data["options"]["ref"] == "tests.unit.core.codeflow.flows:authorize"


def test_a_patch_marker_is_recorded_live_and_replays_the_new_branch() -> None:
    history = drive(flows.order_patched, [done(1, {"auth": "a", "amount": 10})])
    assert [(e.type, e.name) for e in history[-2:]] == [
        ("patch_marker", "audit-before-reserve"),
        ("step_scheduled", "audit"),
    ]
    assert replay(flows.order_patched, history).commands == []


def test_a_patch_is_decided_once_per_run() -> None:
    async def asks_twice(ctx: WorkflowContext, _: Any) -> list[bool]:
        first = ctx.patched("x")
        await ctx.sleep("1h")
        return [first, ctx.patched("x")]

    spec = WorkflowSpec("twice", asks_twice)
    history = drive(spec, [HistoryEvent("timer_fired", T0 + 3_600_000, 2)], input=None)
    assert [e.type for e in history].count("patch_marker") == 1
    assert history[-1].data["result"] == [True, True]
    assert replay(spec, history).commands == []


def test_a_retired_patch_marker_is_skipped() -> None:
    """The patch is kept for good (the old branch deleted, the `if` removed): histories that
    hold its marker replay without it."""

    async def patch_kept(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
        auth = await ctx.run(flows.authorize, order)
        await ctx.run(flows.audit, order)
        await ctx.run(flows.reserve_inventory, order)
        return await ctx.run(flows.capture_payment, auth)

    history = drive(flows.order_patched, [done(1, {"auth": "a", "amount": 10})])
    activation = replay(WorkflowSpec("order", patch_kept), history)
    assert activation.status == "running"
    assert activation.waiting_on == ("step 'audit'#1",)


def test_a_divergence_stops_the_run_for_good() -> None:
    history = drive(flows.order, [done(1, {"auth": "a", "amount": 10})])
    run = WorkflowRun(flows.order_reordered)
    with pytest.raises(Divergence) as first:
        run.feed(history)
    with pytest.raises(Divergence) as again:
        run.feed([done(2, "r")])
    assert again.value is first.value


def test_workflow_code_cannot_swallow_a_divergence() -> None:
    async def catches(ctx: WorkflowContext, order: dict[str, Any]) -> str:
        try:
            await ctx.run(flows.reserve_inventory, order)
        except Exception:
            return "carried on"
        return "ran"

    history = drive(flows.order, [])
    with pytest.raises(Divergence, match="the code now runs step 'reserve_inventory'#1"):
        replay(WorkflowSpec("order", catches), history)


def test_a_history_of_another_workflow_is_refused() -> None:
    with pytest.raises(Divergence, match="the history is of workflow 'basket', not 'order'"):
        replay(flows.order, [started("basket")])


def test_a_completion_of_a_step_the_code_never_ran_is_a_divergence() -> None:
    with pytest.raises(Divergence, match="the code has not run it") as caught:
        replay(flows.order, [started("order", ORDER), done(4, None)])
    assert caught.value.index == 1


def test_a_duplicate_outcome_is_ignored() -> None:
    history = drive(flows.order, [done(1, {"auth": "a", "amount": 10})])
    again = done(1, {"auth": "other", "amount": 0})
    activation = replay(flows.order, [*history, again])
    assert activation.commands == []
    assert activation.waiting_on == ("step 'reserve_inventory'#1",)


def test_the_workflow_s_time_is_its_last_input_s() -> None:
    async def clock(ctx: WorkflowContext, _: Any) -> list[str]:
        first = ctx.now()
        await ctx.sleep("1h")
        return [first.isoformat(), ctx.now().isoformat()]

    spec = WorkflowSpec("clock", clock)
    history = drive(spec, [HistoryEvent("timer_fired", T0 + 3_600_000 + 5, 2)], input=None)
    timer = history[2]
    assert timer.data["fire_at_ms"] == T0 + 3_600_000
    assert history[-1].data["result"] == [
        datetime.fromtimestamp(T0 / 1000, UTC).isoformat(),
        datetime.fromtimestamp((T0 + 3_600_005) / 1000, UTC).isoformat(),
    ]


def test_history_length_is_the_same_live_and_replayed() -> None:
    async def measures(ctx: WorkflowContext, _: Any) -> list[int]:
        lengths = [ctx.history_length]
        await ctx.sleep("1h")
        lengths.append(ctx.history_length)
        await ctx.run(flows.notify, {})
        return [*lengths, ctx.history_length]

    spec = WorkflowSpec("measures", measures)
    history = drive(spec, [HistoryEvent("timer_fired", T0, 1), done(2, "sent")], input=None)
    assert history[-1].data["result"] == [1, 3, 5]
    assert replay(spec, history[:-1]).commands[0].data["result"] == [1, 3, 5]


def test_sleep_until_records_its_instant_and_compares_it() -> None:
    until = datetime(2027, 1, 1, tzinfo=UTC)

    async def until_new_year(ctx: WorkflowContext, _: Any) -> None:
        await ctx.sleep_until(until)

    async def until_later(ctx: WorkflowContext, _: Any) -> None:
        await ctx.sleep_until(until.replace(hour=1))

    history = drive(WorkflowSpec("ny", until_new_year), [], input=None)
    assert history[-1].data["until_ms"] == int(until.timestamp() * 1000)
    with pytest.raises(Divergence, match="recorded with until_ms="):
        replay(WorkflowSpec("ny", until_later), history)


def test_random_and_uuid_derive_from_the_recorded_seed() -> None:
    async def draws(ctx: WorkflowContext, _: Any) -> list[Any]:
        return [ctx.random(), str(ctx.uuid4()), ctx.random()]

    spec = WorkflowSpec("draws", draws)
    one = replay(spec, [started("draws", seed="a")]).result
    assert one == replay(spec, [started("draws", seed="a")]).result
    assert one != replay(spec, [started("draws", seed="b")]).result
    assert 0 <= one[0] < 1 and one[0] != one[2]
    assert one[1][14] == "4"  # a version-4 UUID


def test_an_input_that_is_not_data_fails_the_workflow_saying_so() -> None:
    async def passes_an_object(ctx: WorkflowContext, _: Any) -> None:
        await ctx.run(flows.notify, object())

    activation = replay(WorkflowSpec("obj", passes_an_object), [started("obj")])
    assert activation.status == "failed"
    assert "the input of step 'notify' must be JSON data" in str(activation.error)


def test_a_result_that_is_not_data_fails_the_workflow() -> None:
    async def returns_an_object(ctx: WorkflowContext, _: Any) -> object:
        return object()

    activation = replay(WorkflowSpec("obj", returns_an_object), [started("obj")])
    assert activation.status == "failed"
    assert "the result of workflow 'obj' must be JSON data" in str(activation.error)


def test_a_finished_history_is_compared_up_to_its_end() -> None:
    history = drive(
        flows.order,
        [done(1, {"auth": "a", "amount": 10}), done(2, "r"), done(3, {"captured": 10})],
    )
    assert history[-1].type == "workflow_completed"
    activation = replay(flows.order_added_at_end, history)
    assert (activation.status, activation.commands) == ("completed", [])
    assert activation.result == {"captured": 10}


def test_history_events_round_trip_through_json() -> None:
    history = drive(flows.order, [done(1, {"auth": "a", "amount": 10})])
    assert events_from_json(events_to_json(history)) == history
    with pytest.raises(ValueError, match="unknown history event type 'step_started'"):
        HistoryEvent("step_started")
    with pytest.raises(ValueError, match="a JSON object with a 'type'"):
        HistoryEvent.from_json({"position": 1})


def test_an_undecorated_step_is_named_after_its_function() -> None:
    async def lookup(key: str) -> str:
        return key

    async def uses_it(ctx: WorkflowContext, _: Any) -> str:
        return await ctx.run(lookup, "k")

    [command] = replay(WorkflowSpec("plain", uses_it), [started("plain")]).commands
    assert command.name == "lookup"
    assert command.data["options"]["max_attempts"] == 5
    assert command.data["options"]["ref"].endswith("<locals>.lookup")
