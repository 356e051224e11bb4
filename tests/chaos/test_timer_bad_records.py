"""Nothing a producer sends can wedge a partition (issue 16): bad records published straight to
`jobs.definitions` and `timers.commands` with a raw Kafka producer are each dead-lettered with
a reason, while canary jobs on every partition keep firing on every slot — and keep firing,
once each, after the timer is SIGKILLed and its heir restores over those same records.
"""

from __future__ import annotations

import copy
import io
import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.chaos.test_timer_chaos import (
    _assert_exactly_once,
    _wait_until_every_job_passes,
)
from tests.integration.timer_harness import TimerProcess, publish_jobs, timer_env, wait_until
from tickwheel.adapters.avro import decode, default_registry, encode
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.jobs import validate_job
from tickwheel.topology import topic as declared_topic
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def _canaries(tag: str) -> list[dict[str, Any]]:
    """One every-two-seconds job on each partition of jobs.definitions."""
    partitions = declared_topic("jobs.definitions").partitions
    chosen: dict[int, str] = {}
    i = 0
    while len(chosen) < partitions:
        job_id = f"{tag}-canary-{i}"
        chosen.setdefault(partition_for(job_id, partitions), job_id)
        i += 1
    return [
        {"jobId": job_id, "type": "noop", "cron": "*/2 * * * * *", "jitter": "0s"}
        for job_id in chosen.values()
    ]


def _definition(job_id: str, now_ms: int, **fields: Any) -> bytes:
    """A JobDefinition record as any Kafka client with the schema could write it, with
    `fields` overriding what the SDK would have refused."""
    record = validate_job({"jobId": job_id, "type": "noop", "cron": "* * * * *"}, now_ms)
    return encode("JobDefinition", {**record, **fields})


def _command(job_id: str, kind: str, now_ms: int, **fields: Any) -> bytes:
    command = {"command_id": str(uuid.uuid4()), "job_id": job_id, "kind": kind,
               "requested_at": now_ms, "range_start": None, "range_end": None,
               "execution_id": None, "data": None, **fields}  # fmt: skip
    if kind in ("trigger", "backfill"):
        return encode("TimerCommand", command)
    # A kind this timer's schema has no symbol for (as a newer producer would write it,
    # under the fingerprint this timer knows): the enum's index runs past its symbols.
    current = default_registry().current("TimerCommand")
    schema = copy.deepcopy(dict(current.schema))
    kind_field = next(f for f in schema["fields"] if f["name"] == "kind")
    kind_field["type"]["symbols"].append(kind)
    buf = io.BytesIO(current.header)
    buf.seek(0, io.SEEK_END)
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), command)
    return buf.getvalue()


