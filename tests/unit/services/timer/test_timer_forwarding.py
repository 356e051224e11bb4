"""After the jobs group grew from 6 to 12 partitions (decision 0211), a trigger command or a
worker's event that sits on a partition that no longer owns its job (written before the
resize, or by a producer with old metadata) is not applied there: the timer's loop, on the
in-memory Kafka, forwards it unchanged to its owner in the transaction that moves the
partition's checkpoint past it, the owner applies it, and a restart forwards nothing twice."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import (
    MemoryBroker,
    MemoryClients,
    MemoryEventProducer,
    MemoryPartitionReader,
)
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import owner_partition
from tickwheel.clock import FakeClock
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import load_topology, topic_name

T0_MS = 1_800_000_000_000
OLD, NEW = 6, 12
MAX_TURNS = 200


def _moved_job() -> tuple[str, int, int]:
    """A job id whose partition under 6 is not its owner under 12: (id, stale, owner)."""
    for i in range(1000):
        job_id = f"moved-{i}"
        stale, owner = partition_for(job_id, OLD), owner_partition(job_id, NEW)
        if stale != owner:
            return job_id, stale, owner
    raise AssertionError("no job id moves")


class Cluster:
    def __init__(self) -> None:
        self.clock = FakeClock(T0_MS / 1000)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(
            replace(s, partitions=NEW) if s.co_partition == "jobs" else s for s in load_topology()
        )
        self.clients = MemoryClients(self.broker)
        self.reader = MemoryPartitionReader(self.broker)

    def timer(self, instance: str, *, resized: bool = True) -> TimerService:
        settings = TimerSettings(
            instance=instance, bootstrap="memory", group_id="fwd", tick_ms=50, metrics_port=0
        )
        service = TimerService(settings, clock=self.clock, clients=self.clients, inline=True)
        service.gate.adopt(NEW, resized=resized)  # as run() does with the cluster's record
        service.start()
        for _ in range(MAX_TURNS):
            if len(service.partitions) == NEW:
                return service
            self.turn(service)
        raise AssertionError("the timer never served every partition")

    def turn(self, service: TimerService, count: int = 1) -> None:
        for _ in range(count):
            self.clock.advance(0.5)
            service.step()

    def write(self, topic: str, key: str, value: bytes, partition: int) -> None:
        """A record placed on `partition` whatever its key says (a stale producer's)."""
        producer = self.clients.transactional(f"stale-{uuid.uuid4()}")
        producer.init()
        producer.begin()
        producer.send(topic, key, value, partition)
        producer.commit()

    def records(self, topic: str) -> list[tuple[int, str | None, bytes | None]]:
        return [(r.partition, r.key, r.value) for r in self.reader.read_to_end(topic)]

    def requests(self) -> list[dict[str, Any]]:
        found = []
        for priority in ("high", "normal", "low"):
            for record in self.reader.read_to_end(topic_name(f"executions.{priority}")):
                if record.value is not None:
                    found.append(decode(record.value, "ExecutionRequest")[1])
        return found


def _trigger(job_id: str, now_ms: int) -> bytes:
    return encode(
        "TimerCommand",
        {
            "command_id": "trigger-1",
            "job_id": job_id,
            "kind": "trigger",
            "requested_at": now_ms,
            "range_start": None,
            "range_end": None,
            "execution_id": None,
            "data": None,
        },
    )


def test_a_trigger_on_a_partition_that_no_longer_owns_its_job_is_forwarded_once_and_fired() -> None:
    cluster = Cluster()
    job_id, stale, owner = _moved_job()
    spec = {"jobId": job_id, "type": "noop", "cron": "0 0 1 1 *", "jitter": "0s"}
    producer = MemoryEventProducer(cluster.broker)  # the definition where the key hashes now
    producer.send(
        topic_name("jobs.definitions"), job_id, encode("JobDefinition", validate_job(spec, T0_MS))
    )
    timer = cluster.timer("a")
    commands = topic_name("timers.commands")
    cluster.write(commands, job_id, _trigger(job_id, T0_MS), stale)
    cluster.turn(timer, 20)

    placed = Counter(p for p, key, _ in cluster.records(commands) if key == job_id)
    assert placed == {stale: 1, owner: 1}, placed
    manual = [r for r in cluster.requests() if r["job_id"] == job_id and r["trigger"] == "manual"]
    assert len(manual) == 1, manual

    # A new owner of every partition reads from the checkpoints: nothing is forwarded again.
    timer.close()
    heir = cluster.timer("b")
    cluster.turn(heir, 20)
    placed = Counter(p for p, key, _ in cluster.records(commands) if key == job_id)
    assert placed == {stale: 1, owner: 1}, placed
    assert len([r for r in cluster.requests() if r["trigger"] == "manual"]) == 1


def test_a_worker_event_on_a_stale_partition_reaches_its_owner_unchanged() -> None:
    cluster = Cluster()
    job_id, stale, owner = _moved_job()
    timer = cluster.timer("a")
    events = topic_name("executions.events")
    event = encode(
        "ExecutionEvent",
        {
            "event_id": "w:1",
            "event_time": T0_MS,
            "event_type": "heartbeat",
            "job_id": job_id,
            "job_type": "noop",
            "tenant_id": "default",
            "execution_id": "x-1",
            "attempt": 1,
            "scheduled_time": T0_MS,
            "fire_time": T0_MS,
            "worker_id": "w",
            "lease_deadline": None,
            "error": None,
            "error_kind": None,
            "reason": None,
            "details": None,
        },
    )
    cluster.write(events, job_id, event, stale)
    cluster.turn(timer, 10)
    # The owner applies it too (a heartbeat of an execution it does not know: fenced).
    copies = [p for p, _, value in cluster.records(events) if value == event]
    assert copies == [stale, owner], copies


def test_before_any_resize_is_recorded_nothing_is_forwarded() -> None:
    cluster = Cluster()
    job_id, stale, _owner = _moved_job()
    timer = cluster.timer("a", resized=False)
    commands = topic_name("timers.commands")
    cluster.write(commands, job_id, _trigger(job_id, T0_MS), stale)
    cluster.turn(timer, 10)
    assert [p for p, key, _ in cluster.records(commands) if key == job_id] == [stale]
