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
from tickwheel.cli.alerts import incidents, read_transitions

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
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, [ok], int(time.time() * 1000)),
                          20)  # fmt: skip
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
        assert wait_until(lambda: succeeded_since(kafka_bootstrap, ids, int(time.time() * 1000)),
                          30)  # fmt: skip
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
