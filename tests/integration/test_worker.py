"""A real worker process against the real broker, checked from the events it records.

Each test publishes `ExecutionRequest`s straight to `executions.<priority>` (standing in for
the timer), runs `python -m tickwheel.services.worker`, and reads `executions.events` back.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.cli import executions as executions_cli
from tickwheel.sdk.executions import cancel as request_cancel
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def now_ms() -> int:
    return int(time.time() * 1000)


def make_request(job_type: str, payload: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    execution_id = str(uuid.uuid4())
    at = now_ms()
    request = {
        "execution_id": execution_id, "job_id": f"job-{execution_id[:8]}", "job_version": 1,
        "job_type": job_type, "tenant_id": "acme", "priority": "normal", "attempt": 1,
        "scheduled_time": at, "fire_time": at, "period_start": at, "period_end": None,
        "payload": json.dumps(payload), "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": at, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip
    request.update(overrides)
    return request


def publish(bootstrap: str, requests: list[dict[str, Any]]) -> None:
    producer = EventProducer(bootstrap)
    for request in requests:
        topic = topic_name(f"executions.{request['priority']}")
        producer.send(topic, request["job_id"], encode("ExecutionRequest", request))
    producer.flush()


def events(bootstrap: str) -> dict[str, list[dict[str, Any]]]:
    """Every recorded event, grouped by execution id, in log order."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in read_to_end(topic_name("executions.events"), None, bootstrap, timeout=20):
        assert record.value is not None
        event = decode(record.value, "ExecutionEvent")[1]
        assert record.key == event["job_id"]  # keyed by job: co-partitioned with the timer
        grouped[event["execution_id"]].append(event)
    return grouped


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def finished(
    bootstrap: str, ids: list[str], outcomes: tuple[str, ...] = ("succeeded", "failed", "cancelled")
) -> Any:
    def check() -> dict[str, list[dict[str, Any]]] | None:
        grouped = events(bootstrap)
        if all(any(e["event_type"] in outcomes for e in grouped.get(i, [])) for i in ids):
            return grouped
        return None

    return check


def types_of(evts: list[dict[str, Any]]) -> list[str]:
    return [e["event_type"] for e in evts]


def test_each_attempt_is_leased_then_reports_its_outcome(kafka_bootstrap: str, worker: Any) -> None:
    noops = [make_request("noop", {}) for _ in range(5)]
    permanent = make_request("fail", {"mode": "permanent"}, attempt=2)
    retryable = make_request("fail", {"mode": "retryable", "times": 3})
    unknown = make_request("no-such-type", {})
    # The same attempt delivered twice (as after a rebalance), then a request behind it on the
    # same partition: once that one is done, the duplicate has been seen.
    sentinel = make_request("noop", {}, job_id=noops[0]["job_id"])
    requests = [*noops, permanent, retryable, unknown]
    publish(kafka_bootstrap, [*requests, noops[0], sentinel])
    requests.append(sentinel)
    process = worker("--shutdown-grace", "5")
    grouped = wait_for(
        finished(kafka_bootstrap, [r["execution_id"] for r in requests]), 30, "outcomes"
    )

    for request in [*noops, sentinel]:
        evts = grouped[request["execution_id"]]
        assert types_of(evts) == ["leased", "succeeded"]
        leased, succeeded = evts
        assert leased["attempt"] == succeeded["attempt"] == 1
        assert leased["worker_id"] == succeeded["worker_id"] and leased["worker_id"].startswith(
            "w0@"
        )
        assert leased["lease_deadline"] - leased["event_time"] == 30_000
        assert (leased["scheduled_time"], leased["fire_time"]) == (
            request["scheduled_time"],
            request["fire_time"],
        )
        assert (leased["job_id"], leased["job_type"], leased["tenant_id"]) == (
            request["job_id"],
            "noop",
            "acme",
        )
        assert leased["event_id"] != succeeded["event_id"]

    evts = grouped[permanent["execution_id"]]
    assert types_of(evts) == ["leased", "failed"]
    assert evts[1]["error_kind"] == "permanent" and evts[1]["attempt"] == 2
    assert "fails on purpose" in evts[1]["error"]

    evts = grouped[retryable["execution_id"]]
    assert types_of(evts) == ["leased", "failed"] and evts[1]["error_kind"] == "retryable"

    # A type this worker lacks may be handled by a peer (a rolling deploy): retryable.
    evts = grouped[unknown["execution_id"]]
    assert types_of(evts) == ["leased", "failed"] and evts[1]["error_kind"] == "retryable"
    assert evts[1]["reason"] == "no_handler"
    assert evts[1]["error"].startswith(
        "unknown job type 'no-such-type'; this worker handles: fail, http, noop, sleep"
    )

    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 0


