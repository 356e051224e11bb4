"""A worker lane on the in-memory Kafka (`tickwheel.adapters.kafka.memory`), driven one loop
turn at a time (`PriorityLane.step`): requests are consumed from `executions.normal` through
the lane's own consumer group, events land on `executions.events` keyed by job, and offsets
are committed to the group. The unit tier of issue 10: lease before outcome, at-least-once
commits, heartbeats, the attempt on every event, a cancel before the start, and a redelivery
not run twice. The real-broker tests (`tests/integration/test_worker*.py`) stay as they are."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryConsumer, MemoryEventProducer
from tickwheel.clock import FakeClock
from tickwheel.jobtypes import builtin_registry
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType
from tickwheel.services.worker.attempt import RecordBatches
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lane import PriorityLane
from tickwheel.services.worker.settings import WorkerSettings, lane_consumer_config
from tickwheel.topology import load_topology, topic_name

T0 = 1_800_000_000.0
MAX_STEPS = 1000  # every wait below is bounded by a count of loop turns (and so in time)
TURN_WAIT_S = 0.005  # between turns, for what a slot thread does meanwhile


class BrokerSink(RecordBatches):
    """The worker's event sink on the in-memory broker: each event is appended to
    `executions.events` (keyed by job), and its acknowledgement held until `acknowledge()`
    when `hold` is set (the broker has not confirmed the lease yet)."""

    def __init__(self, broker: MemoryBroker, hold: bool = False) -> None:
        self.producer = MemoryEventProducer(broker)
        self.hold = hold
        self.held: list[Callable[[str | None], None]] = []
        self._lock = threading.Lock()

    def publish_record(self, job_id: str, value: bytes, on_delivery: Any = None) -> None:
        with self._lock:
            self.producer.send(topic_name("executions.events"), job_id, value)
            if on_delivery is None:
                return
            if self.hold:
                self.held.append(on_delivery)
                return
        on_delivery(None)

    def acknowledge(self) -> None:
        with self._lock:
            held, self.held = self.held, []
        for callback in held:
            callback(None)


class Lane:
    def __init__(self, registry: HandlerRegistry | None = None, hold: bool = False) -> None:
        self.clock = FakeClock(T0)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(load_topology())
        self.sink = BrokerSink(self.broker, hold)
        self.cancels = CancelRegistry()
        self.heartbeats = HeartbeatScheduler(self.clock)
        self.settings = WorkerSettings(bootstrap="memory", commit_interval_s=0.0,
                                       concurrency={"normal": 2})  # fmt: skip
        self.consumer = MemoryConsumer(self.broker, lane_consumer_config(self.settings, "normal"))
        self.fatal: list[str] = []
        self.lane = PriorityLane(
            "normal", self.settings, registry=registry or builtin_registry(), sink=self.sink,
            cancels=self.cancels, heartbeats=self.heartbeats,
            dead_letters=None,  # type: ignore[arg-type]  # no undecodable record here
            clock=self.clock, on_fatal=self.fatal.append,
            consumer=self.consumer,  # type: ignore[arg-type]
        )  # fmt: skip
        self.lane.subscribe()
        self.requests = MemoryEventProducer(self.broker)
        self.turn = threading.Event()

    def offer(self, *requests: dict[str, Any]) -> None:
        for req in requests:
            self.requests.send(
                topic_name("executions.normal"), req["job_id"], encode("ExecutionRequest", req)
            )

    def events(self) -> list[dict[str, Any]]:
        topic = topic_name("executions.events")
        found = []
        for partition in range(len(self.broker.metadata(topic).topics[topic].partitions)):
            for entry in self.broker.log(topic, partition).entries:
                event = decode(entry.value or b"", "ExecutionEvent")[1]
                assert entry.key == event["job_id"].encode()  # keyed by job: the timer's
                found.append(event)
        return sorted(found, key=lambda e: (e["event_time"], e["event_id"]))

    def of(self, execution_id: str) -> list[str]:
        return [e["event_type"] for e in self.events() if e["execution_id"] == execution_id]

    def committed(self) -> int:
        """Request offsets committed by the lane's group, summed over partitions."""
        topic = topic_name("executions.normal")
        count = len(self.broker.metadata(topic).topics[topic].partitions)
        points = self.consumer.committed([TopicPartition(topic, p) for p in range(count)])
        return sum(max(0, tp.offset) for tp in points)

    def step_until(self, done: Callable[[], bool]) -> None:
        for _ in range(MAX_STEPS):
            self.lane.step()
            if done():
                return
            self.turn.wait(TURN_WAIT_S)  # never set: a bounded pause for the slot threads
        raise AssertionError(f"not done after {MAX_STEPS} loop turns")

    def close(self) -> None:
        self.lane.runner.shutdown()


