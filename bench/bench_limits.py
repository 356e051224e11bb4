"""The raw client's limits on this machine: what one Python process moves through
confluent-kafka directly, against the benchmark's own broker, with no tickwheel code between.

- transactional produce: request-sized records (an encoded no-op `ExecutionRequest`), up to
  5,000 per partition per transaction (the timer's emit path, without the timer);
- consume → produce → commit: consume a request, produce two event-sized records (as a worker
  writes `leased` and `succeeded`), commit the consumed offsets asynchronously after each
  batch (the worker's path, without the worker).

Every other benchmark imports `measure_limits` and prints its own figure beside the limit
measured on the same broker in the same run, as a ratio: the machine and its load change from
run to run, the ratio says how close to the client each tickwheel path is.

Run alone: `.venv/bin/python bench/bench_limits.py [--records N]` (writes reports/limits.md).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench._common import Report, bench_broker, replication  # noqa: E402
from tickwheel.adapters.avro import encode  # noqa: E402
from tickwheel.services.worker.events import execution_event  # noqa: E402

PARTITIONS = 6  # the co-partitioned topics' count in topology/topics.toml
PER_PARTITION_PER_TRANSACTION = 5_000
DEADLINE_S = 120.0  # each measurement gives up past this (a stuck broker, not a slow one)


@dataclass(frozen=True)
class Limits:
    """Records per second one process moves through the raw client, on one broker."""

    produce_per_s: float  # transactional produce of request-sized records
    consume_produce_per_s: float  # consume one, produce two, commit async per batch
    records: int
    request_bytes: int
    event_bytes: int

    def ratio_produce(self, figure: float) -> str:
        return f"{figure / self.produce_per_s:.3f}" if self.produce_per_s else "n/a"

    def ratio_loop(self, figure: float) -> str:
        return f"{figure / self.consume_produce_per_s:.4f}" if self.consume_produce_per_s else "n/a"

    def describe(self) -> str:
        return (
            f"raw confluent-kafka on this broker: transactional produce "
            f"{self.produce_per_s:,.0f} records/s ({self.request_bytes}-byte records); "
            f"consume → produce two → commit async {self.consume_produce_per_s:,.0f} records/s "
            f"({self.records:,} records each)"
        )


def sample_records() -> tuple[bytes, bytes]:
    """A no-op request as the timer writes it and its `leased` event as a worker writes it
    (their sizes are what matter here)."""
    at = 1_764_590_400_000
    request = {
        "execution_id": str(uuid.UUID(int=1)), "job_id": "bench-job-000123", "job_version": 1,
        "job_type": "noop", "tenant_id": "tenant-1", "priority": "normal", "attempt": 1,
        "scheduled_time": at, "fire_time": at, "period_start": at, "period_end": None,
        "payload": "{}", "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": at, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip
    event = execution_event(
        request, "leased", worker_id="limits", event_time_ms=at, unique="1",
        lease_deadline_ms=at + 30_000,
    )  # fmt: skip
    return encode("ExecutionRequest", request), encode("ExecutionEvent", event)


def _create(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # As many copies as tickwheel's topics on this broker (`bench_broker`): the raw figure of
    # a replicated cluster pays for its replication too.
    copies, in_sync = replication()
    config = {"min.insync.replicas": str(in_sync)}
    futures = admin.create_topics([NewTopic(t, PARTITIONS, copies, config=config) for t in topics])
    for future in futures.values():
        future.result(30)
    # Metadata lags creation under load: wait (bounded) until every partition has a leader.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=5).topics
        if all(t in listed and len(listed[t].partitions) == PARTITIONS for t in topics):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topics {topics} not visible after 30 s")


def _producer_config(bootstrap: str, **extra: object) -> dict[str, object]:
    # The settings tickwheel's producers use (adapters/kafka/config.py), so the limit is the
    # client's under the same durability: idempotent, acks=all, lz4.
    return {
        "bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
        "enable.idempotence": True, "acks": "all", "linger.ms": 5, "compression.type": "lz4",
        **extra,
    }  # fmt: skip


def transactional_produce(bootstrap: str, topic: str, records: int, value: bytes) -> float:
    """Records/s: `records` request-sized records, in transactions of up to 5,000 per
    partition, each committed before the next begins."""
    producer = Producer(_producer_config(
        bootstrap, **{"transactional.id": f"limits-{uuid.uuid4()}", "batch.size": 1_000_000,
                      "queue.buffering.max.messages": 1_000_000}
    ))  # fmt: skip
    producer.init_transactions(30)
    per_transaction = PER_PARTITION_PER_TRANSACTION * PARTITIONS
    started = time.perf_counter()
    sent = 0
    while sent < records:
        producer.begin_transaction()
        batch = min(per_transaction, records - sent)
        for i in range(sent, sent + batch):
            while True:
                try:
                    producer.produce(topic, value, partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.commit_transaction(DEADLINE_S)
        sent += batch
        if time.perf_counter() - started > DEADLINE_S:
            break
    return sent / (time.perf_counter() - started)


def _fill(bootstrap: str, topic: str, records: int, value: bytes) -> None:
    producer = Producer(_producer_config(bootstrap, **{"linger.ms": 50}))
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=f"job-{i % 997}".encode())
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(DEADLINE_S):
        raise TimeoutError(f"filling {topic} did not finish in {DEADLINE_S:g} s")


def consume_produce_commit(
    bootstrap: str, source: str, target: str, records: int, event: bytes
) -> float:
    """Records/s: consume `records` requests in batches; per request produce two event-sized
    records keyed like the request; commit the batch's offsets asynchronously; the clock
    stops once every produced record is acknowledged."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"limits-{uuid.uuid4()}",
        "isolation.level": "read_committed", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "enable.partition.eof": False,
    })  # fmt: skip
    producer = Producer(_producer_config(bootstrap, **{"batch.size": 1_000_000}))
    consumer.subscribe([source])
    seen = 0
    started: float | None = None
    deadline = time.monotonic() + DEADLINE_S
    while seen < records and time.monotonic() < deadline:
        batch = consumer.consume(1000, 0.5)
        if not batch:
            continue
        started = started or time.perf_counter()
        offsets: dict[int, int] = {}
        for message in batch:
            if message.error():
                continue
            key = message.key()
            for _ in range(2):
                while True:
                    try:
                        producer.produce(target, event, key=key)
                        break
                    except BufferError:
                        producer.poll(0.01)
            offsets[message.partition()] = message.offset() + 1
            seen += 1
        producer.poll(0)
        consumer.commit(
            offsets=[TopicPartition(source, p, o) for p, o in offsets.items()], asynchronous=True
        )
    producer.flush(DEADLINE_S)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    return seen / elapsed if elapsed else float("nan")


