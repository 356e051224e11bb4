"""The worker's batch paths without Kafka: inline attempts record every lease of a batch
before any handler runs and classify outcomes as the slot threads do; `async def` handlers
run on an event loop with their lease, cancellation and run limit kept."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.clock import FakeClock
from tickwheel.jobtypes import builtin_registry
from tickwheel.sdk.worker import ExecutionContext, JobType, PermanentError
from tickwheel.services.worker.attempt import AllDelivered
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.coroutines import CoroutineRunner, is_async
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.inline import InlineAttempt, InlineBatch, runs_inline
from tickwheel.services.worker.ledger import LeaseLedger
from tickwheel.services.worker.offsets import OffsetTracker
from tickwheel.services.worker.publisher import _BatchReport
from tickwheel.services.worker.runner import OVERRUN_REASON

from .test_worker_lease import ListSink


def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_only_the_builtin_non_waiting_handlers_run_inline() -> None:
    builtins = builtin_registry()
    assert runs_inline(builtins.get("noop")) and runs_inline(builtins.get("fail"))
    assert not runs_inline(builtins.get("sleep")) and not runs_inline(builtins.get("http"))
    # A user's own type named like a built-in is judged by its handler, not its name.
    assert not runs_inline(JobType("noop", lambda ctx: time.sleep(0)))
    assert not runs_inline(None)


def test_an_inline_batch_records_every_lease_before_any_handler_runs() -> None:
    builtins = builtin_registry()
    sink = ListSink()
    acknowledged: list[str | None] = []
    batch = InlineBatch(sink=sink, clock=FakeClock(1_800_000_000.0), worker_id="w", priority="n")
    attempts = [
        InlineAttempt(request(execution_id=f"e{i}", job_type=name, payload=payload),
                      builtins.get(name))
        for i, (name, payload) in enumerate([
            ("noop", "{}"), ("fail", '{"mode": "permanent"}'), ("fail", '{"times": 0}'),
            ("noop", "[1]"),
        ])
    ]  # fmt: skip
    assert batch.run(attempts, acknowledged.append) == 4 and batch.started_count == 4
    assert sink.types()[:4] == ["leased"] * 4  # every lease before the first outcome
    outcomes = {e["execution_id"]: e for e in sink.events[4:]}
    assert acknowledged == [None]  # one report, once all four leases are acknowledged
    assert outcomes["e0"]["event_type"] == "succeeded"
    assert (outcomes["e1"]["event_type"], outcomes["e1"]["error_kind"]) == ("failed", "permanent")
    assert outcomes["e2"]["event_type"] == "succeeded"  # fails the first 0 attempts
    assert (outcomes["e3"]["event_type"], outcomes["e3"]["error_kind"]) == ("failed", "permanent")
    assert "must be a JSON object" in outcomes["e3"]["error"]


def test_a_redelivered_attempt_waits_for_the_first_lease_to_be_durable() -> None:
    offsets = OffsetTracker()
    fatal: list[str] = []
    ledger = LeaseLedger(offsets, fatal.append)
    offsets.assign(0)
    for offset in (5, 6):
        offsets.track(0, offset)
    assert ledger.take(("e", 1)) and not ledger.take(("e", 1))
    ledger.duplicate(("e", 1), 0, 6)
    assert offsets.committable() == {0: 5}  # neither is durable yet
    ledger.delivered(("e", 1), 0, 5)(None)
    assert offsets.committable() == {0: 7}
    ledger.delivered(("x", 1), 0, 9)("broker down")
    assert fatal == ["leased event of x not delivered: broker down"]


class AsyncHarness:
    def __init__(self, max_run_seconds: float = 3600) -> None:
        self.clock = FakeClock(1_800_000_000.0)
        self.sink = ListSink()
        self.heartbeats = HeartbeatScheduler(self.clock)
        self.cancels = CancelRegistry()
        self.fatal: list[str] = []
        self.done: list[str] = []
        self.futures: dict[str, Future[None]] = {}
        self.runner = CoroutineRunner(
            "test-loop", sink=self.sink, cancels=self.cancels, heartbeats=self.heartbeats,
            clock=self.clock, worker_id="w1", max_run_seconds=max_run_seconds,
            on_fatal=self.fatal.append,
        )  # fmt: skip

    def submit(self, job_type: JobType, **overrides: Any) -> str:
        req = request(job_type=job_type.name, **overrides)
        self.futures[req["execution_id"]] = self.runner.submit(
            req, job_type, on_leased=lambda _e: None,
            on_done=lambda: self.done.append(req["execution_id"]),
        )  # fmt: skip
        return str(req["execution_id"])

    def events_of(self, execution_id: str) -> list[dict[str, Any]]:
        return [e for e in self.sink.events if e["execution_id"] == execution_id]


def test_async_handlers_run_on_the_loop_and_their_failures_are_data() -> None:
    async def fetch(ctx: ExecutionContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"attempt": ctx.attempt}

    async def refuse(ctx: ExecutionContext) -> None:
        raise PermanentError("bad input")

    fetch_type, refuse_type = JobType("fetch", fetch), JobType("refuse", refuse)
    assert is_async(fetch_type) and not is_async(JobType("sync", lambda ctx: None))
    h = AsyncHarness()
    ok = h.submit(fetch_type, execution_id="ok", attempt=2)
    bad = h.submit(refuse_type, execution_id="bad")
    eventually(lambda: sorted(h.done) == ["bad", "ok"])
    leased, succeeded = h.events_of(ok)
    assert (leased["event_type"], succeeded["event_type"]) == ("leased", "succeeded")
    assert json.loads(succeeded["details"])["result"] == {"attempt": 2}
    assert [e["event_type"] for e in h.events_of(bad)] == ["leased", "failed"]
    assert h.events_of(bad)[1]["error_kind"] == "permanent" and h.fatal == []
    assert len(h.heartbeats) == 0
    h.runner.shutdown()


def test_an_async_handler_sees_its_cancellation_and_ends_cancelled() -> None:
    started = threading.Event()

    async def patient(ctx: ExecutionContext) -> None:
        started.set()
        while not ctx.cancelled:
            await asyncio.sleep(0.01)

    h = AsyncHarness()
    waiting = h.submit(JobType("patient", patient), execution_id="waiting")
    assert started.wait(5)
    eventually(lambda: len(h.heartbeats) == 1)  # heartbeated while it waits
    h.cancels.cancel("waiting", "operator")
    eventually(lambda: h.done == [waiting])
    kinds = [e["event_type"] for e in h.events_of(waiting)]
    assert kinds == ["leased", "cancelled"] and h.events_of(waiting)[1]["reason"] == "operator"
    h.runner.shutdown()


def test_an_async_handler_past_its_limit_is_failed_retryable_and_its_task_cancelled() -> None:
    stopped = threading.Event()

    async def hang(ctx: ExecutionContext) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.set()
            raise

    h = AsyncHarness()
    hung = h.submit(JobType("hang", hang, max_run_seconds=1), execution_id="hung")
    eventually(lambda: len(h.heartbeats) == 1)
    h.clock.advance(1.1)
    h.heartbeats.run_due(h.clock.now())
    eventually(lambda: h.done == [hung])
    leased, failed = h.events_of(hung)
    assert (failed["event_type"], failed["error_kind"]) == ("failed", "retryable")
    assert failed["reason"] == OVERRUN_REASON and leased["event_type"] == "leased"
    assert stopped.wait(5), "the task is cancelled, not left running"
    h.futures[hung].result(5)  # the attempt's own ending, after the cancel, adds no outcome
    assert [e["event_type"] for e in h.events_of(hung)] == ["leased", "failed"]
    assert h.done == [hung] and h.fatal == []
    h.runner.shutdown()


def test_a_batch_is_reported_durable_once_every_lease_is_and_never_after_a_failure() -> None:
    reports: list[str | None] = []
    each = AllDelivered(3, reports.append)
    each(None)
    each(None)
    assert reports == []  # two of three acknowledged: not yet
    each(None)
    assert reports == [None]
    failing = AllDelivered(3, reports.append)
    failing(None)
    failing("broker down")
    failing(None)
    failing("again")
    assert reports == [None, "broker down"]  # the failure once, and no success after it


def test_a_batchs_leases_release_its_offsets_and_the_redeliveries_held_behind_them() -> None:
    offsets = OffsetTracker()
    fatal: list[str] = []
    ledger = LeaseLedger(offsets, fatal.append)
    offsets.assign(0)
    offsets.track_all([(0, 10), (0, 11), (0, 12)])
    keys = [("a", 1), ("b", 1)]
    assert ledger.take_all([*keys, ("a", 1)]) == [True, True, False]
    ledger.duplicate(("b", 1), 0, 12)  # redelivered before its lease is durable
    report = ledger.delivered_all(keys, [(0, 10), (0, 11)])
    assert offsets.committable() == {0: 10}
    report(None)
    assert offsets.committable() == {0: 13} and fatal == []
    ledger.delivered_all([("c", 1)], [(0, 13)])("timed out")
    assert fatal == ["leased event of a batch of 1 not delivered: timed out"]


def test_an_empty_batch_is_reported_durable_at_once() -> None:
    sink = ListSink()
    reports: list[str | None] = []
    sink.publish_batch([], reports.append)
    assert reports == [None] and sink.events == []


class _Record:
    """What a delivery report's message is asked for."""

    def key(self) -> bytes:
        return b"job-1"


def test_the_publishers_batch_report_served_per_record_is_the_batch_counters() -> None:
    reports: list[str | None] = []
    each = _BatchReport(3, reports.append)
    each.delivered(None, _Record())
    each.delivered(None, _Record())
    assert reports == []  # two of three acknowledged: not yet
    each.delivered(None, _Record())
    assert reports == [None]
    failing = _BatchReport(3, reports.append)
    failing.delivered(None, _Record())
    failing.delivered("broker down", _Record())
    failing.delivered(None, _Record())
    failing.delivered("again", _Record())
    assert reports == [None, "broker down"]  # the failure once, and no success after it