def test_a_long_job_heartbeats_with_increasing_deadlines(kafka_bootstrap: str, worker: Any) -> None:
    request = make_request("sleep", {"seconds": 4.5}, lease_seconds=3, heartbeat_seconds=1)
    publish(kafka_bootstrap, [request])
    worker()
    evts = wait_for(finished(kafka_bootstrap, [request["execution_id"]]), 30, "the sleep")[
        request["execution_id"]
    ]
    kinds = types_of(evts)
    assert kinds[0] == "leased" and kinds[-1] == "succeeded"
    beats = [e for e in evts if e["event_type"] == "heartbeat"]
    assert len(beats) >= 3, kinds
    deadlines = [evts[0]["lease_deadline"]] + [b["lease_deadline"] for b in beats]
    assert deadlines == sorted(deadlines) and len(set(deadlines)) == len(deadlines)
    # Never silent for longer than the lease: each event lands before the previous deadline.
    for earlier, later in zip([evts[0], *beats], [*beats, evts[-1]], strict=True):
        assert later["event_time"] < earlier["lease_deadline"]
    assert all(e["attempt"] == 1 for e in evts)


def test_cancel_a_running_and_a_queued_execution(kafka_bootstrap: str, worker: Any) -> None:
    running = make_request("sleep", {"seconds": 30}, lease_seconds=3, heartbeat_seconds=1)
    queued = make_request("sleep", {"seconds": 30})
    publish(kafka_bootstrap, [running])
    worker("--concurrency", "normal=1")
    wait_for(lambda: events(kafka_bootstrap).get(running["execution_id"]), 20, "the first lease")
    publish(kafka_bootstrap, [queued])
    time.sleep(1.0)  # the second request reaches the worker and waits for the one slot
    parser = argparse.ArgumentParser()
    executions_cli.register(parser.add_subparsers())
    for request in (queued, running):
        args = parser.parse_args(
            ["executions", "cancel", request["execution_id"], "--reason", "test"]
        )
        assert args.handler(args) == 0
    grouped = wait_for(
        finished(kafka_bootstrap, [running["execution_id"], queued["execution_id"]]),
        20,
        "cancellations",
    )

    evts = grouped[running["execution_id"]]
    assert types_of(evts)[0] == "leased" and types_of(evts)[-1] == "cancelled"
    assert evts[-1]["reason"] == "test" and evts[-1]["attempt"] == 1
    assert evts[-1]["event_time"] - evts[0]["event_time"] < 15_000  # not the whole 30 s

    evts = grouped[queued["execution_id"]]
    assert types_of(evts) == ["cancelled"]  # it never started: no lease
    assert json.loads(evts[0]["details"]) == {"started": False}


def test_high_priority_starts_promptly_while_the_low_pool_is_saturated(
    kafka_bootstrap: str, worker: Any
) -> None:
    flood = [make_request("sleep", {"seconds": 40}, priority="low") for _ in range(8)]
    publish(kafka_bootstrap, flood)
    worker("--concurrency", "2", "--shutdown-grace", "0")
    flood_ids = {r["execution_id"] for r in flood}

    def low_running() -> int:
        return sum(1 for eid, evts in events(kafka_bootstrap).items() if eid in flood_ids and evts)

    wait_for(lambda: low_running() == 2, 20, "the low pool to fill")
    urgent = make_request("noop", {}, priority="high")
    publish(kafka_bootstrap, [urgent])
    grouped = wait_for(
        finished(kafka_bootstrap, [urgent["execution_id"]]), 15, "the high-priority run"
    )
    leased = grouped[urgent["execution_id"]][0]
    assert leased["event_type"] == "leased"
    assert leased["event_time"] - urgent["requested_at"] < 3000
    assert low_running() == 2  # the low pool is still full; the high one was not behind it


def test_a_tenant_at_its_cap_does_not_block_others(kafka_bootstrap: str, worker: Any) -> None:
    big = [make_request("sleep", {"seconds": 40}, tenant_id="big") for _ in range(4)]
    small = make_request("noop", {}, tenant_id="small")
    publish(kafka_bootstrap, [*big, small])
    worker("--concurrency", "normal=3", "--tenant-cap", "1", "--shutdown-grace", "0")
    grouped = wait_for(finished(kafka_bootstrap, [small["execution_id"]]), 20, "the small tenant")
    time.sleep(1.0)
    grouped = events(kafka_bootstrap)
    started_big = [r for r in big if grouped.get(r["execution_id"])]
    assert len(started_big) == 1  # the cap, though two slots are free
    assert types_of(grouped[small["execution_id"]]) == ["leased", "succeeded"]