def measure_limits(bootstrap: str, records: int = 200_000) -> Limits:
    """Both raw figures on `bootstrap`, in topics of their own (about 5 to 15 s on this machine)."""
    run = uuid.uuid4().hex[:8]
    produced, requests, events = (f"limits-{run}-{n}" for n in ("produce", "requests", "events"))
    _create(bootstrap, produced, requests, events)
    request, event = sample_records()
    produce = transactional_produce(bootstrap, produced, records, request)
    _fill(bootstrap, requests, records, request)
    loop = consume_produce_commit(bootstrap, requests, events, records, event)
    return Limits(produce, loop, records, len(request), len(event))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    report = Report("Raw client limits (confluent-kafka, one Python process)")
    with bench_broker() as broker:
        limits = measure_limits(broker.bootstrap, args.records)
    report.add(f"- transactional produce, {limits.request_bytes}-byte request records, "
               f"{PER_PARTITION_PER_TRANSACTION:,} per partition per transaction: "
               f"**{limits.produce_per_s:,.0f} records/s**")  # fmt: skip
    report.add(f"- consume a request → produce two {limits.event_bytes}-byte events → commit "
               f"async per batch: **{limits.consume_produce_per_s:,.0f} requests/s**")  # fmt: skip
    report.add("")
    report.add("The other reports print their figures beside these, measured on their own "
               "broker in the same run, as ratios.")  # fmt: skip
    report.write("limits.md")


if __name__ == "__main__":
    main()
