"""The local runner for workflows written as code: steps in-process with their retry policy,
timers on a fake clock (a seven-day sleep takes milliseconds), signals, cancellation, child
workflows, continue-as-new; and the replay helper a pytest test points at a recorded history.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.unit.core.codeflow import flows
from tickwheel.clock import FakeClock
from tickwheel.sdk import (
    ChildFailed,
    Divergence,
    PermanentError,
    StepFailed,
    WorkflowContext,
    step,
    workflow,
)
from tickwheel.sdk.workflow_testing import (
    WorkflowNotCompleted,
    WorkflowRunner,
    load_history,
    replay_history,
)

DAY_MS = 86_400_000
ORDER = {"id": "o-1", "amount": 10}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@step
async def ship(order: dict[str, Any]) -> str:
    return f"shipped-{order['id']}"


@workflow("weekly")
async def weekly(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    before = ctx.now()
    await ctx.sleep("7d")
    shipped = await ctx.run(ship, order)
    return {"shipped": shipped, "slept_ms": int((ctx.now() - before).total_seconds() * 1000)}


def test_a_seven_day_sleep_takes_milliseconds() -> None:
    clock = FakeClock(start=1_800_000_000.0)
    runner = WorkflowRunner(weekly, clock=clock)
    began = time.perf_counter()
    result = run(runner.execute(weekly, ORDER, workflow_id="w-1"))
    elapsed = time.perf_counter() - began
    assert result == {"shipped": "shipped-o-1", "slept_ms": 7 * DAY_MS}
    assert clock.now() == 1_800_000_000.0 + 7 * 86_400
    assert elapsed < 1.0, elapsed
    types = [e.type for e in runner.history("w-1")]
    assert types.count("timer_started") == types.count("timer_fired") == 1


def test_advance_moves_time_by_hand_and_a_signal_is_awaited() -> None:
    async def scenario() -> None:
        runner = WorkflowRunner(flows.approval)
        wf = await runner.start(flows.approval, ORDER)
        assert runner.status(wf).waiting_on == ("timer 1d",)
        await runner.advance("23h")
        assert runner.status(wf).waiting_on == ("timer 1d",)
        await runner.advance("1h")
        assert runner.status(wf).waiting_on == ("wait for signal 'approval'",)
        assert runner.query(wf) == {"stage": "waiting for approval"}
        await runner.signal(wf, "approval", {"ok": True})
        result = await runner.result(wf)
        assert result["decision"] == {"ok": True}
        assert runner.query(wf) == {"stage": "decided"}
        # The wait's timeout timer was cancelled: nothing left to fire.
        assert [e.type for e in runner.history(wf)].count("timer_cancelled") == 1

    run(scenario())


def test_a_signal_sent_before_the_wait_is_buffered() -> None:
    async def scenario() -> None:
        runner = WorkflowRunner(flows.approval)
        wf = await runner.start(flows.approval, ORDER)
        await runner.signal(wf, "approval", "early")
        await runner.run_until_idle()
        assert (await runner.result(wf))["decision"] == "early"

    run(scenario())


def test_a_wait_times_out_with_none() -> None:
    runner = WorkflowRunner(flows.approval)
    result = run(runner.execute(flows.approval, ORDER))
    assert result["decision"] is None


def test_a_signal_id_seen_twice_counts_once() -> None:
    async def scenario() -> None:
        runner = WorkflowRunner(flows.two_signals)
        wf = await runner.start(flows.two_signals)
        await runner.signal(wf, "item", "x", signal_id="s-1")
        await runner.signal(wf, "item", "x", signal_id="s-1")
        assert runner.status(wf).status == "running"
        await runner.signal(wf, "item", "y", signal_id="s-2")
        assert await runner.result(wf) == ["x", "y"]

    run(scenario())


def compensations(runner: WorkflowRunner, wf: str) -> list[str]:
    return [
        str(e.name)
        for e in runner.history(wf)
        if e.type == "step_scheduled" and e.data["compensation"]
    ]


def test_a_final_failure_runs_the_rollbacks_in_reverse() -> None:
    async def scenario() -> None:
        runner = WorkflowRunner(flows.saga)
        wf = await runner.start(flows.saga, ORDER)
        await runner.run_until_idle()
        status = runner.status(wf)
        assert status.status == "failed"
        assert "card declined" in str(status.error)
        assert compensations(runner, wf) == ["release_inventory", "release_authorization"]
        with pytest.raises(WorkflowNotCompleted, match="is failed: StepFailed"):
            await runner.result(wf)

    run(scenario())


def test_a_cancel_runs_the_rollbacks_unless_the_workflow_opted_out() -> None:
    async def scenario() -> None:
        runner = WorkflowRunner(flows.saga, flows.saga_no_cancel_compensation)
        wf = await runner.start(flows.saga, ORDER)
        await runner.cancel(wf)
        assert runner.status(wf).status == "cancelled"
        assert compensations(runner, wf) == ["release_inventory", "release_authorization"]
        other = await runner.start(flows.saga_no_cancel_compensation, ORDER)
        await runner.cancel(other)
        assert runner.status(other).status == "cancelled"
        assert compensations(runner, other) == []

    run(scenario())


attempts: dict[str, int] = {}


@step(max_attempts=3, backoff="1s", max_backoff="10s")
async def flaky(key: str) -> str:
    attempts[key] = attempts.get(key, 0) + 1
    if attempts[key] < 3:
        raise ConnectionError("try again")
    return f"ok after {attempts[key]}"


@step(max_attempts=5)
async def refused(key: str) -> str:
    attempts[key] = attempts.get(key, 0) + 1
    raise PermanentError("no such account")


@step(max_attempts=2, backoff="1s", max_backoff="1s")
async def always_down(key: str) -> str:
    raise ConnectionError("down")


@step(max_attempts=1, timeout="50ms")
async def too_slow(key: str) -> str:
    await asyncio.sleep(5)
    return "late"


@step
async def not_data(key: str) -> object:
    return object()


@workflow("retrying")
async def retrying(ctx: WorkflowContext, key: str) -> dict[str, Any]:
    outcome: dict[str, Any] = {"flaky": await ctx.run(flaky, key)}
    for name, fn in (
        ("refused", refused),
        ("down", always_down),
        ("slow", too_slow),
        ("data", not_data),
    ):
        try:
            await ctx.run(fn, key)
        except StepFailed as exc:
            outcome[name] = [exc.error_kind, exc.attempts, exc.error]
    return outcome


def test_a_step_is_retried_with_its_policy_and_a_final_failure_is_data() -> None:
    clock = FakeClock(start=1_800_000_000.0)
    runner = WorkflowRunner(retrying, clock=clock, seed=7)
    outcome = run(runner.execute(retrying, "k-1", workflow_id="r-1"))
    assert outcome["flaky"] == "ok after 3"
    assert outcome["refused"][:2] == ["permanent", 1]
    assert attempts["k-1"] == 3 + 1  # flaky three times, refused once
    assert outcome["down"] == ["retryable", 2, "ConnectionError: down"]
    assert outcome["slow"][:2] == ["retryable", 1] and "timeout of 50 ms" in outcome["slow"][2]
    assert outcome["data"][0] == "permanent" and "JSON data" in outcome["data"][2]
    # The backoff waited on the fake clock: full jitter, at most 2 s then 4 s, then <= 1 s.
    assert 0 <= clock.now() - 1_800_000_000.0 <= 2 + 4 + 1
    completed = [e for e in runner.history("r-1") if e.type == "step_completed"]
    assert completed[0].data["attempts"] == 3
    failed = [e.data["reason"] for e in runner.history("r-1") if e.type == "step_failed"]
    assert failed == [
        "permanent_error",
        "max_attempts_exhausted",
        "max_attempts_exhausted",
        "permanent_error",
    ]


def test_parallel_steps_with_gather() -> None:
    runner = WorkflowRunner(flows.basket)
    assert run(runner.execute(flows.basket, ["a", "b", "c"])) == 12


def test_child_workflows_and_a_failed_child() -> None:
    @workflow("declining_parent")
    async def declining_parent(ctx: WorkflowContext, order: dict[str, Any]) -> str:
        try:
            await ctx.child("saga", order, workflow_id="child-of-mine")
        except ChildFailed as exc:
            return f"child failed: {exc.error[:30]}"
        return "child completed"

    async def scenario() -> None:
        runner = WorkflowRunner(flows.parent, flows.order, flows.saga)
        two = [{"id": "a", "amount": 1}, {"id": "b", "amount": 2}]
        assert await runner.execute(flows.parent, two, workflow_id="p") == [
            {"captured": 1},
            {"captured": 2},
        ]
        assert runner.status("p:order:2").result == {"captured": 2}
        outcome = await runner.execute(declining_parent, ORDER)
        assert outcome.startswith("child failed: StepFailed")
        assert runner.status("child-of-mine").status == "failed"

    run(scenario())


def test_continue_as_new_starts_the_next_run_with_an_empty_history() -> None:
    runner = WorkflowRunner(flows.counter)
    assert run(runner.execute(flows.counter, 0, workflow_id="c")) == 3
    runs = [runner.history("c", run=n) for n in (1, 2, 3, 4)]
    assert [r[0].data["input"] for r in runs] == [0, 1, 2, 3]
    assert [r[-1].type for r in runs] == ["continued_as_new"] * 3 + ["workflow_completed"]
    assert runner.history("c") == runs[-1]


def test_a_patch_is_recorded_on_a_new_instance() -> None:
    runner = WorkflowRunner(flows.order_patched)
    run(runner.execute(flows.order_patched, ORDER, workflow_id="o"))
    history = runner.history("o")
    assert [e.name for e in history if e.type == "patch_marker"] == ["audit-before-reserve"]
    assert "audit" in [e.name for e in history if e.type == "step_scheduled"]


def test_code_that_is_not_deterministic_fails_its_own_test() -> None:
    runs: list[int] = []

    @workflow("remembers")
    async def remembers(ctx: WorkflowContext, _: Any) -> None:
        runs.append(1)  # state outside the history: a replay takes the other branch
        if len(runs) == 1:
            await ctx.run(ship, ORDER)
        else:
            await ctx.run(flows.notify, ORDER)

    runner = WorkflowRunner(remembers)
    with pytest.raises(Divergence, match="the code now runs step 'notify'#1"):
        run(runner.execute(remembers, None))


def test_replay_history_passes_on_the_same_code_and_names_the_divergence(tmp_path: Path) -> None:
    runner = WorkflowRunner(flows.order)
    run(runner.execute(flows.order, ORDER, workflow_id="order-7"))
    path = tmp_path / "order-7.json"
    path.write_text(json.dumps(runner.export("order-7")))
    assert replay_history(flows.order, path).status == "completed"
    assert replay_history(flows.order, runner.history("order-7")).result == {"captured": 10}
    assert len(load_history({"events": runner.export("order-7")})) == len(runner.history("order-7"))  # type: ignore[arg-type]
    with pytest.raises(Divergence) as caught:
        replay_history(flows.order_reordered, path)
    message = str(caught.value)
    assert (
        "workflow 'order' (instance order-7) diverged from its history at history event 1"
        in message
    )
    assert "the history has step 'authorize'#1 at position 1" in message
    assert "the code now runs step 'reserve_inventory'#1" in message


def test_unknown_instances_and_children_are_named() -> None:
    runner = WorkflowRunner(flows.parent)
    with pytest.raises(LookupError, match="no workflow instance 'nope'"):
        runner.status("nope")
    with pytest.raises(LookupError, match="child workflow 'order' is not registered"):
        run(runner.start(flows.parent, [ORDER]))
