"""At-least-once execution under faults, through the real pipeline (timer → worker → timer),
checked from the recorded events read back read_committed:
a killed worker's execution re-runs as attempt 2; a stalled worker's late outcome is fenced;
a long heartbeating job is never duplicated; failures retry with jittered backoff, across a
restart of the timer, and hopeless ones are dead-lettered."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.execution_timeline import accepted_outcomes, execution_timeline, of_process
from tests.chaos.worker_chaos_harness import LEASE_S, chaos_env
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def _env(bootstrap: str, prefix: str) -> dict[str, str]:
    return chaos_env(
        bootstrap, prefix, TICKWHEEL_RETRY_BASE_MS="500", TICKWHEEL_RETRY_CAP_MS="4000"
    )


def _worker(name: str, tmp: Path, env: dict[str, str], *args: str) -> ServiceProcess:
    return ServiceProcess(name, tmp / f"{name}.log", env, "worker", ("--concurrency", "4", *args))


def _events_of(bootstrap: str, job_id: str) -> list[dict[str, Any]]:
    """The recorded events of one-off `job_id`'s execution (none yet: empty)."""
    return execution_timeline(bootstrap).get(_exec_id(job_id), [])


def _has_event(bootstrap: str, job_id: str, kind: str, attempt: int | None = None) -> bool:
    """True once the execution of one-off `job_id` has an event of `kind` (of `attempt`)."""
    return any(
        e["event_type"] == kind and (attempt is None or e["attempt"] == attempt)
        for e in _events_of(bootstrap, job_id)
    )


def _outcome_fenced(bootstrap: str, job_id: str) -> bool:
    """True once an outcome reported for the execution of `job_id` has been fenced."""
    return any(
        e["event_type"] == "fenced"
        and json.loads(e["details"])["fenced_event_type"] in ("succeeded", "failed", "cancelled")
        for e in _events_of(bootstrap, job_id)
    )


def _one_off(job_id: str, job_type: str, payload: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "jobId": job_id,
        "type": job_type,
        "payload": payload,
        "runAt": "2020-01-01T00:00:00Z",
        **extra,
    }


@contextmanager
def _leased(
    bootstrap: str, prefix: str, tmp_path: Path, job_id: str, seconds: float, names: tuple[str, str]
) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    """A timer and the first worker of `names` running, the one-off job `job_id` (sleeping
    `seconds`) published and leased by it; yields that worker and the second one, not yet
    started. All three are stopped on the way out."""
    env = _env(bootstrap, prefix)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    holder, spare = (_worker(name, tmp_path, env) for name in names)
    timer.start()
    holder.start()
    try:
        spec = _one_off(job_id, "sleep", {"seconds": seconds})
        publish_jobs(bootstrap, [spec], int(time.time() * 1000))
        assert wait_until(lambda: _has_event(bootstrap, job_id, "leased"), 60)
        yield holder, spare
    finally:
        timer.stop()
        holder.stop()
        spare.stop()


