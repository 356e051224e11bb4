"""A worker SIGKILLed mid-batch, through the real pipeline (timer → worker → timer), checked
from the recorded history: with hundreds of its executions leased and running (and inline
no-op batches flowing) the worker dies; afterwards every execution is leased again or
finished, none is lost, and none has two accepted outcomes. The running ones are held by a
handler (`worker_chaos_handlers.py`) only on the doomed worker, so how many are in flight
at the kill does not depend on how fast this machine reads the topics."""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import (
    ServiceProcess,
    execution_events,
    publish_jobs,
    timer_env,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(240)]

LEASE_S = 3
HOLDERS = 300  # each holds a slot on the doomed worker until it dies; none on the rescuer
NOOPS = 1500  # inline batches, running while it dies


def _timeline(bootstrap: str) -> dict[str, list[dict[str, Any]]]:
    by_execution: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in execution_events(bootstrap):
        by_execution[event["execution_id"]].append(event)
    return by_execution


def _accepted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outcomes that end an execution and that the owner did not fence (a `failed` event
    only ends an attempt: the timer writes one on lease expiry and retries)."""
    fenced = {
        json.loads(e["details"])["fenced_event_id"] for e in events if e["event_type"] == "fenced"
    }
    return [
        e for e in events
        if e["event_type"] in ("succeeded", "cancelled") and e["event_id"] not in fenced
    ]  # fmt: skip


def _in_flight(timeline: dict[str, list[dict[str, Any]]], worker: str) -> set[str]:
    """Executions `worker` leased and has not reported an outcome for."""
    return {
        execution
        for execution, events in timeline.items()
        if any(e["event_type"] == "leased" and e["worker_id"].startswith(worker) for e in events)
        and not any(
            e["event_type"] in ("succeeded", "failed", "cancelled")
            and e["worker_id"].startswith(worker)
            for e in events
        )
    }


def test_a_worker_killed_mid_batch_loses_nothing_and_accepts_nothing_twice(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_LEASE_SECONDS=str(LEASE_S),
        TICKWHEEL_HEARTBEAT_SECONDS="1",
    )
    args = ("--concurrency", f"normal={HOLDERS}", "--priority", "normal",
            "--module", "tests.integration.worker_chaos_handlers")  # fmt: skip
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    doomed = ServiceProcess(
        "doomed", tmp_path / "doomed.log", {**env, "TICKWHEEL_TEST_HOLD_S": "600"}, "worker", args
    )
    rescuer = ServiceProcess(
        "rescuer", tmp_path / "rescuer.log", {**env, "TICKWHEEL_TEST_HOLD_S": "0"}, "worker", args
    )
    due = "2020-01-01T00:00:00Z"
    specs = [{"jobId": f"hold-{i}", "type": "chaos_hold", "runAt": due} for i in range(HOLDERS)] + [
        {"jobId": f"noop-{i}", "type": "noop", "runAt": due} for i in range(NOOPS)
    ]
    timer.start()
    doomed.start()
    try:
        publish_jobs(kafka_bootstrap, specs, int(time.time() * 1000))
        at_kill: set[str] = set()

        def hundreds_in_flight() -> bool:
            # Counted on the holders alone: they cannot finish on the doomed worker, while its
            # no-ops in flight at one look may all be done by the kill (a faster worker left
            # 85 of 250 in a CI run).
            nonlocal at_kill
            timeline = _timeline(kafka_bootstrap)
            at_kill = _in_flight(timeline, "doomed")
            holding = [x for x in at_kill if timeline[x][0]["job_id"].startswith("hold-")]
            return len(holding) >= 250

        assert wait_until(hundreds_in_flight, 90, interval=0.2), (
            f"only {len(at_kill)} executions in flight on the doomed worker"
        )
        doomed.kill()
        # Read again after the kill: what it leased since the last look is in flight too. Kept
        # from the first look: an execution the doomed worker never finished (a slow read can
        # come after the timer expired its lease and wrote `failed`, which `_in_flight` counts
        # as an outcome).
        after = _timeline(kafka_bootstrap)
        finished_there = {
            execution for execution, events in after.items()
            if any(e["worker_id"].startswith("doomed") for e in _accepted(events))
        }  # fmt: skip
        at_kill = (at_kill | _in_flight(after, "doomed")) - finished_there
        rescuer.start()

        def all_finished() -> bool:
            timeline = _timeline(kafka_bootstrap)
            return len(timeline) >= len(specs) and all(
                _accepted(events) for events in timeline.values()
            )

        assert wait_until(all_finished, 150, interval=1), "not every execution finished"
    finally:
        timer.stop()
        doomed.kill()
        rescuer.stop()

    timeline = _timeline(kafka_bootstrap)
    assert len(timeline) == len(specs), "one execution per one-off job, none lost"
    assert len(at_kill) >= 200
    twice = {
        execution: [(e["event_type"], e["attempt"], e["worker_id"]) for e in accepted]
        for execution, events in timeline.items()
        if len(accepted := _accepted(events)) != 1
    }
    assert twice == {}, "every execution has exactly one accepted outcome"
    for execution in at_kill:
        events = timeline[execution]
        [outcome] = _accepted(events)
        # The dead worker's attempt cannot end: the rescuer's later attempt does.
        assert outcome["event_type"] == "succeeded" and outcome["worker_id"].startswith("rescuer")
        assert outcome["attempt"] >= 2, [(e["event_type"], e["attempt"]) for e in events]
        assert any(
            e["event_type"] == "leased" and e["worker_id"].startswith("rescuer") for e in events
        ), "leased again"
    for log in tmp_path.glob("*.log"):
        assert "Traceback" not in log.read_text(), log.name
