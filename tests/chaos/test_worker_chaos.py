"""A worker SIGKILLed mid-batch, through the real pipeline (timer → worker → timer), checked
from the recorded history: with hundreds of its executions leased and running (and inline
no-op batches flowing) the worker dies; afterwards every execution is leased again or
finished, none is lost, and none has two accepted outcomes. The running ones are held by a
handler (`worker_chaos_handlers.py`) only on the doomed worker, so how many are in flight
at the kill does not depend on how fast this machine reads the topics."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.chaos.execution_timeline import (
    accepted_outcomes,
    all_finished,
    execution_timeline,
    finished_by,
    in_flight,
    not_accepted_once,
    of_process,
)
from tests.chaos.worker_chaos_harness import HOLDERS, chaos_env, holding_worker
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(240)]

NOOPS = 1500  # inline batches, running while it dies


def test_a_worker_killed_mid_batch_loses_nothing_and_accepts_nothing_twice(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = chaos_env(kafka_bootstrap, applied_topology)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    doomed = holding_worker("doomed", tmp_path / "doomed.log", env, 600)
    rescuer = holding_worker("rescuer", tmp_path / "rescuer.log", env, 0)
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
            timeline = execution_timeline(kafka_bootstrap)
            at_kill = in_flight(timeline, of_process("doomed"))
            holding = [x for x in at_kill if timeline[x][0]["job_id"].startswith("hold-")]
            return len(holding) >= 250

        assert wait_until(hundreds_in_flight, 90, interval=0.2), (
            f"only {len(at_kill)} executions in flight on the doomed worker"
        )
        doomed.kill()
        # Read again after the kill: what it leased since the last look is in flight too. Kept
        # from the first look: an execution the doomed worker never finished (a slow read can
        # come after the timer expired its lease and wrote `failed`, which `in_flight` counts
        # as an outcome).
        after = execution_timeline(kafka_bootstrap)
        at_kill = (at_kill | in_flight(after, of_process("doomed"))) - finished_by(
            after, of_process("doomed")
        )
        rescuer.start()
        assert wait_until(lambda: all_finished(kafka_bootstrap, len(specs)), 150, interval=1), (
            "not every execution finished"
        )
    finally:
        timer.stop()
        doomed.kill()
        rescuer.stop()

    timeline = execution_timeline(kafka_bootstrap)
    assert len(timeline) == len(specs), "one execution per one-off job, none lost"
    assert len(at_kill) >= 200
    assert not_accepted_once(timeline) == {}, "every execution has exactly one accepted outcome"
    for execution in at_kill:
        events = timeline[execution]
        [outcome] = accepted_outcomes(events)
        # The dead worker's attempt cannot end: the rescuer's later attempt does.
        assert outcome["event_type"] == "succeeded" and outcome["worker_id"].startswith("rescuer")
        assert outcome["attempt"] >= 2, [(e["event_type"], e["attempt"]) for e in events]
        assert any(
            e["event_type"] == "leased" and e["worker_id"].startswith("rescuer") for e in events
        ), "leased again"
    for log in tmp_path.glob("*.log"):
        assert "Traceback" not in log.read_text(), log.name
