"""More of issue 12's chaos cases against the real stack: all workers stopped (a no-live-worker
parent and its oldest-ready-age children within the threshold), a permanently failing job
(dead-letter age, its overdue slots dead-lettered, never "never fired"), and the watchdog
stopped for two minutes while everything is healthy (nothing raised when it returns)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_watchdog import env_for, restored, spec, succeeded_since
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until
from tickwheel.sdk.alerts import incidents, read_transitions

pytestmark = pytest.mark.integration


def found(bootstrap: str) -> list[dict[str, Any]]:
    return incidents(read_transitions(bootstrap))


@pytest.mark.chaos
def test_stopped_workers_and_a_permanent_failure_raise_what_explains_them(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    env.update(TICKWHEEL_WATCHDOG_READY_AGE_S="5", TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S="5")
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker", ("--concurrency", "4"))
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    ok, broken = f"{applied_topology}ok", f"{applied_topology}broken"
    try:
        timer.start()
        assert wait_until(lambda: restored(timer.log_path), 30)
        for process in (worker, watchdog):
            process.start()
        publish_jobs(kafka_bootstrap, [
            spec(ok),
            spec(broken, type="fail", payload={"mode": "permanent"}, maxAttempts=1),
        ], int(time.time() * 1000))  # fmt: skip

        def dead_letter_open() -> bool:
            return any(i["kind"] == "dead_letter_age" and i["state"] == "open"
                       for i in found(kafka_bootstrap))  # fmt: skip

        assert wait_until(dead_letter_open, 40, 1.0), found(kafka_bootstrap)
        since = int(time.time() * 1000)  # the healthy job succeeds with the worker up
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, [ok], since), 20)
        worker.stop()
        stopped_at = int(time.time() * 1000)

        def workerless() -> bool:
            kinds = {(i["kind"], i["state"]) for i in found(kafka_bootstrap)}
            return {("no_live_worker", "open"), ("oldest_ready_age", "open")} <= kinds

        assert wait_until(workerless, 30, 1.0), found(kafka_bootstrap)
    finally:
        for process in (watchdog, worker, timer):
            process.stop()
    everything = found(kafka_bootstrap)
    [parent] = [i for i in everything if i["kind"] == "no_live_worker"]
    ready = [i for i in everything if i["kind"] == "oldest_ready_age"]
    assert ready and all(i["suppressed_by"] == parent["incident_id"] for i in ready), ready
    # Within its threshold (5 s) and a few evaluation ticks of the oldest request's age.
    assert parent["opened_at"] - stopped_at < 5_000 + 10_000, (parent, stopped_at)
    [dead] = [i for i in everything if i["kind"] == "dead_letter_age"]
    assert dead["subject"].endswith("/fail")
    for incident in (i for i in everything if i["job_id"] == broken and i["kind"] == "job_overdue"):
        diagnoses = {s["diagnosis"] for s in incident["evidence"].get("slots", [])}
        assert "dead_lettered" in diagnoses and "never_fired" not in diagnoses, incident


@pytest.mark.chaos
def test_a_watchdog_down_two_minutes_while_all_is_healthy_raises_nothing_on_return(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker", ("--concurrency", "4"))
    first = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    second = ServiceProcess("wd", tmp_path / "wd2.log", env, "watchdog")
    ids = [f"{applied_topology}h{n}" for n in range(3)]
    try:
        timer.start()
        assert wait_until(lambda: restored(timer.log_path), 30)
        worker.start()
        publish_jobs(kafka_bootstrap, [spec(j) for j in ids], int(time.time() * 1000))
        first.start()
        watched_from = int(time.time() * 1000)  # every job succeeded again since: healthy
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, ids, watched_from), 30)
        first.stop()
        down_until = time.monotonic() + 120
        # Healthy meanwhile: the jobs keep succeeding while nobody watches.
        while time.monotonic() < down_until:
            time.sleep(min(10.0, max(0.0, down_until - time.monotonic())))
        back = int(time.time() * 1000)
        second.start()
        assert wait_until(lambda: "watchdog_restored" in second.log_path.read_text(), 30)
        # Several evaluations past "now": it has caught up over the two minutes.
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, ids, back + 15_000), 40)
        assert second.process is not None and second.process.poll() is None
    finally:
        for process in (second, first, worker, timer):
            process.stop()
    assert found(kafka_bootstrap) == []
    assert '"action": "alert_' not in second.log_path.read_text()


@pytest.mark.chaos
def test_a_stopped_timer_is_one_parent_per_partition_it_held_and_all_resolve(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    import signal
    from collections import Counter

    from tests.integration.test_watchdog import EMI_MS, largest_request_gap
    from tickwheel.adapters.kafka.partitioner import partition_for

    env = env_for(kafka_bootstrap, applied_topology)
    timers = [ServiceProcess(n, tmp_path / f"{n}.log", env) for n in ("timer-a", "timer-b")]
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker", ("--concurrency", "8"))
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    # Two jobs on each of the six partitions: a stopped partition has two children.
    by_partition: dict[int, list[str]] = {}
    n = 0
    while min((len(v) for v in by_partition.values()), default=0) < 2 or len(by_partition) < 6:
        job_id = f"{applied_topology}pp-{n}"
        by_partition.setdefault(partition_for(job_id, 6), []).append(job_id)
        n += 1
        assert n < 10_000
    ids = [j for jobs in by_partition.values() for j in jobs[:2]]
    try:
        for timer in timers:
            timer.start()
        assert wait_until(lambda: all(restored(t.log_path) for t in timers), 30)
        publish_jobs(kafka_bootstrap, [spec(j) for j in ids], int(time.time() * 1000))
        worker.start()
        watchdog.start()
        watched_from = int(time.time() * 1000)  # every job succeeded again since: healthy
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, ids, watched_from), 30)
        timers[0].signal(signal.SIGSTOP)
        stopped_at = int(time.time() * 1000)

        def taken_over() -> bool:
            parents = [i for i in found(kafka_bootstrap) if i["kind"] == "timer_partition_stalled"]
            return bool(parents) and succeeded_since(kafka_bootstrap, ids, stopped_at + 10_000)

        assert wait_until(taken_over, 60, 1.0), found(kafka_bootstrap)
        timers[0].signal(signal.SIGCONT)

        def settled() -> bool:
            everything = found(kafka_bootstrap)
            return bool(everything) and all(i["state"] == "resolved" for i in everything)

        assert wait_until(settled, 30, 1.0), found(kafka_bootstrap)
    finally:
        for process in (watchdog, worker, *timers):
            process.stop()
    everything = found(kafka_bootstrap)
    gaps = largest_request_gap(kafka_bootstrap)
    stalled = {partition_for(j, 6) for j in ids if gaps.get(j, 0) > EMI_MS}
    assert stalled and len(stalled) < 6, gaps  # the stop hit some partitions, not all
    parents = Counter(i["subject"] for i in everything if i["kind"] == "timer_partition_stalled")
    assert set(parents) == {f"partition {p}" for p in stalled}, (parents, stalled)
    assert all(count == 1 for count in parents.values()), parents  # one parent each
    children = [i for i in everything if i["kind"] == "job_overdue"]
    assert {partition_for(i["job_id"], 6) for i in children} <= stalled, children
    for incident in everything:
        counts = Counter(t["transition"] for t in incident["transitions"])
        assert counts["opened"] == 1 and counts["resolved"] == 1, incident