def test_a_corrupt_request_is_dead_lettered_and_the_worker_goes_on(
    kafka_bootstrap: str, worker: Any
) -> None:
    before = make_request("noop", {})
    after = make_request("noop", {})
    corrupt_key = before["job_id"]  # same key: same partition, between the two good ones
    valid = encode("ExecutionRequest", after)
    producer = EventProducer(kafka_bootstrap)
    topic = topic_name("executions.normal")
    producer.send(topic, before["job_id"], encode("ExecutionRequest", before))
    producer.send(topic, corrupt_key, b"not avro at all")
    producer.send(topic, corrupt_key, valid[: len(valid) // 2])
    producer.send(
        topic, corrupt_key, encode("ExecutionEvent", {**make_event(), "job_id": corrupt_key})
    )
    producer.send(topic, after["job_id"], valid)
    producer.flush()
    corrupt = [
        (r.partition, r.offset)
        for r in read_to_end(topic, None, kafka_bootstrap)
        if r.key == corrupt_key
    ][1:]
    assert len(corrupt) == 3

    worker()
    wait_for(
        finished(kafka_bootstrap, [before["execution_id"], after["execution_id"]]),
        30,
        "the good requests",
    )
    letters = wait_for(
        lambda: [
            decode(r.value or b"", "DeadLetter")[1]
            for r in read_to_end(topic_name("executions.dlq"), None, kafka_bootstrap)
        ],
        10,
        "dead letters",
    )
    assert sorted((d["source_partition"], d["source_offset"]) for d in letters) == sorted(corrupt)
    for letter in letters:
        assert letter["source_topic"] == topic and letter["reason"].startswith("undecodable")
        assert letter["job_id"] == corrupt_key and letter["raw_value"]
    reasons = sorted(d["reason"] for d in letters)
    assert any("expected ExecutionRequest got ExecutionEvent" in r for r in reasons), reasons


def make_event() -> dict[str, Any]:
    return {
        "event_id": "x", "event_time": 0, "event_type": "requested", "job_id": "j", "job_type": "noop",
        "tenant_id": "t", "execution_id": "e", "attempt": 1, "scheduled_time": 0,
    }  # fmt: skip


def test_a_cancel_sent_before_the_worker_started_is_honoured(
    kafka_bootstrap: str, worker: Any
) -> None:
    cancelled = make_request("sleep", {"seconds": 30})
    other = make_request("noop", {})
    request_cancel(cancelled["execution_id"], reason="before start")
    publish(kafka_bootstrap, [cancelled, other])
    worker()  # reads back a day of executions.control before it takes any request
    grouped = wait_for(
        finished(kafka_bootstrap, [cancelled["execution_id"], other["execution_id"]]), 20, "both"
    )
    assert types_of(grouped[cancelled["execution_id"]]) == ["cancelled"]
    assert grouped[cancelled["execution_id"]][0]["reason"] == "before start"
    assert types_of(grouped[other["execution_id"]]) == ["leased", "succeeded"]


def test_an_attempt_past_its_max_run_time_fails_retryable_and_frees_its_slot(
    kafka_bootstrap: str, worker: Any
) -> None:
    # One slot: the request behind the overrunning one runs only once that slot is given back.
    slow = make_request("sleep", {"seconds": 600}, max_run_seconds=2, lease_seconds=3,
                        heartbeat_seconds=1)  # fmt: skip
    behind = make_request("noop", {})
    publish(kafka_bootstrap, [slow, behind])
    worker("--priority", "normal", "--concurrency", "1", "--max-run-seconds", "600")
    grouped = wait_for(
        finished(kafka_bootstrap, [slow["execution_id"], behind["execution_id"]]), 30, "outcomes"
    )
    evts = grouped[slow["execution_id"]]
    kinds = types_of(evts)
    assert kinds[0] == "leased" and kinds[-1] == "failed", kinds
    assert kinds.count("failed") == 1 and "succeeded" not in kinds and "cancelled" not in kinds
    failed = evts[-1]
    assert (failed["error_kind"], failed["reason"]) == ("retryable", "max_run_time_exceeded")
    assert "exceeded its max run time of 2s" in failed["error"]
    assert 2000 <= failed["event_time"] - evts[0]["event_time"] < 4000
    assert types_of(grouped[behind["execution_id"]]) == ["leased", "succeeded"]
    time.sleep(2)  # no heartbeat follows the outcome, even though its lease was 3 s
    assert types_of(events(kafka_bootstrap)[slow["execution_id"]]) == kinds


def test_a_request_runs_only_on_the_workers_of_its_queue(kafka_bootstrap: str, worker: Any) -> None:
    """Named task queues (decision 0053): workers with different types in different queues do
    not take, or dead-letter, each other's executions."""
    on_default = [make_request("noop", {}) for _ in range(4)]
    on_batch = [make_request("fail", {"mode": "retryable", "times": 0}, queue="batch")
                for _ in range(4)]  # fmt: skip
    publish(kafka_bootstrap, [*on_default, *on_batch])
    worker("--types", "noop", "--shutdown-grace", "5")  # the default queue, without `fail`
    worker("--queue", "batch", "--types", "fail", "--shutdown-grace", "5")
    ids = [r["execution_id"] for r in [*on_default, *on_batch]]
    grouped = wait_for(finished(kafka_bootstrap, ids), 40, "outcomes")
    for request in on_default:
        assert types_of(grouped[request["execution_id"]]) == ["leased", "succeeded"]
        assert grouped[request["execution_id"]][0]["worker_id"].startswith("w0@")
    for request in on_batch:
        evts = grouped[request["execution_id"]]
        assert types_of(evts) == ["leased", "succeeded"], evts  # never handed back: no_handler
        assert evts[0]["worker_id"].startswith("w1@")
