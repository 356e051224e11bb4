"""A watchdog SIGKILLed and restarted after the executions topics' retention dropped a weekly
job's last success (emulated by deleting the events up to their end) must not call the job
overdue: the last success it kept on `watchdog.state` stands for the event (decision 0189).
Without it the restart's replay (decision 0056) finds no success, reckons the job's deadline
from its creation a month ago, and opens `job_overdue` for a job that ran three days ago.

The control is a second weekly job with no success at all, published after the restart: its
incident opening shows that the restarted watchdog evaluated past its checkpoint before the
kept job is judged."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.test_watchdog import env_for
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.admin import admin_client
from tickwheel.adapters.kafka.client import Consumer, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end, watermarks
from tickwheel.events import execution_event
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.services.watchdog.remembered import SUCCESS_PREFIX
from tickwheel.topology import topic as declared_topic
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

DAY_MS = 86_400_000
WEEKLY = {"type": "noop", "payload": {}, "cron": "0 0 * * 0", "timezone": "UTC",
          "expectedMaxInterval": "9d", "jitter": "0s"}  # fmt: skip


def publish_success(bootstrap: str, job_id: str, slot_ms: int) -> None:
    execution_id = str(uuid.uuid4())
    request = {"job_id": job_id, "job_type": "noop", "tenant_id": "default",
               "execution_id": execution_id, "attempt": 1, "scheduled_time": slot_ms,
               "fire_time": slot_ms}  # fmt: skip
    event = execution_event(request, "succeeded", event_id=f"test:{job_id}:succeeded",
                            event_time_ms=slot_ms + 60_000, worker_id="w@test:1")  # fmt: skip
    producer = EventProducer(bootstrap)
    producer.send(topic_name("executions.events"), execution_id,
                  encode("ExecutionEvent", event))  # fmt: skip
    producer.flush()


def kept_successes(bootstrap: str) -> set[str]:
    return {
        r.key[len(SUCCESS_PREFIX) :]
        for r in read_to_end(topic_name("watchdog.state"), None, bootstrap)
        if r.key is not None and r.key.startswith(SUCCESS_PREFIX) and r.value is not None
    }


def drop_every_record(bootstrap: str, name: str = "executions.events") -> None:
    """What retention does to old segments (and compaction to superseded records): the
    topic's log starts at its end."""
    topic = topic_name(name)
    probe = Consumer(consumer_config(f"drop-{uuid.uuid4()}", bootstrap))
    try:
        partitions = range(declared_topic(name).partitions)
        ends = [TopicPartition(topic, p, watermarks(probe, TopicPartition(topic, p))[1])
                for p in partitions]  # fmt: skip
    finally:
        probe.close()
    admin = admin_client(bootstrap)  # held while its futures are pending
    for future in admin.delete_records(ends, operation_timeout=30).values():
        future.result(timeout=60)


def overdue(bootstrap: str, job_id: str) -> bool:
    return any(i["job_id"] == job_id and i["kind"] == "job_overdue" and i["state"] == "open"
               for i in incidents(read_transitions(bootstrap)))  # fmt: skip


def test_a_restarted_watchdog_keeps_a_last_success_older_than_the_events(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    first = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    second = ServiceProcess("wd", tmp_path / "wd2.log", env, "watchdog")
    kept, control = f"{applied_topology}weekly", f"{applied_topology}weekly-never"
    now = int(time.time() * 1000)
    # The Sunday midnight at least a day ago (1970-01-01, day 0, was a Thursday): its slot's
    # success is 1-8 days old, inside the 9 days expected, so the job is not overdue.
    week = 7 * DAY_MS
    last_sunday = (now - DAY_MS - 3 * DAY_MS) // week * week + 3 * DAY_MS
    assert (last_sunday // DAY_MS) % 7 == 3 and DAY_MS <= now - last_sunday < 8 * DAY_MS
    try:
        publish_jobs(kafka_bootstrap, [{"jobId": kept, **WEEKLY}], now - 30 * DAY_MS)
        publish_success(kafka_bootstrap, kept, last_sunday)
        first.start()
        assert wait_until(lambda: kept in kept_successes(kafka_bootstrap), 60, 1.0)
        first.kill()
        drop_every_record(kafka_bootstrap)
        second.start()
        assert wait_until(lambda: "watchdog_restored" in second.log_path.read_text(), 30)
        publish_jobs(kafka_bootstrap, [{"jobId": control, **WEEKLY}], now - 30 * DAY_MS)
        assert wait_until(lambda: overdue(kafka_bootstrap, control), 60, 1.0)
        time.sleep(2)  # a few more ticks (500 ms) of the restarted watchdog
        assert second.process is not None and second.process.poll() is None
    finally:
        second.stop()
        first.stop()
    assert not overdue(kafka_bootstrap, kept), incidents(read_transitions(kafka_bootstrap))
