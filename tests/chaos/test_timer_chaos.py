"""The exactly-once trigger under faults, checked from what is read back read_committed.

Two real timer processes share the partitions; one is SIGKILLed and restarted again and again
(or SIGSTOPped mid-run). Afterwards every expected (job, scheduled time) — computed here
independently of the service, by plain second arithmetic — appears exactly once.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.timer_harness import (
    TimerProcess,
    emitted_requests,
    every_job_reached,
    occurrence_counts,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

JOBS = 240
PERIOD_S = 2  # "*/2 * * * * *": every even second


def _expected_slots(created_ms: int, until_ms: int) -> list[int]:
    """Even-second instants in (created, until], computed without the scheduling core."""
    first = (created_ms // 2000 + 1) * 2000
    return list(range(first, until_ms + 1, PERIOD_S * 1000))


def _jobs(tag: str) -> list[dict[str, object]]:
    return [
        {
            "jobId": f"{tag}-{i:04d}",
            "type": "noop",
            "cron": "*/2 * * * * *",
            "timezone": "Europe/London" if i % 2 else "UTC",
            "jitter": "0s" if i % 3 else "1s",
            "tenantId": f"tenant-{i % 4}",
        }
        for i in range(JOBS)
    ]


def _wait_until_every_job_passes(
    bootstrap: str, job_ids: list[str], until_ms: int, timeout: float
) -> None:
    """Let the survivors emit what was due before `until_ms`: every job fires past it."""
    assert wait_until(
        lambda: every_job_reached(bootstrap, job_ids, until_ms + 2000), timeout, interval=2
    ), "some jobs stopped firing"


def _assert_exactly_once(
    bootstrap: str, created_ms: int, until_ms: int, job_ids: list[str]
) -> None:
    counts = occurrence_counts(emitted_requests(bootstrap))
    duplicates = {k: n for k, n in counts.items() if n > 1}
    assert not duplicates, (
        f"{len(duplicates)} occurrences emitted more than once, e.g. {list(duplicates)[:5]}"
    )
    expected = {(job, slot) for job in job_ids for slot in _expected_slots(created_ms, until_ms)}
    missing = expected - set(counts)
    assert not missing, f"{len(missing)} occurrences missing, e.g. {sorted(missing)[:5]}"


def test_exactly_once_while_one_instance_is_killed_repeatedly(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    steady = TimerProcess("timer-a", tmp_path / "a.log", env)
    victim = TimerProcess("timer-b", tmp_path / "b.log", env)
    created_ms = int(time.time() * 1000)
    records = publish_jobs(kafka_bootstrap, _jobs("kill"), created_ms)
    created_ms = max(r["createdAt"] for r in records)
    steady.start()
    victim.start()
    try:
        kills = 0
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and kills < 6:
            time.sleep(4)
            victim.kill()
            kills += 1
            time.sleep(1.5)
            victim.start()
        until_ms = int(time.time() * 1000)
        job_ids = [r["jobId"] for r in records]
        _wait_until_every_job_passes(kafka_bootstrap, job_ids, until_ms, 90)
    finally:
        steady.stop()
        victim.stop()
    assert kills >= 5
    _assert_exactly_once(kafka_bootstrap, created_ms, until_ms, [r["jobId"] for r in records])


def test_a_stopped_zombie_emits_nothing_visible_and_nothing_is_lost(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    zombie = TimerProcess("timer-zombie", tmp_path / "zombie.log", env)
    records = publish_jobs(kafka_bootstrap, _jobs("zombie"), int(time.time() * 1000))
    created_ms = max(r["createdAt"] for r in records)
    zombie.start()
    heir = TimerProcess("timer-heir", tmp_path / "heir.log", env)
    try:
        assert wait_until(lambda: len(emitted_requests(kafka_bootstrap)) > JOBS, timeout=60)
        # Stop it mid-run: with 20 ticks a second, it is very likely inside a transaction.
        zombie.signal(signal.SIGSTOP)
        heir.start()
        # The heir takes every partition once the zombie's session times out (10 s).
        assert wait_until(lambda: heir.log_path.read_text().count('"partition_restored"') >= 6, 60)
        zombie.signal(signal.SIGCONT)
        time.sleep(6)
        until_ms = int(time.time() * 1000)
        job_ids = [r["jobId"] for r in records]
        _wait_until_every_job_passes(kafka_bootstrap, job_ids, until_ms, 60)
    finally:
        zombie.stop()
        heir.stop()
    _assert_exactly_once(kafka_bootstrap, created_ms, until_ms, [r["jobId"] for r in records])


def test_states_left_for_later_are_rebuilt_from_the_requests_after_a_kill(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    """Decision 0008: a fired job's state is written later; until then its request stands
    for it. Here states are held back for ten minutes, so every restore after a SIGKILL must
    rebuild the jobs from the requests on the request topics, and still fire each slot once."""
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_TIMER_STATE_LAG_MS="600000",
    )
    timer = TimerProcess("timer-wal", tmp_path / "wal.log", env)
    records = publish_jobs(kafka_bootstrap, _jobs("wal"), int(time.time() * 1000))
    created_ms = max(r["createdAt"] for r in records)
    job_ids = [r["jobId"] for r in records]
    timer.start()
    try:
        for restarts in range(1, 4):
            enough = JOBS * (restarts + 1)
            assert wait_until(lambda n=enough: len(emitted_requests(kafka_bootstrap)) > n, 60)
            timer.kill()
            timer.start()
        until_ms = int(time.time() * 1000)
        _wait_until_every_job_passes(kafka_bootstrap, job_ids, until_ms, 60)
    finally:
        timer.stop()
    # No job's state was ever written: each restore had only the requests to go by.
    saved = [r.key for r in read_to_end(topic_name("timers.state"), None, kafka_bootstrap)]
    assert saved and all(key is not None and key.startswith("__partition__/") for key in saved)
    _assert_exactly_once(kafka_bootstrap, created_ms, until_ms, job_ids)