def test_a_killed_worker_is_replaced_within_the_lease_by_attempt_two(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    leased = _leased(kafka_bootstrap, applied_topology, tmp_path, "slow", 4, ("doomed", "rescuer"))
    with leased as (doomed, rescuer):
        doomed.kill()
        killed_at = time.time()
        rescuer.start()
        assert wait_until(lambda: accepted_outcomes(_events_of(kafka_bootstrap, "slow")), 60)
    events = _events_of(kafka_bootstrap, "slow")
    leases = [e for e in events if e["event_type"] == "leased"]
    assert [(e["attempt"], e["worker_id"].startswith("doomed")) for e in leases[:1]] == [(1, True)]
    second = [e for e in leases if e["attempt"] == 2]
    assert second and not second[0]["worker_id"].startswith("doomed")
    assert second[0]["event_time"] / 1000 - killed_at < LEASE_S + 2 + 10  # lease + grace + slack
    [outcome] = accepted_outcomes(events)
    assert (outcome["event_type"], outcome["attempt"]) == ("succeeded", 2)


def test_a_stalled_workers_late_outcome_is_fenced_and_one_outcome_is_accepted(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    leased = _leased(kafka_bootstrap, applied_topology, tmp_path, "stall", 2, ("stalled", "other"))
    with leased as (stalled, other):
        stalled.signal(signal.SIGSTOP)
        other.start()
        assert wait_until(lambda: _has_event(kafka_bootstrap, "stall", "succeeded", 2), 60)
        stalled.signal(signal.SIGCONT)
        # Stopped now, gracefully, while the timer runs: a handler it was still running when
        # the wait below ended used to finish during the shutdown on the way out, after the
        # timer's, and its late outcome was left for no one to fence (seen in CI). Once it has
        # stopped, every event it will ever write is on the topic.
        stalled.stop()
        # Its heartbeats are fenced first; wait for its late outcome's fence. An outcome reads
        # as accepted here until the timer has read it and written its fence (under load the
        # stalled worker's late events can be on the topic before the timer reads them all):
        # wait until one unfenced outcome is left, which a second accepted one never lets be.
        assert wait_until(
            lambda: (
                _outcome_fenced(kafka_bootstrap, "stall")
                and len(accepted_outcomes(_events_of(kafka_bootstrap, "stall"))) == 1
            ),
            30,
        )
    events = _events_of(kafka_bootstrap, "stall")
    [accepted] = accepted_outcomes(events)
    assert accepted["attempt"] == 2 and of_process("other")(accepted["worker_id"])
    # Whatever was fenced came from the stalled worker. Mostly its attempt 1; but once resumed
    # it is a zombie consumer until the group tells it it was evicted, and it can still take
    # attempt 2's request off its old partition and run it (seen in a clean-clone CI run):
    # each event of that second run is fenced too, none of the current worker's is.
    fenced = [e for e in events if e["event_type"] == "fenced"]
    assert fenced and all(of_process("stalled")(e["worker_id"]) for e in fenced)


def test_retries_jitter_survive_a_timer_restart_and_hopeless_jobs_are_dead_lettered(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = _env(kafka_bootstrap, applied_topology)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    worker = _worker("w", tmp_path, env)
    timer.start()
    worker.start()
    specs = [
        _one_off(f"flaky-{i}", "fail", {"mode": "retryable", "times": 2}, maxAttempts=5)
        for i in range(12)
    ]
    specs.append(_one_off("doomed", "fail", {"mode": "permanent", "times": 99}))
    specs.append(_one_off("exhausted", "fail", {"mode": "retryable", "times": 99}, maxAttempts=2))
    specs.append(_one_off("long", "sleep", {"seconds": 3 * LEASE_S}))
    try:
        publish_jobs(kafka_bootstrap, specs, int(time.time() * 1000))
        # Restart the timer while retries are pending.
        assert wait_until(
            lambda: any(
                e["event_type"] == "retry_scheduled"
                for es in execution_timeline(kafka_bootstrap).values()
                for e in es
            ),
            60,
        )
        timer.kill()
        time.sleep(1)
        timer = ServiceProcess("timer", tmp_path / "timer2.log", env)
        timer.start()
        ids = [_exec_id(s["jobId"]) for s in specs]

        def all_settled() -> bool:
            # One read of the topic a look (not one an execution): each read is the whole topic.
            timeline = execution_timeline(kafka_bootstrap)
            return all(
                accepted_outcomes(timeline[i])
                or any(e["event_type"] == "dead_lettered" for e in timeline[i])
                for i in ids
            )

        assert wait_until(all_settled, 90, interval=1)
    finally:
        timer.stop()
        worker.stop()
    timeline = execution_timeline(kafka_bootstrap)
    delays = []
    for spec in specs[:12]:
        events = timeline[_exec_id(spec["jobId"])]
        [outcome] = accepted_outcomes(events)
        assert (outcome["event_type"], outcome["attempt"]) == ("succeeded", 3)
        for e in events:
            if e["event_type"] == "retry_scheduled":
                delays.append(json.loads(e["details"])["delay_ms"])
    assert len(set(delays)) > len(delays) // 2  # jittered, not identical across executions
    letters = {
        d["job_id"]: d for d in (
            decode(r.value, "DeadLetter")[1] for r in read_to_end(topic_name("executions.dlq"), None, kafka_bootstrap)
        )
    }  # fmt: skip
    assert letters["doomed"]["reason"] == "permanent_error" and letters["doomed"]["attempt"] == 1
    assert (
        letters["exhausted"]["reason"] == "max_attempts_exhausted"
        and letters["exhausted"]["attempt"] == 2
    )
    assert letters["exhausted"]["error"]
    long_events = timeline[_exec_id("long")]
    assert {e["attempt"] for e in long_events if e["event_type"] == "leased"} == {1}
    assert sum(1 for e in long_events if e["event_type"] == "heartbeat") >= 3
    assert [e["event_type"] for e in accepted_outcomes(long_events)] == ["succeeded"]


def _exec_id(job_id: str) -> str:
    from tickwheel.core.identity import execution_id

    return execution_id(job_id, 1, 1577836800000)  # runAt 2020-01-01T00:00:00Z, version 1