def _publish_bad_records(bootstrap: str, tag: str, now_ms: int) -> dict[tuple[str, int, int], str]:
    """Publish the catalogue; returns (topic, partition, offset) -> what each record is."""
    definitions, commands = topic_name("jobs.definitions"), topic_name("timers.commands")
    catalogue: list[tuple[str, bytes, bytes | None, str]] = [
        (definitions, f"{tag}-garbage".encode(), b"\x00not avro at all", "garbage bytes"),
        (definitions, b"\xff\xfe" + tag.encode(), _definition(f"{tag}-x", now_ms),
         "a key that is not UTF-8"),
        (definitions, f"{tag}-key".encode(), _definition(f"{tag}-other", now_ms),
         "a key that differs from jobId"),
        (definitions, f"{tag}-never".encode(),
         _definition(f"{tag}-never", now_ms, cron="0 0 * * 7/2"), "a cron that never fires"),
        (definitions, f"{tag}-tmpl".encode(),
         _definition(f"{tag}-tmpl", now_ms, payloadTemplate='{"d": "{{ period_start }}"}'),
         "an unknown template placeholder"),
        (definitions, f"{tag}-big".encode(),
         _definition(f"{tag}-big", now_ms, payload=json.dumps({"x": "y" * 300_000})),
         "an oversized payload"),
        (definitions, b"__partition__/0",
         _definition(f"{tag}-r", now_ms, jobId="__partition__/0"), "a reserved job id"),
        (commands, f"{tag}-canary-0".encode(), _command(f"{tag}-canary-0", "rerun", now_ms),
         "an unknown command kind"),
        (commands, f"{tag}-ghost".encode(), _command(f"{tag}-ghost", "trigger", now_ms),
         "a trigger for an unknown job"),
        (commands, f"{tag}-canary-0".encode(),
         _command(f"{tag}-canary-0", "backfill", now_ms, range_start=now_ms,
                  range_end=now_ms - 60_000), "a backfill range that runs backwards"),
        (commands, f"{tag}-junk".encode(), b"\x01\x02junk", "garbage bytes on commands"),
    ]  # fmt: skip
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    where: dict[tuple[str, int, int], str] = {}

    def delivered(what: str) -> Any:
        def callback(err: Any, msg: Any) -> None:
            assert err is None, err
            where[(msg.topic(), msg.partition(), msg.offset())] = what

        return callback

    for topic, key, value, what in catalogue:
        producer.produce(topic, value=value, key=key, on_delivery=delivered(what))
    assert producer.flush(30) == 0
    assert len(where) == len(catalogue)
    return where


def commands_checkpointed(bootstrap: str) -> bool:
    """Whether every partition's checkpoint has read timers.commands to its end."""
    commands = topic_name("timers.commands")
    read: dict[int, int] = {}
    for record in read_to_end(topic_name("timers.state"), None, bootstrap):
        if record.value is not None and (record.key or "").startswith("__partition__/"):
            state = decode(record.value, "TimerState")[1]
            read[record.partition] = state["input_offsets"].get(commands, 0)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4()}"})
    try:
        ends = {p: probe.get_watermark_offsets(TopicPartition(commands, p), timeout=10)[1]
                for p in range(declared_topic("timers.commands").partitions)}  # fmt: skip
    finally:
        probe.close()
    return all(read.get(p, 0) >= end for p, end in ends.items())


def _dead_letters(bootstrap: str) -> list[dict[str, Any]]:
    return [
        decode(r.value, "DeadLetter")[1]
        for r in read_to_end(topic_name("executions.dlq"), None, bootstrap)
        if r.value is not None
    ]


def _dead_lettered(bootstrap: str, bad: dict[tuple[str, int, int], str]) -> set[str]:
    found = set()
    for letter in _dead_letters(bootstrap):
        position = (letter["source_topic"], letter["source_partition"], letter["source_offset"])
        if position in bad and letter["reason"]:
            found.add(bad[position])
    return found


