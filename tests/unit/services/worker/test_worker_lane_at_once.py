"""A poll that can all start now as one inline batch skips the tenant queue (decision 0163),
and starts exactly what the queued dispatch would: cancelled and redelivered attempts
skipped with their records, every lease before any outcome, nothing committable before the
leases are acknowledged, and a tenant at its cap (slot attempts running) still waits."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import encode
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType
from tickwheel.services.worker.lane import PriorityLane

from .test_worker_batches import eventually
from .test_worker_lane import HeldSink, Message, builtins, make_lane
from .test_worker_lease import ListSink


class PollConsumer:
    """Hands out one poll's records, then nothing; takes commits."""

    def __init__(self) -> None:
        self.polls: list[list[Message]] = []

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        assert num_messages >= 1
        return self.polls.pop(0) if self.polls else []

    def poll(self, timeout: float) -> Message | None:
        return None

    def commit(self, offsets: Any = None, asynchronous: bool = True) -> None:
        pass


def messages(requests: list[dict[str, Any]], first_offset: int = 0) -> list[Message]:
    return [
        Message(encode("ExecutionRequest", req), 0, offset)
        for offset, req in enumerate(requests, start=first_offset)
    ]


def stepped(lane: PriorityLane, poll: list[Message]) -> None:
    consumer = PollConsumer()
    consumer.polls.append(poll)
    lane.consumer = consumer  # type: ignore[assignment]
    lane.step()


def test_a_poll_of_inline_requests_starts_at_once_as_the_queued_dispatch_would() -> None:
    requests = [request(execution_id=f"e{i}", job_id=f"j{i % 3}", tenant_id=f"t{i % 2}")
                for i in range(8)]  # fmt: skip
    results = []
    for at_once in (True, False):
        sink = HeldSink()
        lane = make_lane(sink, capacity=2, registry=builtins())
        lane.cancels.cancel("e3", "stop it")
        poll = messages(requests)
        if at_once:
            stepped(lane, poll)
            assert not lane.queue  # never queued
        else:
            lane._accept_all(poll)  # queued, then dispatched a request at a time
            lane._dispatch()
        kinds = sink.types()
        assert kinds.index("succeeded") > max(i for i, k in enumerate(kinds) if k == "leased")
        assert lane.offsets.committable(everything=True) == {0: 0}  # no lease acknowledged
        sink.acknowledge()
        assert lane.offsets.committable(everything=True) == {0: 8}
        per_job: dict[str, list[tuple[str, str]]] = {}
        for event in sink.events:
            per_job.setdefault(event["job_id"], []).append(
                (event["execution_id"], event["event_type"])
            )
        results.append((Counter((e["execution_id"], e["event_type"]) for e in sink.events),
                        per_job))  # fmt: skip
    assert results[0] == results[1]  # the same events, in the same order for each job
    events = results[0][0]
    assert events[("e3", "cancelled")] == 1 and ("e3", "leased") not in events
    assert all(events[(f"e{i}", "succeeded")] == 1 for i in range(8) if i != 3)


def test_a_redelivery_in_an_at_once_poll_waits_for_the_first_lease_and_is_not_run_again() -> None:
    sink = HeldSink()
    lane = make_lane(sink, capacity=2, registry=builtins())
    stepped(lane, messages([request(execution_id="once")]))
    stepped(lane, messages([request(execution_id="once"), request(execution_id="b")], 1))
    assert [(e["execution_id"], e["event_type"]) for e in sink.events] == [
        ("once", "leased"), ("once", "succeeded"), ("b", "leased"), ("b", "succeeded"),
    ]  # fmt: skip
    assert lane.offsets.committable(everything=True) == {0: 0}
    sink.acknowledge()
    assert lane.offsets.committable(everything=True) == {0: 3}


def test_a_tenant_at_its_cap_makes_the_poll_wait_in_the_queue() -> None:
    release = threading.Event()

    def slow(ctx: ExecutionContext) -> None:
        release.wait(10)

    registry = builtins().merged(HandlerRegistry([JobType("slow", slow)]))
    sink = ListSink()
    lane = make_lane(sink, capacity=2, registry=registry)
    lane.queue.cap = 1  # one running attempt per tenant
    stepped(lane, messages([request(execution_id="slow", job_type="slow", tenant_id="a")]))
    eventually(lambda: len(sink.events) == 1)
    stepped(lane, messages([request(execution_id="quick", tenant_id="a"),
                            request(execution_id="other", tenant_id="b")], 1))  # fmt: skip
    ran = {e["execution_id"] for e in sink.events}
    assert "quick" not in ran and "other" in ran  # a's request waits behind a's running one
    assert len(lane.queue) == 1
    release.set()
    eventually(lambda: sum(e["execution_id"] == "quick" for e in sink.events) == 2)
    lane.runner.shutdown()