def test_every_request_is_leased_before_its_outcome_and_committed_once_its_lease_is_acked() -> None:
    lane = Lane(hold=True)
    ids = [f"e{i}" for i in range(20)]
    lane.offer(*(request(execution_id=e, job_id=f"job-{i % 5}") for i, e in enumerate(ids)))
    lane.step_until(lambda: sum(e["event_type"] == "succeeded" for e in lane.events()) == 20)
    assert all(lane.of(e) == ["leased", "succeeded"] for e in ids)
    for _ in range(3):
        lane.lane.step()
    assert lane.committed() == 0  # no lease acknowledged: nothing may be committed
    lane.sink.acknowledge()
    lane.step_until(lambda: lane.committed() == 20)
    assert not lane.fatal
    lane.close()


def test_a_running_attempt_heartbeats_on_its_schedule_with_its_attempt() -> None:
    release = threading.Event()

    def waits(ctx: ExecutionContext) -> None:
        release.wait(10)

    registry = builtin_registry().merged(
        HandlerRegistry([JobType("waits", waits, lease_seconds=30, heartbeat_seconds=10)])
    )
    lane = Lane(registry)
    lane.offer(request(execution_id="long", job_type="waits", attempt=3))
    lane.step_until(lambda: lane.of("long") == ["leased"] and len(lane.heartbeats) == 1)
    for beat in range(1, 4):
        lane.clock.advance(10)
        assert lane.heartbeats.run_due(lane.clock.now()) == 1
        assert lane.of("long") == ["leased"] + ["heartbeat"] * beat
    release.set()
    lane.step_until(lambda: lane.of("long")[-1:] == ["succeeded"])
    events = [e for e in lane.events() if e["execution_id"] == "long"]
    assert {e["attempt"] for e in events} == {3}  # the fencing token on every event
    deadlines = [e["lease_deadline"] for e in events if e["event_type"] == "heartbeat"]
    assert deadlines == [int((T0 + 10 * b + 30) * 1000) for b in range(1, 4)]
    lane.close()


def test_each_attempt_reports_under_its_own_attempt_and_a_redelivery_runs_once() -> None:
    lane = Lane()
    first, second = request(execution_id="x", attempt=1), request(execution_id="x", attempt=2)
    lane.offer(first, first, second)  # the attempt 1 twice: a redelivery
    lane.step_until(lambda: lane.committed() == 3)
    reported = [(e["event_type"], e["attempt"]) for e in lane.events()]
    assert sorted(reported) == [("leased", 1), ("leased", 2), ("succeeded", 1), ("succeeded", 2)]
    assert len({e["event_id"] for e in lane.events()}) == 4
    lane.close()


def test_a_request_cancelled_before_it_starts_is_reported_cancelled_and_committed() -> None:
    lane = Lane()
    lane.cancels.cancel("doomed", "operator asked")
    lane.offer(request(execution_id="doomed"), request(execution_id="fine"))
    lane.step_until(lambda: lane.committed() == 2)
    assert lane.of("doomed") == ["cancelled"] and lane.of("fine") == ["leased", "succeeded"]
    (cancelled,) = [e for e in lane.events() if e["execution_id"] == "doomed"]
    assert cancelled["reason"] == "operator asked"
    lane.close()


def test_a_cancel_of_one_attempt_skips_it_and_runs_the_step_retried_after_it() -> None:
    """A workflow stops attempt 1 of a step and retries it as attempt 2 (same execution id):
    when both reach the lane after the cancel, attempt 1 is skipped and attempt 2 runs."""
    lane = Lane()
    lane.cancels.cancel("step", "workflow", attempt=1)
    lane.offer(request(execution_id="step", attempt=1), request(execution_id="step", attempt=2))
    lane.step_until(lambda: lane.committed() == 2)
    reported = [(e["event_type"], e["attempt"]) for e in lane.events()]
    assert sorted(reported) == [("cancelled", 1), ("leased", 2), ("succeeded", 2)]
    lane.close()
