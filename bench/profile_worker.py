"""Profile one worker lane's no-op path in one thread, without a broker.

What runs is the service's own lane (`PriorityLane.step`: poll, intake, dispatch, the inline
batch's leases, handlers and outcomes, the commit) fed by a consumer that hands out
pre-encoded requests, with events going either to a sink that acknowledges each at once on
this thread (`--sink ack`: Python's share, delivery reports included) or to a real
confluent-kafka producer with no broker behind it (`--sink producer`: the produce calls too;
reports never come, so nothing is committed), or on the in-memory Kafka tier (`--sink
memory`: the lane's own consumer group on `MemoryBroker`, whose Python partitioner and log
then cost more than the lane itself). Kafka's own cost is what `bench_limits.py`
measures; this isolates what tickwheel does per execution, so two revisions compare on a
loaded machine:

    python bench/profile_worker.py --executions 20000               # CPU µs per execution
    python bench/profile_worker.py --profile                        # and cProfile's top
    PYTHONPATH=/tmp/old/src python bench/profile_worker.py ...      # another revision's code
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import time
import uuid
from collections.abc import Callable
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.clock import SystemClock
from tickwheel.jobtypes import builtin_registry
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lane import PriorityLane
from tickwheel.services.worker.publisher import EventPublisher
from tickwheel.services.worker.settings import WorkerSettings
from tickwheel.topology import topic_name

PARTITIONS = 6


def noop_request(i: int, at_ms: int) -> dict[str, Any]:
    """A no-op request as the timer writes it (`worker_stages.fill` gives each a fresh id)."""
    return {
        "execution_id": str(uuid.UUID(int=i)), "job_id": f"bench-{i % 997}", "job_version": 1,
        "job_type": "noop", "tenant_id": f"tenant-{i % 7}", "priority": "normal", "attempt": 1,
        "scheduled_time": at_ms, "fire_time": at_ms, "period_start": at_ms, "period_end": None,
        "payload": "{}", "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": at_ms, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip


class Record:
    """What the lane reads of a consumed record."""

    __slots__ = ("_offset", "_partition", "_value")

    def __init__(self, value: bytes, partition: int, offset: int) -> None:
        self._value, self._partition, self._offset = value, partition, offset

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes:
        return b"bench"

    def topic(self) -> str:
        return "executions.normal"


class ListConsumer:
    """A consumer that hands out `records` in polls, and takes commits (keeping the last)."""

    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self.position = 0
        self.commits = 0

    def consume(self, num_messages: int, timeout: float) -> list[Record]:
        batch = self.records[self.position : self.position + num_messages]
        self.position += len(batch)
        return batch

    def poll(self, timeout: float) -> Record | None:
        batch = self.consume(1, timeout)
        return batch[0] if batch else None

    def commit(self, offsets: Any = None, asynchronous: bool = True) -> None:
        self.commits += 1

    def subscribe(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def assignment(self) -> list[Any]:
        return []

    def pause(self, _partitions: Any) -> None:
        pass

    def resume(self, _partitions: Any) -> None:
        pass

    def close(self) -> None:
        pass


class AckingSink:
    """Acknowledges every event at once, on the caller's thread (a batch: once, after its
    last event; written out here, so that an older revision's lane runs against it too)."""

    def __init__(self) -> None:
        self.events = 0

    def publish_record(self, job_id: str, value: bytes, on_delivery: Any = None) -> None:
        self.events += 1
        if on_delivery is not None:
            on_delivery(None)

    def publish_batch(self, records: list[tuple[str, bytes]], on_delivery: Any = None) -> None:
        self.events += len(records)
        if on_delivery is not None and records:
            on_delivery(None)


class ProducerSink(EventPublisher):
    """The worker's own publisher, with no broker behind it: each event is produced and left
    queued (its delivery report never comes)."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1", **{
            "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 4_000_000,
            "log_level": 0,
        })  # fmt: skip

    @property
    def events(self) -> int:
        return len(self._producer)


class MemorySink:
    """Events onto the in-memory broker's `executions.events`, acknowledged at once."""

    def __init__(self, broker: Any) -> None:
        from tickwheel.adapters.kafka.memory import MemoryEventProducer

        self.producer = MemoryEventProducer(broker)
        self.topic = topic_name("executions.events")
        self.events = 0

    def publish_record(self, job_id: str, value: bytes, on_delivery: Any = None) -> None:
        self.publish_batch([(job_id, value)], on_delivery)

    def publish_batch(self, records: list[tuple[str, bytes]], on_delivery: Any = None) -> None:
        for job_id, value in records:
            self.producer.send(self.topic, job_id, value)
        self.events += len(records)
        if on_delivery is not None:
            on_delivery(None)