def test_bad_records_are_dead_lettered_and_every_partition_keeps_firing_through_a_kill(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    timer = TimerProcess("timer-bad", tmp_path / "bad.log", env)
    tag = uuid.uuid4().hex[:6]
    records = publish_jobs(kafka_bootstrap, _canaries(tag), int(time.time() * 1000))
    created_ms = max(r["createdAt"] for r in records)
    job_ids = [r["jobId"] for r in records]
    timer.start()
    try:
        assert wait_until(lambda: timer.log_path.read_text().count('"partition_restored"') >= 6, 60)
        bad = _publish_bad_records(kafka_bootstrap, tag, int(time.time() * 1000))
        # Each one dead-lettered with a reason (the unknown job's trigger after its wait).
        assert wait_until(lambda: _dead_lettered(kafka_bootstrap, bad) == set(bad.values()), 90), (
            f"not dead-lettered: {set(bad.values()) - _dead_lettered(kafka_bootstrap, bad)}"
        )
        live = int(time.time() * 1000)
        _wait_until_every_job_passes(kafka_bootstrap, job_ids, live, 60)
        # The heir restores over every bad record (from the compacted topic and the commands
        # after the checkpoint) and goes on firing.
        timer.kill()
        timer.start()
        assert wait_until(
            lambda: timer.log_path.read_text().count('"partition_restored"') >= 12, 90
        )
        # Every canary fires past a point a few slots after the heir took over.
        until_ms = int(time.time() * 1000) + 4_000
        _wait_until_every_job_passes(kafka_bootstrap, job_ids, until_ms, 60)
    finally:
        timer.stop()
    assert "Traceback" not in timer.log_path.read_text()
    _assert_exactly_once(kafka_bootstrap, created_ms, until_ms, job_ids)
    # Re-met records are the same dead letters (deterministic ids), not new ones.
    ids = [d["dead_letter_id"] for d in _dead_letters(kafka_bootstrap)]
    assert _dead_lettered(kafka_bootstrap, bad) == set(bad.values())
    assert all(i.startswith(("rejected:", "undecodable:", "job:", "dlq:")) for i in ids)


def test_a_trigger_read_before_its_new_jobs_definition_still_fires_once(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    """Definitions and commands reach the timer through two consumers, so "create, then
    trigger" can arrive command first: the trigger waits for the definition and fires."""
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}")
    timer = TimerProcess("timer-race", tmp_path / "race.log", env)
    timer.start()
    job_ids: list[str] = []

    def triggered() -> dict[str, int]:
        counts: dict[str, int] = {}
        for priority in ("high", "normal", "low"):
            for r in read_to_end(topic_name(f"executions.{priority}"), None, kafka_bootstrap):
                request = decode(r.value or b"", "ExecutionRequest")[1]
                if request["trigger"] == "manual":
                    counts[request["job_id"]] = counts.get(request["job_id"], 0) + 1
        return counts

    try:
        assert wait_until(lambda: timer.log_path.read_text().count('"partition_restored"') >= 6, 60)
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
        # Which consumer reads first is a race: each round makes "command first" likelier (more
        # definitions ahead, the timer stopped while they are written so both backlogs meet it
        # at once), and the rounds end as soon as one command was held. At most three.
        for round_, filler_count in enumerate((20_000, 60_000, 120_000)):
            tag = f"{uuid.uuid4().hex[:6]}-{round_}"
            new_ids = [f"{tag}-new-{i}" for i in range(30)]
            job_ids.extend(new_ids)
            now_ms = int(time.time() * 1000)
            fillers = [
                _definition(f"{tag}-filler-{k}", now_ms, cron="0 3 1 1 *") for k in range(60)
            ]
            timer.signal(signal.SIGSTOP)
            try:
                for i in range(filler_count):
                    key = f"{tag}-filler-{i % 60}"
                    producer.produce(topic_name("jobs.definitions"), value=fillers[i % 60], key=key)
                    if i % 1000 == 0:
                        producer.poll(0)
                for job_id in new_ids:  # a far-off daily job: only the trigger can fire it now
                    definition = _definition(job_id, now_ms, cron="0 3 1 1 *")
                    producer.produce(topic_name("jobs.definitions"), value=definition, key=job_id)
                    producer.produce(
                        topic_name("timers.commands"),
                        value=_command(job_id, "trigger", now_ms),
                        key=job_id,
                    )
                assert producer.flush(30) == 0
            finally:
                timer.signal(signal.SIGCONT)
            wanted = frozenset(job_ids)
            assert wait_until(lambda w=wanted: w <= set(triggered()), 90), "a trigger vanished"
            # Every command consumed and checkpointed (none still held): nothing more can fire.
            assert wait_until(lambda: commands_checkpointed(kafka_bootstrap), 30)
            if '"command_held"' in timer.log_path.read_text():
                break
    finally:
        timer.stop()
    counts = triggered()
    assert {counts[j] for j in job_ids} == {1}, "each trigger fires exactly once"
    assert '"command_held"' in timer.log_path.read_text(), "no trigger came first: nothing tested"
    assert not [d for d in _dead_letters(kafka_bootstrap) if d["job_id"] in job_ids]
