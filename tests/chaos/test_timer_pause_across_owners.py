"""A pause holds across owners: a job paused while served, its timer killed, resumed while no
timer runs, then restored by the next one. Nothing of the pause is owed (decision 0004), and
what "after the pause" means is read off the timer's own records, never off the test's
clock (decision 0159): the pause took effect in the transaction that wrote the job's state at
the paused version, and every request of a later transaction is for a slot after the resume.

The case `tests/chaos/test_timer_lifecycle.py` met only when its restarted timer was slow to
start (a loaded machine): then the restore, not the live loop, read the resume, and fired the
slots of the pause late.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.timer_harness import (
    TimerProcess,
    every_job_reached,
    timer_env,
    wait_until,
)
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.jobs import JobsClient
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

JOB = "paused-across-owners"


def _requests(bootstrap: str) -> list[tuple[int, dict]]:
    """The job's committed requests, each with the number of the timer transaction that
    wrote it (its `tickwheel-seq` header)."""
    found = []
    for priority in ("high", "normal", "low"):
        for record in read_to_end(topic_name(f"executions.{priority}"), None, bootstrap):
            seq = record.header("tickwheel-seq")
            if record.value is None or record.key != JOB or seq is None:
                continue
            found.append((int(seq), decode(record.value, "ExecutionRequest")[1]))
    return found


def _paused_state_seq(bootstrap: str, version: int) -> int | None:
    """The transaction that wrote the job's state at `version` first: where the pause took
    effect (None: not yet)."""
    for record in read_to_end(topic_name("timers.state"), None, bootstrap):
        if record.key == JOB and record.value is not None:
            state = decode(record.value, "TimerState")[1]
            if state["job_version"] == version:
                return int(state["seq"])
    return None


def test_a_resume_only_the_next_owner_reads_owes_nothing_of_the_pause(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    jobs = JobsClient(kafka_bootstrap, write_path="direct")
    jobs.create({"jobId": JOB, "type": "noop", "cron": "*/2 * * * * *", "jitter": "0s"})
    timer = TimerProcess("timer-1", tmp_path / "t1.log", env)
    timer.start()
    try:
        started = int(time.time() * 1000)
        assert wait_until(lambda: every_job_reached(kafka_bootstrap, [JOB], started), 60)
        paused = jobs.pause(JOB)
        assert wait_until(lambda: _paused_state_seq(kafka_bootstrap, paused["version"]), 60)
        # Several slots fall while it is paused, and while no timer runs.
        time.sleep(3)
        timer.kill()
        time.sleep(3)
        resumed = jobs.resume(JOB)
        timer = TimerProcess("timer-1", tmp_path / "t2.log", env)
        timer.start()
        after = resumed["updatedAt"] + 4000
        assert wait_until(lambda: every_job_reached(kafka_bootstrap, [JOB], after), 90)
    finally:
        timer.stop()

    took_effect = _paused_state_seq(kafka_bootstrap, paused["version"])
    assert took_effect is not None
    requests = _requests(kafka_bootstrap)
    fired_before = [r["scheduled_time"] for seq, r in requests if seq < took_effect]
    fired_since = sorted(r["scheduled_time"] for seq, r in requests if seq >= took_effect)
    assert fired_before, "the job fired before its pause"
    # Not one slot of the pause, neither by the live loop that read the pause nor by the
    # restore that read the resume; then the slots after the resume, each once.
    assert fired_since and min(fired_since) > resumed["updatedAt"], (
        resumed["updatedAt"], fired_since,
    )  # fmt: skip
    assert len(fired_since) == len(set(fired_since))
    assert {r["job_version"] for seq, r in requests if seq >= took_effect} == {resumed["version"]}
