"""Attempts on a lane's slots, driven by a fake clock: the maximum run time frees the slot of a
handler that never returns, and fails its attempt as retryable."""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType
from tickwheel.services.worker.attempt import run_limit
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.runner import NO_HANDLER_REASON, OVERRUN_REASON, AttemptRunner
from tickwheel.services.worker.settings import (
    DEFAULT_MAX_RUN_SECONDS,
    add_worker_arguments,
    settings_from_args,
)

from .test_worker_lease import ListSink


def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class Harness:
    def __init__(self, registry: HandlerRegistry, capacity: int = 1, default: float = 3600):
        self.clock = FakeClock(1_800_000_000.0)
        self.sink = ListSink()
        self.heartbeats = HeartbeatScheduler(self.clock)
        self.cancels = CancelRegistry()
        self.fatal: list[str] = []
        self.done: list[str] = []
        self.runner = AttemptRunner(
            capacity,
            "test",
            registry=registry,
            sink=self.sink,
            cancels=self.cancels,
            heartbeats=self.heartbeats,
            clock=self.clock,
            worker_id="w1",
            max_run_seconds=default,
            on_fatal=self.fatal.append,
        )

    def submit(self, **overrides: Any) -> str:
        req = request(**overrides)
        self.runner.submit(
            req,
            on_leased=lambda _error: None,
            on_done=lambda: self.done.append(req["execution_id"]),
        )
        return str(req["execution_id"])

    def events_of(self, execution_id: str) -> list[dict[str, Any]]:
        return [e for e in self.sink.events if e["execution_id"] == execution_id]


def test_a_hung_handler_is_failed_as_retryable_at_its_limit_and_its_slot_comes_back() -> None:
    never = threading.Event()  # never set while the limit is checked: the handler hangs
    signals: list[threading.Event] = []

    def hang(ctx: ExecutionContext) -> str:
        signals.append(ctx.cancel_event)
        never.wait()  # ignores its cancellation signal, as a stuck read would
        return "finished very late"

    registry = HandlerRegistry([JobType("hang", hang, max_run_seconds=1), JobType("noop", noop)])
    h = Harness(registry, capacity=1)
    hung = h.submit(execution_id="hung", job_type="hang")
    eventually(lambda: len(h.heartbeats) == 1)

    h.clock.advance(0.9)
    h.heartbeats.run_due(h.clock.now())
    assert [e["event_type"] for e in h.events_of(hung)] == ["leased"] and h.done == []

    h.clock.advance(0.2)  # past the one-second limit
    h.heartbeats.run_due(h.clock.now())
    leased, failed = h.events_of(hung)
    assert (failed["event_type"], failed["error_kind"]) == ("failed", "retryable")
    assert failed["reason"] == OVERRUN_REASON
    assert "exceeded its max run time of 1s" in failed["error"]
    assert json.loads(failed["details"])["max_run_seconds"] == 1
    assert failed["attempt"] == leased["attempt"] == 1
    assert h.done == ["hung"], "the slot is freed although the handler never returned"
    assert signals[0].is_set(), "the handler is told to stop"
    assert len(h.heartbeats) == 0 and h.runner.abandoned == 1

    # No heartbeat for it ever again: the lease lapses at the timer, which agrees it failed.
    h.clock.advance(60)
    h.heartbeats.run_due(h.clock.now())
    assert [e["event_type"] for e in h.events_of(hung)] == ["leased", "failed"]

    # The pool's one slot runs other work while the hung thread still hangs.
    other = h.submit(execution_id="other", job_type="noop")
    eventually(lambda: "other" in h.done)
    assert [e["event_type"] for e in h.events_of(other)] == ["leased", "succeeded"]

    # If the handler ever returns, its late ending changes nothing and its thread leaves.
    never.set()
    eventually(lambda: h.runner.abandoned == 0)
    assert [e["event_type"] for e in h.events_of(hung)] == ["leased", "failed"]
    assert h.done == ["hung", "other"] and h.fatal == []
    h.runner.shutdown()


def noop(ctx: ExecutionContext) -> None:
    return None


def test_a_handler_that_ends_in_time_is_not_touched_by_its_limit() -> None:
    h = Harness(HandlerRegistry([JobType("noop", noop)]), default=1)
    done = h.submit(job_type="noop")
    eventually(lambda: h.done == [done])
    h.clock.advance(5)
    h.heartbeats.run_due(h.clock.now())
    assert [e["event_type"] for e in h.events_of(done)] == ["leased", "succeeded"]
    assert h.runner.abandoned == 0 and h.runner.overrun_count == 0
    h.runner.shutdown()


def test_the_most_specific_limit_wins() -> None:
    typed = JobType("t", noop, max_run_seconds=120)
    untyped = JobType("u", noop)
    assert run_limit(request(max_run_seconds=30), typed, 3600) == 30  # the job's own
    assert run_limit(request(), typed, 3600) == 120  # the handler's
    assert run_limit(request(max_run_seconds=None), untyped, 3600) == 3600  # the worker's
    assert run_limit(request(), None, 900) == 900
    assert run_limit(request(max_run_seconds=0), typed, 3600) == 120  # 0 or less: unset
    assert run_limit(request(max_run_seconds=-5), None, 900) == 900


def test_a_handler_limit_must_be_a_whole_second() -> None:
    with pytest.raises(InvalidInput, match="max_run_seconds"):
        JobType("t", noop, max_run_seconds=0)
    registry = HandlerRegistry()
    registry.job("slow", max_run_seconds=7200)(noop)
    assert registry.get("slow").max_run_seconds == 7200


def test_the_worker_limit_has_a_default_and_refuses_no_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def settings(*argv: str) -> Any:
        parser = argparse.ArgumentParser()
        add_worker_arguments(parser)
        return settings_from_args(parser.parse_args(list(argv)))

    monkeypatch.delenv("TICKWHEEL_WORKER_MAX_RUN_SECONDS", raising=False)
    assert settings().max_run_seconds == DEFAULT_MAX_RUN_SECONDS > 0
    assert settings("--max-run-seconds", "90").max_run_seconds == 90
    monkeypatch.setenv("TICKWHEEL_WORKER_MAX_RUN_SECONDS", "45")
    assert settings().max_run_seconds == 45
    for bad in ("0", "-1", "inf"):
        with pytest.raises(InvalidInput, match="--max-run-seconds"):
            settings("--max-run-seconds", bad)


def test_a_type_this_worker_lacks_is_retryable_not_dead_lettered() -> None:
    # A rolling deploy that adds a type, or a peer started with other --types: a worker with
    # the handler may get the retry; this one must not dead-letter it.
    h = Harness(HandlerRegistry([JobType("noop", noop)]))
    missing = h.submit(execution_id="new-type", job_type="added-in-next-release")
    eventually(lambda: h.done == [missing])
    leased, failed = h.events_of(missing)
    assert (leased["event_type"], failed["event_type"]) == ("leased", "failed")
    assert (failed["error_kind"], failed["reason"]) == ("retryable", NO_HANDLER_REASON)
    assert failed["error"].startswith(
        "unknown job type 'added-in-next-release'; this worker handles: noop (worker w1)"
    )
    assert json.loads(failed["details"])["handles"] == ["noop"]
    h.runner.shutdown()