def memory_run(executions: int, profiler: cProfile.Profile | None = None) -> float:
    """CPU µs per execution through a lane on the in-memory Kafka tier: requests on the
    memory broker's `executions.normal`, the lane's own consumer group, its commits, events
    to `executions.events` (the fake client's cost is in the figure, not the real one's)."""
    from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryConsumer, MemoryEventProducer
    from tickwheel.services.worker.settings import lane_consumer_config
    from tickwheel.topology import load_topology

    clock = SystemClock()
    broker = MemoryBroker(clock=clock)
    broker.create_topics(load_topology())
    requests = MemoryEventProducer(broker)
    for i in range(executions):
        request = noop_request(i, 1_764_590_400_000)
        requests.send(topic_name("executions.normal"), request["job_id"],
                      encode("ExecutionRequest", request))  # fmt: skip
    settings = WorkerSettings(bootstrap="memory", commit_interval_s=0.0)
    consumer = MemoryConsumer(broker, lane_consumer_config(settings, "normal"))
    sink = MemorySink(broker)
    lane = PriorityLane(
        "normal", settings, registry=builtin_registry(), sink=sink, cancels=CancelRegistry(),
        heartbeats=HeartbeatScheduler(clock),
        dead_letters=None,  # type: ignore[arg-type]  # every record decodes
        clock=clock, on_fatal=print, consumer=consumer,  # type: ignore[arg-type]
    )  # fmt: skip
    lane.subscribe()

    def drive() -> None:
        for _ in range(10 * executions):  # bounded: each turn takes up to a batch
            if sink.events >= 2 * executions:
                return
            lane.step()

    started = time.thread_time()
    if profiler is not None:
        profiler.runcall(drive)
    else:
        drive()
    cpu_us = (time.thread_time() - started) / executions * 1e6
    assert sink.events == 2 * executions, (sink.events, executions)
    return cpu_us


def lane_for(records: list[Record], sink: Any) -> tuple[PriorityLane, ListConsumer]:
    clock = SystemClock()
    consumer = ListConsumer(records)
    lane = PriorityLane(
        "normal", WorkerSettings(bootstrap="none", commit_interval_s=0.0),
        registry=builtin_registry(), sink=sink, cancels=CancelRegistry(),
        heartbeats=HeartbeatScheduler(clock),
        dead_letters=None,  # type: ignore[arg-type]  # every record decodes
        clock=clock, on_fatal=print, consumer=consumer,  # type: ignore[arg-type]
    )  # fmt: skip
    for partition in range(PARTITIONS):
        lane.offsets.assign(partition)
    return lane, consumer


def records(executions: int, first: int) -> list[Record]:
    return [
        Record(encode("ExecutionRequest", noop_request(i, 1_764_590_400_000)), i % PARTITIONS, i)
        for i in range(first, first + executions)
    ]


def run(executions: int, sink_kind: str, profiler: cProfile.Profile | None = None) -> float:
    """CPU µs of this thread per execution for `executions` no-ops through a lane."""
    sink: Any = AckingSink() if sink_kind == "ack" else ProducerSink()
    lane, consumer = lane_for(records(executions, 0), sink)

    def drive() -> None:
        for _ in range(10 * executions):  # bounded: each turn takes up to a batch
            if consumer.position >= executions and not lane.queue:
                return
            lane.step()

    work: Callable[[], None] = drive
    started = time.thread_time()
    if profiler is not None:
        profiler.runcall(work)
    else:
        work()
    cpu_us = (time.thread_time() - started) / executions * 1e6
    assert sink.events == 2 * executions, (sink.events, executions)
    if isinstance(sink, EventPublisher):  # its events were never to be delivered: dropped
        quiet = logging.getLogger("tickwheel.worker")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        lane.on_fatal = lane.ledger.on_fatal = lambda _reason: None
        sink._producer.purge()
        sink.close(0)
        quiet.setLevel(level)
    return cpu_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=20_000)
    parser.add_argument("--sink", choices=("ack", "producer", "memory"), default="ack",
                        help="memory: the in-memory Kafka tier, consumer and topics too")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    def once(profiler: cProfile.Profile | None = None, executions: int = args.executions) -> float:
        if args.sink == "memory":
            return memory_run(executions, profiler)
        return run(executions, args.sink, profiler)

    once(executions=2000)  # warm: the schema registry, the codec's layout check
    figures = [once() for _ in range(args.repeat)]
    print(f"{args.sink}: CPU µs per execution " + " / ".join(f"{f:.1f}" for f in figures))
    if args.profile:
        profiler = cProfile.Profile()
        once(profiler)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
