"""Two writers that both read version n publish two different n+1s (the version check is the
client's until the HTTP API brings one writer per job, issue 13). Compaction keeps the later
record, so a restore loads it: the live timer must follow the same record (issue 16, B11)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.timer_harness import TimerProcess, emitted_requests, timer_env, wait_until
from tickwheel.sdk.jobs import JobsClient

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def test_the_live_and_the_restored_timer_follow_the_same_of_two_concurrent_edits(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    timer = TimerProcess("timer-fork", tmp_path / "fork.log", env)
    job_id = f"fork-{uuid.uuid4().hex[:6]}"
    first, second = JobsClient(kafka_bootstrap), JobsClient(kafka_bootstrap)
    first.create({"jobId": job_id, "type": "noop", "cron": "0 0 1 1 *", "jitter": "0s"})
    stale = first.get(job_id)
    second.get = lambda _job_id: stale  # type: ignore[method-assign]  # it read v1 too
    timer.start()
    try:
        assert wait_until(lambda: timer.log_path.read_text().count('"partition_restored"') >= 6, 60)
        first.update(job_id, {"cron": "*/2 * * * * *"}, expected_version=1)  # even seconds
        second.update(job_id, {"cron": "1/2 * * * * *"}, expected_version=1)  # odd: kept
        both_published = int(time.time() * 1000)

        def slots_since(t_ms: int) -> list[int]:
            return [r["scheduled_time"] for r in emitted_requests(kafka_bootstrap)
                    if r["job_id"] == job_id and r["requested_at"] > t_ms + 1_000]  # fmt: skip

        assert wait_until(lambda: len(slots_since(both_published)) >= 3, 30)
        live = slots_since(both_published)
        timer.kill()
        restarted = int(time.time() * 1000)
        timer.start()
        assert wait_until(lambda: len(slots_since(restarted)) >= 3, 60)
        restored = slots_since(restarted)
    finally:
        timer.stop()
    # Both follow the record compaction keeps (the second writer's): odd seconds only.
    assert all(slot // 1000 % 2 == 1 for slot in live), live
    assert all(slot // 1000 % 2 == 1 for slot in restored), restored
