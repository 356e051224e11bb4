"""The same worker instance SIGKILLed mid-batch and restarted, twice, through the real pipeline
(timer → worker → timer), checked from the recorded history (`executions.events`).

Each incarnation holds hundreds of executions in flight on its slots when it dies (a handler
that waits, `worker_chaos_handlers.py`, on every incarnation but the last), while one-off
no-ops come due all along, so inline batches are being leased, run and reported at each
kill. The instance restarts under the same name in the same consumer group: what it had
not committed comes back to it from Kafka, what it had leased comes back from the timer once
the lease expires. Afterwards every execution has exactly one accepted outcome (none lost,
none accepted twice), and every one in flight at a kill was leased again by a later
incarnation, which finished it. Bounded: two kills, every wait a deadline."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.chaos.execution_timeline import (
    accepted_outcomes,
    all_finished,
    execution_timeline,
    finished_by,
    in_flight,
    not_accepted_once,
    of_incarnation,
)
from tests.chaos.worker_chaos_harness import HOLDERS, chaos_env, holding_worker
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(300)]

NOOPS = 3000  # one-off, coming due over NOOP_SPREAD_S seconds: inline batches at every kill
NOOP_SPREAD_S = 60
KILLS = 2
IN_FLIGHT_AT_KILL = 200


def _worker_id(worker: ServiceProcess) -> str:
    """The id an incarnation writes on its events (`WorkerSettings.worker_id`)."""
    assert worker.process is not None
    return f"{worker.name}@{socket.gethostname()}:{worker.process.pid}"


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_worker_restarted_after_each_sigkill_mid_batch_loses_nothing_and_accepts_nothing_twice(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = chaos_env(kafka_bootstrap, applied_topology)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    incarnations: list[ServiceProcess] = []

    def start_worker(hold_s: int) -> ServiceProcess:
        worker = holding_worker(
            "restarted", tmp_path / f"worker-{len(incarnations)}.log", env, hold_s
        )
        worker.start()
        incarnations.append(worker)
        return worker

    now = time.time()
    # Every holder gets attempts enough for two lost leases and the one that finishes it.
    specs = [
        {"jobId": f"hold-{i}", "type": "chaos_hold", "runAt": "2020-01-01T00:00:00Z",
         "maxAttempts": KILLS + 3}
        for i in range(HOLDERS)
    ] + [
        {"jobId": f"noop-{i}", "type": "noop", "runAt": _iso(now + 2 + i % NOOP_SPREAD_S)}
        for i in range(NOOPS)
    ]  # fmt: skip
    killed: list[tuple[str, set[str]]] = []  # (incarnation, what it held in flight at its kill)
    timer.start()
    worker = start_worker(600)
    try:
        publish_jobs(kafka_bootstrap, specs, int(now * 1000))
        for kill in range(KILLS):
            worker_id = _worker_id(worker)
            at_kill: set[str] = set()

            def hundreds_in_flight(worker_id: str = worker_id) -> bool:
                nonlocal at_kill
                at_kill = in_flight(execution_timeline(kafka_bootstrap), of_incarnation(worker_id))
                return len(at_kill) >= IN_FLIGHT_AT_KILL

            assert wait_until(hundreds_in_flight, 90, interval=0.2), (
                f"only {len(at_kill)} executions in flight on {worker_id} (kill {kill + 1})"
            )
            worker.kill()
            # What it leased since the last look is in flight too; an execution whose
            # outcome it did record before dying is not (kept from the first look: a slow
            # read may come after the timer expired the lease and wrote `failed`).
            after = execution_timeline(kafka_bootstrap)
            unfinished = at_kill | in_flight(after, of_incarnation(worker_id))
            killed.append((worker_id, unfinished - finished_by(after, of_incarnation(worker_id))))
            worker = start_worker(600 if kill + 1 < KILLS else 0)

        assert wait_until(lambda: all_finished(kafka_bootstrap, len(specs)), 150, interval=1), (
            "not every execution finished"
        )
    finally:
        timer.stop()
        for incarnation in incarnations:
            incarnation.stop()

    timeline = execution_timeline(kafka_bootstrap)
    assert len(timeline) == len(specs), "one execution per one-off job, none lost"
    assert not_accepted_once(timeline) == {}, "every execution has exactly one accepted outcome"
    ids = [_worker_id(incarnation) for incarnation in incarnations]
    for kill, (dead, held) in enumerate(killed):
        assert dead == ids[kill] and len(held) >= IN_FLIGHT_AT_KILL // 2, (
            kill,
            len(held),
        )
        later = set(ids[kill + 1 :])
        for execution in held:
            events = timeline[execution]
            [outcome] = accepted_outcomes(events)
            # The dead incarnation's attempt cannot end: a later one leases it again and
            # finishes it.
            assert outcome["event_type"] == "succeeded" and outcome["worker_id"] in later, (
                execution, [(e["event_type"], e["attempt"], e["worker_id"]) for e in events],
            )  # fmt: skip
            assert any(e["event_type"] == "leased" and e["worker_id"] in later for e in events), (
                "leased again"
            )
    # No-ops came due while each killed incarnation lived: inline batches ran on it too.
    noops_finished = {
        worker_id: sum(
            1 for events in timeline.values()
            if any(e["worker_id"] == worker_id and e["job_id"].startswith("noop-")
                   for e in accepted_outcomes(events))
        )
        for worker_id, _ in killed
    }  # fmt: skip
    assert all(noops_finished.values()), noops_finished
    for log in tmp_path.glob("*.log"):
        assert "Traceback" not in log.read_text(), log.name
