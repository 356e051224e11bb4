"""The timer against the real broker: an outage walked forward by each job's misfire policy,
and definition changes (pause, resume, delete, edit, trigger) while running and across a
restart. Checked from what is read back read_committed."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.timer_harness import (
    TimerProcess,
    emitted_requests,
    every_job_reached,
    execution_events,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.sdk.jobs import JobsClient, validate_job

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def _slots(created_ms: int, start_ms: int, end_ms: int) -> list[int]:
    """Even seconds in (max(created, start), end]."""
    lower = max(created_ms, start_ms)
    return list(range((lower // 2000 + 1) * 2000, end_ms + 1, 2000))


def test_outage_is_walked_forward_by_each_jobs_misfire_policy(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_MISFIRE_GRACE_MS="3000",
    )
    specs = [
        {"jobId": f"{policy}-job", "type": "noop", "cron": "*/2 * * * * *", "jitter": "0s",
         "misfirePolicy": policy, "maxCatchUp": 1000}
        for policy in ("catch_up", "skip", "coalesce")
    ]  # fmt: skip
    records = publish_jobs(kafka_bootstrap, specs, int(time.time() * 1000))
    created = max(r["createdAt"] for r in records)
    timer = TimerProcess("timer-1", tmp_path / "t1.log", env)
    timer.start()
    assert wait_until(
        lambda: every_job_reached(kafka_bootstrap, [s["jobId"] for s in specs], created + 4000), 60
    )
    timer.kill()
    down_at = int(time.time() * 1000)
    # What the first run emitted (on a loaded machine its own start can already coalesce a
    # gap): the outage's coalesced run is the one emitted after the kill.
    before_outage = {
        r["scheduled_time"]
        for r in emitted_requests(kafka_bootstrap)
        if r["job_id"] == "coalesce-job"
    }
    # The outage lasts until several slots lie beyond the 3 s misfire grace: those are the
    # ones each policy must account for.
    assert wait_until(
        lambda: len(_slots(created, down_at, int(time.time() * 1000) - 3000 - 2000)) >= 4, 30, 0.2
    )
    timer = TimerProcess("timer-1", tmp_path / "t2.log", env)
    timer.start()
    back_at = int(time.time() * 1000)
    try:
        assert wait_until(
            lambda: every_job_reached(
                kafka_bootstrap, ["catch_up-job", "coalesce-job", "skip-job"], back_at + 4000
            ),
            60,
        )
    finally:
        timer.stop()
    requests = emitted_requests(kafka_bootstrap)
    skipped = [e for e in execution_events(kafka_bootstrap) if e["event_type"] == "skipped"]
    by_job = {
        job: sorted(
            (r["scheduled_time"], r["trigger"], r["late"]) for r in requests if r["job_id"] == job
        )
        for job in ("catch_up-job", "skip-job", "coalesce-job")
    }
    missed = _slots(
        created, down_at, back_at - 3000 - 2000
    )  # surely older than the grace at restart

    # catch_up: every slot exactly once, in order; the missed ones marked late.
    catch_up = by_job["catch_up-job"]
    assert [s for s, _, _ in catch_up] == sorted({s for s, _, _ in catch_up})
    expected = _slots(created, created, back_at + 4000)
    assert {s for s, _, _ in catch_up} >= set(expected)
    late = {s for s, trigger, is_late in catch_up if is_late and trigger == "catch_up"}
    assert set(missed) <= late

    # skip: the missed slots were never fired, and each is recorded as skipped.
    skip_fired = {s for s, _, _ in by_job["skip-job"]}
    assert not skip_fired & set(missed)
    skip_recorded = {e["scheduled_time"] for e in skipped if e["job_id"] == "skip-job"}
    assert set(missed) <= skip_recorded

    # coalesce: one late run stands for the gap; the other missed slots are recorded.
    coalesced_runs = [
        s
        for s, trigger, _ in by_job["coalesce-job"]
        if trigger == "catch_up" and s not in before_outage
    ]
    assert len(coalesced_runs) == 1, by_job["coalesce-job"]
    recorded = {e["scheduled_time"] for e in skipped if e["job_id"] == "coalesce-job"}
    assert set(missed) - {coalesced_runs[0]} <= recorded


def test_pause_resume_delete_edit_and_trigger_while_running_and_across_a_restart(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    jobs = JobsClient(kafka_bootstrap)
    base = {"type": "noop", "cron": "*/2 * * * * *", "jitter": "0s"}
    for name in ("paused", "deleted", "edited", "triggered"):
        jobs.create({"jobId": name, **base})
    timer = TimerProcess("timer-1", tmp_path / "t1.log", env)
    timer.start()
    try:
        names = ["paused", "deleted", "edited", "triggered"]
        started = int(time.time() * 1000)
        assert wait_until(lambda: every_job_reached(kafka_bootstrap, names, started), 60)

        jobs.pause("paused")
        jobs.delete("deleted")
        edited = jobs.update("edited", {"cron": "*/3 * * * * *"})
        jobs.trigger("triggered")
        changed_at = int(time.time() * 1000)
        time.sleep(8)
        # Across a restart: the pause and the delete hold, the edit stays.
        timer.kill()
        timer = TimerProcess("timer-1", tmp_path / "t2.log", env)
        timer.start()
        time.sleep(8)
        # The resume's own instant (its `updatedAt`): a slot after it is owed again (decision
        # 0159), even one the client's return from `resume` comes a few ms after.
        resumed_at = int(jobs.resume("paused")["updatedAt"])
        assert wait_until(
            lambda: every_job_reached(kafka_bootstrap, ["paused"], resumed_at + 2000), 60
        )
    finally:
        timer.stop()

    requests = emitted_requests(kafka_bootstrap)

    def slots(job: str, version: int | None = None) -> list[int]:
        return [
            r["scheduled_time"] for r in requests
            if r["job_id"] == job and r["trigger"] != "manual" and (version is None or r["job_version"] == version)
        ]  # fmt: skip

    margin = 1000  # a tick in flight when the change landed
    assert not [s for s in slots("paused") if changed_at + margin < s <= resumed_at]
    assert [s for s in slots("paused") if s > resumed_at]
    assert not [s for s in slots("deleted") if s > changed_at + margin]
    new_version = [s for s in slots("edited", edited["version"])]
    assert new_version and all(s % 3000 == 0 for s in new_version)
    # The edit takes effect from the next slot after the last one fired under version 1.
    assert min(new_version) > max(slots("edited", 1))
    assert all(s > edited["updatedAt"] - 3000 for s in new_version)
    manual = [r for r in requests if r["job_id"] == "triggered" and r["trigger"] == "manual"]
    assert len(manual) == 1
    counts: dict[tuple[str, int], int] = {}
    for r in requests:
        if r["trigger"] != "manual":
            counts[(r["job_id"], r["scheduled_time"])] = (
                counts.get((r["job_id"], r["scheduled_time"]), 0) + 1
            )
    assert max(counts.values()) == 1


def test_a_corrupt_definition_is_dead_lettered_with_its_position_and_the_timer_keeps_running(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    from urllib.request import urlopen

    from tickwheel.adapters.avro import decode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.adapters.kafka.reader import read_to_end
    from tickwheel.stack.broker import free_port
    from tickwheel.topology import topic_name

    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("jobs.definitions"), "corrupt", b"\xc3\x01not avro at all")
    producer.send(topic_name("jobs.definitions"), "plain-json", b'{"jobId": "plain-json"}')
    # Valid Avro, but a schedule no timer can follow (published around the SDK's validation).
    bad = publish_jobs(
        kafka_bootstrap, [{"jobId": "bad-cron", "type": "noop", "cron": "* * * * *"}], 0
    )[0]
    from tickwheel.adapters.avro import encode

    producer.send(
        topic_name("jobs.definitions"),
        "bad-cron",
        encode("JobDefinition", {**bad, "cron": "61 * * * *"}),
    )
    producer.flush()
    # A valid job on a partition its key does not hash to (a client with another partitioner).
    from confluent_kafka import Producer

    from tickwheel.adapters.kafka.config import producer_config
    from tickwheel.adapters.kafka.partitioner import partition_for

    misplaced = validate_job({"jobId": "misplaced", "type": "noop", "cron": "* * * * * *"}, 0)
    elsewhere = Producer(producer_config(kafka_bootstrap))
    elsewhere.produce(
        topic_name("jobs.definitions"),
        key=b"misplaced",
        value=encode("JobDefinition", misplaced),
        partition=(partition_for("misplaced", 6) + 1) % 6,
    )
    elsewhere.flush(30)
    publish_jobs(
        kafka_bootstrap,
        [{"jobId": "healthy", "type": "noop", "cron": "*/2 * * * * *", "jitter": "0s"}],
        int(time.time() * 1000),
    )
    port = free_port()
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_METRICS_PORT=str(port),
    )
    timer = TimerProcess("timer-1", tmp_path / "t.log", env)

    def dead_letters() -> list[dict]:
        return [
            decode(r.value, "DeadLetter")[1]
            for r in read_to_end(topic_name("executions.dlq"), None, kafka_bootstrap)
            if r.value is not None
        ]

    # Partitions are restored in the background, each on its own: the healthy job's partition
    # firing says nothing about when the others have read (and dead-lettered) their records.
    expected = {"corrupt", "plain-json", "bad-cron", "misplaced"}
    timer.start()
    try:
        started = int(time.time() * 1000)
        assert wait_until(
            lambda: every_job_reached(kafka_bootstrap, ["healthy"], started + 2000), 60
        )
        assert wait_until(lambda: expected <= {d["job_id"] for d in dead_letters()}, 60)
        metrics = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        timer.stop()
    letters = dead_letters()
    positions = {(d["job_id"], d["source_topic"]) for d in letters}
    assert ("corrupt", topic_name("jobs.definitions")) in positions
    assert ("plain-json", topic_name("jobs.definitions")) in positions
    assert ("bad-cron", topic_name("jobs.definitions")) in positions
    assert any(
        d["reason"].startswith("rejected: jobId") and "partition" in d["reason"]
        for d in letters
        if d["job_id"] == "misplaced"
    )
    assert not [r for r in emitted_requests(kafka_bootstrap) if r["job_id"] == "misplaced"]
    assert all(d["source_offset"] >= 0 for d in letters)
    assert {
        d["reason"].split(":")[0] for d in letters if d["job_id"] not in ("bad-cron", "misplaced")
    } == {"undecodable"}
    assert any(
        d["reason"].startswith("rejected: cron") for d in letters if d["job_id"] == "bad-cron"
    )
    assert all(d["raw_value"] for d in letters)
    emitted = [
        line
        for line in metrics.splitlines()
        if line.startswith("tickwheel_timer_occurrences_emitted_total")
    ]
    assert emitted and float(emitted[0].split()[-1]) >= 1
    assert "tickwheel_timer_fire_lag_seconds_bucket" in metrics
