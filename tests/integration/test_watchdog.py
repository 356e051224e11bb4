"""The watchdog against the real broker, with real timer, worker and watchdog processes and
second-level schedules (`*/2 * * * * *`, expectedMaxInterval 6 s).

What is asserted is read back from the `alerts` topic (read_committed), as any consumer of
alerts would see it.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import (
    ServiceProcess,
    emitted_requests,
    execution_events,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.sdk.alerts import incidents, read_transitions

pytestmark = pytest.mark.integration

EMI_MS = 6_000


def env_for(bootstrap: str, prefix: str) -> dict[str, str]:
    return timer_env(
        bootstrap, prefix,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_HEARTBEAT_SECONDS="1",
        TICKWHEEL_WATCHDOG_TICK_MS="500",
        TICKWHEEL_WATCHDOG_LATENESS_S="1",
        TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S="2",
        TICKWHEEL_WATCHDOG_UPDATE_EVERY_S="600",
    )  # fmt: skip


def job_ids(prefix: str, partitions: int = 6) -> list[str]:
    """One job per partition, so a stopped timer leaves some jobs and not others."""
    chosen: dict[int, str] = {}
    n = 0
    while len(chosen) < partitions and n < 10_000:
        job_id = f"{prefix}wd-{n}"
        chosen.setdefault(partition_for(job_id, partitions), job_id)
        n += 1
    return [chosen[p] for p in sorted(chosen)]


def spec(job_id: str, **extra: Any) -> dict[str, Any]:
    return {"jobId": job_id, "type": "noop", "payload": {}, "cron": "*/2 * * * * *",
            "timezone": "UTC", "expectedMaxInterval": "6s", "jitter": "0s", **extra}  # fmt: skip


def succeeded_jobs(bootstrap: str) -> set[str]:
    return {e["job_id"] for e in execution_events(bootstrap) if e["event_type"] == "succeeded"}


def succeeded_since(bootstrap: str, ids: list[str], since_ms: int) -> bool:
    """Whether every job in `ids` has a success recorded after `since_ms`."""
    latest: dict[str, int] = {}
    for e in execution_events(bootstrap):
        if e["event_type"] == "succeeded":
            latest[e["job_id"]] = max(latest.get(e["job_id"], 0), e["event_time"])
    return all(latest.get(j, 0) > since_ms for j in ids)


def largest_request_gap(bootstrap: str) -> dict[str, int]:
    times: dict[str, list[int]] = {}
    for request in emitted_requests(bootstrap):
        times.setdefault(request["job_id"], []).append(request["requested_at"])
    gaps = {}
    for job_id, seen in times.items():
        seen.sort()
        gaps[job_id] = max((b - a for a, b in pairwise(seen)), default=0)
    return gaps


def opened_and_resolved(found: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    return {i["incident_id"]: Counter(t["transition"] for t in i["transitions"]) for i in found}


def restored(log: Path) -> bool:
    return log.exists() and "partition_restored" in log.read_text()


@pytest.mark.chaos
def test_a_stopped_timer_opens_one_incident_per_affected_job_and_all_resolve(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    timers = [ServiceProcess(n, tmp_path / f"{n}.log", env) for n in ("timer-a", "timer-b")]
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker", ("--concurrency", "8"))
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    processes = [*timers, worker, watchdog]
    try:
        for timer in timers:
            timer.start()
        assert wait_until(lambda: all(restored(t.log_path) for t in timers), 30)
        ids = job_ids(applied_topology)
        publish_jobs(kafka_bootstrap, [spec(j) for j in ids], int(time.time() * 1000))
        worker.start()
        watchdog.start()
        assert wait_until(lambda: succeeded_jobs(kafka_bootstrap) >= set(ids), 20)
        watched_from = int(time.time() * 1000)
        # Every job succeeded again since the watchdog was watching: a healthy baseline.
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, ids, watched_from), 20)
        timers[0].signal(signal.SIGSTOP)
        stopped_at = int(time.time() * 1000)

        def taken_over() -> bool:
            # Overdue after 6 s, and the group hands the stopped timer's partitions to the
            # other one after its 10 s session timeout: then every job succeeds again.
            opened = any(i["state"] == "open" or i["transitions"]
                         for i in incidents(read_transitions(kafka_bootstrap)))  # fmt: skip
            return opened and succeeded_since(kafka_bootstrap, ids, stopped_at + 10_000)

        assert wait_until(taken_over, 45, 1.0), "no incident, or no takeover"
        timers[0].signal(signal.SIGCONT)

        def settled() -> bool:
            found = incidents(read_transitions(kafka_bootstrap))
            return bool(found) and all(i["state"] == "resolved" for i in found)

        assert wait_until(settled, 25, 1.0), incidents(read_transitions(kafka_bootstrap))
    finally:
        for process in processes:
            process.stop()
    found = incidents(read_transitions(kafka_bootstrap))
    gaps = largest_request_gap(kafka_bootstrap)
    affected = {j for j in ids if gaps.get(j, 0) > EMI_MS}
    assert affected and affected != set(ids), gaps  # the stop hit some jobs, not all
    by_job = Counter(i["job_id"] for i in found if i["kind"] == "job_overdue")
    assert set(by_job) == affected, (by_job, gaps)
    assert all(n == 1 for n in by_job.values()), by_job  # one incident each, no flapping
    assert {i["kind"] for i in found} == {"job_overdue"}, found
    for incident_id, counts in opened_and_resolved(found).items():
        assert counts["opened"] == 1 and counts["resolved"] == 1, (incident_id, counts)


@pytest.mark.chaos
def test_a_killed_watchdog_restarts_without_a_duplicate_open(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    # The worker serves normal priority only: the low-priority job fires and never starts.
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker",
                            ("--concurrency", "4", "--priority", "normal"))  # fmt: skip
    first = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    second = ServiceProcess("wd", tmp_path / "wd2.log", env, "watchdog")
    healthy, stuck = f"{applied_topology}ok", f"{applied_topology}stuck"
    pending = f"{applied_topology}pending"
    try:
        timer.start()
        worker.start()
        # The stuck job is created once the pipeline flows (the healthy job has succeeded): a
        # timer still restoring on a loaded machine would fire its slots after the deadline,
        # and the evidence would rightly say "never fired" instead of "fired, not started".
        publish_jobs(kafka_bootstrap, [spec(healthy)], int(time.time() * 1000))
        assert wait_until(lambda: healthy in succeeded_jobs(kafka_bootstrap), 60, 1.0)
        publish_jobs(kafka_bootstrap, [spec(stuck, priority="low")], int(time.time() * 1000))
        first.start()

        def stuck_open() -> bool:
            found = incidents(read_transitions(kafka_bootstrap))
            return any(i["job_id"] == stuck and i["state"] == "open" for i in found)

        assert wait_until(stuck_open, 30, 1.0)
        # Pending when the watchdog dies: owed within 30 s, and it will not make it.
        [pending_record] = publish_jobs(
            kafka_bootstrap, [spec(pending, priority="low", expectedMaxInterval="30s")],
            int(time.time() * 1000),
        )  # fmt: skip
        first.kill()
        second.start()
        assert wait_until(lambda: "watchdog_restored" in second.log_path.read_text(), 20)
        time.sleep(8)  # several evaluations of the restarted watchdog, the job still stuck

        def pending_open() -> bool:
            found = incidents(read_transitions(kafka_bootstrap))
            return any(i["job_id"] == pending and i["state"] == "open" for i in found)

        assert wait_until(pending_open, 45, 1.0)
        assert second.process is not None and second.process.poll() is None
    finally:
        for process in (second, first, worker, timer):
            process.stop()
    found = incidents(read_transitions(kafka_bootstrap))
    # The healthy job never alerted; the stuck one and the pending one did, once each.
    assert sorted(i["job_id"] for i in found) == sorted([stuck, pending]), found
    by_job = {i["job_id"]: i for i in found}
    counts = Counter(t["transition"] for t in by_job[stuck]["transitions"])
    assert counts["opened"] == 1 and counts["resolved"] == 0, counts
    slots = {s["diagnosis"] for s in by_job[stuck]["evidence"]["slots"]}
    assert "fired_not_started" in slots, by_job[stuck]
    # On time, in event time: at its deadline, within a tick and the watermark's lateness.
    deadline = pending_record["createdAt"] + 30_000
    assert 0 <= by_job[pending]["opened_at"] - deadline <= 2_000, (by_job[pending], deadline)
