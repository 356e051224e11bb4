"""A lane's dispatch, without a broker (a consumer that is never polled): inline attempts of a
batch record every lease before their outcomes, take no slot but wait behind a full pool,
keep the at-least-once commit rule, and are not run twice when redelivered."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import decode, encode
from tickwheel.clock import FakeClock
from tickwheel.jobtypes.basic import fail, noop
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.lane import PriorityLane
from tickwheel.services.worker.settings import WorkerSettings

from .test_worker_batches import eventually
from .test_worker_lease import ListSink


class Message:
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
        return b"job"

    def topic(self) -> str:
        return "executions.normal"


class HeldSink(ListSink):
    """Acknowledges nothing until told: the broker has not confirmed the leases yet."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Callable[[str | None], None]] = []

    def publish_record(self, job_id: str, value: bytes, on_delivery: Any = None) -> None:
        self.events.append(decode(value, "ExecutionEvent")[1])
        if on_delivery is not None:
            self.held.append(on_delivery)

    def acknowledge(self) -> None:
        held, self.held = self.held, []
        for callback in held:
            callback(None)


def make_lane(sink: ListSink, capacity: int, registry: HandlerRegistry) -> PriorityLane:
    clock = FakeClock(1_800_000_000.0)
    settings = WorkerSettings(bootstrap="127.0.0.1:1", concurrency={"normal": capacity})
    lane = PriorityLane(
        "normal", settings, registry=registry, sink=sink, cancels=CancelRegistry(),
        heartbeats=HeartbeatScheduler(clock), dead_letters=None,  # type: ignore[arg-type]
        clock=clock, on_fatal=lambda reason: None, consumer=object(),  # type: ignore[arg-type]
    )  # fmt: skip
    lane.offsets.assign(0)
    return lane


def feed(lane: PriorityLane, requests: list[dict[str, Any]], first_offset: int = 0) -> None:
    for offset, req in enumerate(requests, start=first_offset):
        lane._accept(Message(encode("ExecutionRequest", req), 0, offset))
    lane._dispatch()


def builtins() -> HandlerRegistry:
    return HandlerRegistry([JobType("noop", noop), JobType("fail", fail)])


def test_an_inline_batch_leases_first_and_commits_only_what_is_acknowledged() -> None:
    sink = HeldSink()
    lane = make_lane(sink, capacity=2, registry=builtins())
    feed(lane, [request(execution_id=f"e{i}") for i in range(5)])
    kinds = sink.types()
    assert kinds == ["leased"] * 5 + ["succeeded"] * 5  # one batch: every lease first
    assert lane.running_count == 0  # inline attempts hold no slot
    assert lane.offsets.committable() == {0: 0}  # no lease acknowledged: nothing committable
    sink.acknowledge()
    assert lane.offsets.committable() == {0: 5}


def test_a_redelivered_inline_attempt_is_not_run_again() -> None:
    sink = HeldSink()
    lane = make_lane(sink, capacity=2, registry=builtins())
    feed(lane, [request(execution_id="once")])
    feed(lane, [request(execution_id="once")], first_offset=1)  # a rebalance redelivers it
    assert sink.types() == ["leased", "succeeded"]
    assert lane.offsets.committable() == {0: 0}  # the redelivery waits for the first lease
    sink.acknowledge()
    assert lane.offsets.committable() == {0: 2}


def test_one_undelivered_lease_of_a_batch_is_fatal_and_commits_none_of_it() -> None:
    sink = HeldSink()
    fatal: list[str] = []
    lane = make_lane(sink, capacity=2, registry=builtins())
    lane.ledger.on_fatal = fatal.append
    feed(lane, [request(execution_id=f"e{i}") for i in range(4)])
    held, sink.held = sink.held, []
    assert len(held) == 4  # every lease of the batch reports to the batch's one report
    for callback in held[:3]:
        callback(None)
    assert lane.offsets.committable() == {0: 0}  # three of four durable: nothing yet
    held[3]("message timed out")
    assert fatal == ["leased event of a batch of 4 not delivered: message timed out"]
    assert lane.offsets.committable() == {0: 0}  # a restart is redelivered all four


def test_inline_attempts_wait_behind_a_full_pool_and_run_once_a_slot_frees() -> None:
    release = threading.Event()

    def slow(ctx: ExecutionContext) -> None:
        release.wait(10)

    registry = builtins().merged(HandlerRegistry([JobType("slow", slow)]))
    sink = ListSink()
    lane = make_lane(sink, capacity=1, registry=registry)
    feed(lane, [request(execution_id="slow", job_type="slow"), request(execution_id="quick")])
    eventually(lambda: len(sink.events) == 1)
    assert lane.running_count == 1
    assert [e["execution_id"] for e in sink.events] == ["slow"]  # its lease only: quick waits
    release.set()
    eventually(lambda: sum(e["execution_id"] == "quick" for e in sink.events) == 2)
    quick = [e["event_type"] for e in sink.events if e["execution_id"] == "quick"]
    assert quick == ["leased", "succeeded"] and lane.running_count == 0
    lane.runner.shutdown()
