"""Leases and heartbeats driven by a fake clock, and the worker's bookkeeping: tenant caps,
committable offsets, remembered cancellations, settings."""

from __future__ import annotations

import argparse
import threading
from typing import Any

import pytest

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import decode
from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput
from tickwheel.sdk.executions import cancel_record
from tickwheel.sdk.worker import JobType
from tickwheel.services.worker.attempt import AttemptLease, LeaseTerms, RecordBatches, lease_terms
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.events import Outcome
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.offsets import OffsetTracker
from tickwheel.services.worker.settings import (
    add_worker_arguments,
    parse_concurrency,
    parse_priorities,
    settings_from_args,
)
from tickwheel.services.worker.tenants import TenantQueue


class ListSink(RecordBatches):
    """The event sink port, in memory: records what the lease publishes, decoded by the
    generic Avro decoder (so every test also checks the worker's own encoding)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def publish_record(self, job_id: str, value: bytes, on_delivery: Any = None) -> None:
        event = decode(value, "ExecutionEvent")[1]
        assert event["job_id"] == job_id  # keyed by job_id: co-partitioned with its timer
        self.events.append(event)
        if on_delivery is not None:
            on_delivery(None)

    def types(self) -> list[str]:
        return [e["event_type"] for e in self.events]


def lease_for(
    clock: FakeClock, sink: ListSink, lease: float = 30, beat: float = 10
) -> AttemptLease:
    ids = iter(range(1000))
    return AttemptLease(
        request(),
        LeaseTerms(lease, beat),
        worker_id="w1",
        clock=clock,
        sink=sink,
        new_id=lambda: str(next(ids)),
    )


def ms(seconds: float) -> int:
    return int(seconds * 1000)


def test_the_lease_is_recorded_with_its_deadline_and_the_attempt() -> None:
    clock, sink = FakeClock(1_800_000_000.0), ListSink()
    acknowledged: list[str | None] = []
    lease_for(clock, sink).start(acknowledged.append)
    event = sink.events[-1]
    assert acknowledged == [None]
    assert event["event_type"] == "leased"
    assert event["lease_deadline"] == ms(1_800_000_030.0)
    assert event["event_time"] == ms(1_800_000_000.0)
    assert (event["attempt"], event["worker_id"], event["execution_id"]) == (1, "w1", "exec-1")
    assert (event["job_id"], event["job_type"], event["tenant_id"]) == ("job-1", "noop", "acme")
    assert (event["scheduled_time"], event["fire_time"]) == (
        request()["scheduled_time"],
        request()["fire_time"],
    )
    assert event["event_id"] == "leased:exec-1:1:w1:0"


def test_heartbeats_come_every_interval_and_push_the_deadline() -> None:
    clock, sink = FakeClock(1_800_000_000.0), ListSink()
    scheduler = HeartbeatScheduler(clock)
    lease = lease_for(clock, sink, lease=30, beat=10)
    lease.start()
    scheduler.add(lease)
    assert scheduler.next_due() == 1_800_000_010.0
    clock.advance(9.9)
    assert scheduler.run_due(clock.now()) == 0
    deadlines = []
    for _ in range(5):
        clock.advance(10)
        assert scheduler.run_due(clock.now()) == 1
        deadlines.append(sink.events[-1]["lease_deadline"])
    assert sink.types() == ["leased"] + ["heartbeat"] * 5
    assert deadlines == [ms(1_800_000_019.9 + 10 * i + 30) for i in range(5)]
    assert all(e["attempt"] == 1 for e in sink.events)
    assert len({e["event_id"] for e in sink.events}) == 6


def test_a_manual_heartbeat_moves_the_schedule_and_close_calls_merge() -> None:
    clock, sink = FakeClock(1_800_000_000.0), ListSink()
    scheduler = HeartbeatScheduler(clock)
    lease = lease_for(clock, sink, lease=30, beat=10)
    lease.start()
    scheduler.add(lease)
    clock.advance(5)
    assert lease.heartbeat(manual=True) is True
    clock.advance(0.5)
    assert lease.heartbeat(manual=True) is False  # within a second of the last one
    clock.advance(4.5)  # t+10: the original slot, but the manual beat moved it to t+15
    assert scheduler.run_due(clock.now()) == 0
    clock.advance(5)
    assert scheduler.run_due(clock.now()) == 1
    assert sink.types() == ["leased", "heartbeat", "heartbeat"]
    assert sink.events[-1]["lease_deadline"] == ms(1_800_000_045.0)


def test_nothing_heartbeats_after_the_outcome() -> None:
    clock, sink = FakeClock(1_800_000_000.0), ListSink()
    scheduler = HeartbeatScheduler(clock)
    lease = lease_for(clock, sink)
    lease.start()
    scheduler.add(lease)
    clock.advance(3)
    lease.finish(Outcome.failed("boom", "retryable"))
    event = sink.events[-1]
    scheduler.remove(lease)
    assert (event["event_type"], event["error"], event["error_kind"]) == (
        "failed",
        "boom",
        "retryable",
    )
    assert event["lease_deadline"] is None and event["attempt"] == 1
    clock.advance(60)
    assert scheduler.run_due(clock.now()) == 0
    assert lease.heartbeat(manual=True) is False
    assert sink.types() == ["leased", "failed"]
    assert len(scheduler) == 0 and scheduler.next_due() is None


def test_many_leases_each_keep_their_own_schedule() -> None:
    clock, sink = FakeClock(1_800_000_000.0), ListSink()
    scheduler = HeartbeatScheduler(clock)
    fast, slow = lease_for(clock, sink, lease=3, beat=1), lease_for(clock, sink, lease=30, beat=10)
    for lease in (fast, slow):
        lease.start()
        scheduler.add(lease)
    for _ in range(10):
        clock.advance(1)
        scheduler.run_due(clock.now())
    assert (fast.heartbeats, slow.heartbeats) == (10, 1)


def test_lease_terms_take_the_job_type_over_the_request_and_keep_heartbeats_frequent() -> None:
    assert lease_terms(request(lease_seconds=3, heartbeat_seconds=1), None) == LeaseTerms(3, 1)
    typed = JobType("t", lambda ctx: None, lease_seconds=60, heartbeat_seconds=20)
    assert lease_terms(request(), typed) == LeaseTerms(60, 20)
    assert lease_terms(request(lease_seconds=10, heartbeat_seconds=10), None) == LeaseTerms(10, 5)


# -- tenant caps ----------------------------------------------------------------------------------
def test_a_tenant_at_its_cap_does_not_block_others() -> None:
    queue: TenantQueue[str] = TenantQueue(cap=2)
    for i in range(5):
        queue.push("big", f"big-{i}")
    queue.push("small", "small-0")
    started = [queue.pop(), queue.pop(), queue.pop()]
    assert started == [("big", "big-0"), ("small", "small-0"), ("big", "big-1")]
    assert queue.pop() is None  # big is at its cap, small has nothing waiting
    queue.release("big")
    assert queue.pop() == ("big", "big-2")
    assert queue.running("big") == 2 and len(queue) == 2


def test_tenants_are_served_round_robin() -> None:
    queue: TenantQueue[str] = TenantQueue(cap=100)
    for tenant in "abc":
        for i in range(3):
            queue.push(tenant, f"{tenant}{i}")
    order = [queue.pop()[1] for _ in range(9)]  # type: ignore[index]
    assert order == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]


def test_waiting_requests_of_revoked_partitions_are_dropped() -> None:
    queue: TenantQueue[tuple[int, int]] = TenantQueue(cap=1)
    for partition, offset in ((0, 1), (1, 1), (0, 2)):
        queue.push("t", (partition, offset))
    assert queue.drop(lambda item: item[0] == 0) == [(0, 1), (0, 2)]
    assert len(queue) == 1 and queue.pop() == ("t", (1, 1))


# -- offsets --------------------------------------------------------------------------------------
def test_the_commit_point_stays_below_every_unacknowledged_lease() -> None:
    offsets = OffsetTracker()
    offsets.assign(0)
    for offset in (10, 11, 12, 13):
        offsets.track(0, offset)
    offsets.done(0, 12)
    offsets.done(0, 13)
    assert offsets.committable() == {0: 10}
    offsets.committed(0, 10)
    assert offsets.committable() == {}
    offsets.done(0, 10)
    assert offsets.committable() == {0: 11}
    offsets.done(0, 11)
    assert offsets.committable() == {0: 14}
    offsets.committed(0, 14)
    offsets.revoke(0)
    offsets.done(0, 15)  # a late report for a partition we no longer own
    assert offsets.committable() == {}


# -- cancellations --------------------------------------------------------------------------------
def test_cancellations_are_remembered_within_a_bound_and_signal_running_attempts() -> None:
    cancels = CancelRegistry(capacity=3)
    signal = threading.Event()
    cancels.started("e1", signal)
    assert cancels.cancel("e1", "operator") == 1 and signal.is_set()
    assert cancels.reason("e1") == "operator"
    for eid in ("e2", "e3", "e4"):
        cancels.cancel(eid)
    assert not cancels.is_cancelled("e1") and cancels.is_cancelled("e4") and len(cancels) == 3
    late = threading.Event()
    cancels.started("e4", late)  # started after the cancel arrived: signalled at once
    assert late.is_set()
    cancels.finished("e4", late)
    assert cancels.cancel("e4") == 0


def test_a_cancel_naming_an_attempt_stops_it_and_earlier_ones_never_a_later_one() -> None:
    """A workflow stops the running attempt 1 of a step, then retries the step: attempt 2
    has the same execution id and must run (it was skipped as cancelled before)."""
    cancels = CancelRegistry()
    first, retry = threading.Event(), threading.Event()
    cancels.started("step", first, attempt=1)
    assert cancels.cancel("step", "workflow", attempt=1) == 1 and first.is_set()
    assert cancels.is_cancelled("step", 1) and not cancels.is_cancelled("step", 2)
    cancels.finished("step", first)
    cancels.started("step", retry, attempt=2)
    assert not retry.is_set()
    assert cancels.cancel("step", "workflow", attempt=1) == 0  # a repeat reaches no later one
    # A cancel of the whole execution (the SDK's, attempt null) reaches every attempt.
    assert cancels.cancel("step", "operator") == 1 and retry.is_set()
    assert cancels.is_cancelled("step", 7)


def test_a_cancel_record_needs_an_execution_id() -> None:
    record = cancel_record("exec-9", now_ms=5, job_id="j", reason="r", control_id="c")
    assert record == {"control_id": "c", "execution_id": "exec-9", "job_id": "j",
                      "kind": "cancel", "requested_at": 5, "reason": "r",
                      "attempt": None}  # fmt: skip
    with pytest.raises(InvalidInput):
        cancel_record(" ", now_ms=5)


# -- settings -------------------------------------------------------------------------------------
def test_concurrency_and_priorities_parse_with_clear_errors() -> None:
    assert parse_concurrency("4") == {"high": 4, "normal": 4, "low": 4}
    assert parse_concurrency("high=2,low=1") == {"high": 2, "normal": 8, "low": 1}
    for bad in ("x", "urgent=3", "0"):
        with pytest.raises(InvalidInput):
            parse_concurrency(bad)
    assert parse_priorities(["low", "high"]) == ("high", "low")
    assert parse_priorities("normal,low") == ("normal", "low")
    assert parse_priorities(None) == ("high", "normal", "low")
    with pytest.raises(InvalidInput):
        parse_priorities(["urgent"])


def test_flags_become_settings() -> None:
    parser = argparse.ArgumentParser()
    add_worker_arguments(parser)
    args = parser.parse_args(
        ["--instance", "w7", "--types", "noop", "sleep", "--priority", "high",
         "--concurrency", "high=3", "--module", "a.b", "--module", "c", "--tenant-cap", "2"]
    )  # fmt: skip
    settings = settings_from_args(args)
    assert settings.instance == "w7" and settings.worker_id.startswith("w7@")
    assert settings.types == ("noop", "sleep") and settings.priorities == ("high",)
    assert settings.concurrency["high"] == 3 and settings.modules == ("a.b", "c")
    assert settings.tenant_cap == 2
