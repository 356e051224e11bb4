"""Benchmark of the history sink: sustained events per second into chDB, and the delay from
an outcome event being produced to its visibility in a query.

Against a real broker (`KAFKA_BOOTSTRAP_SERVERS`, or a throwaway local Kafka started here)
and a fresh embedded chDB directory, under a fresh topic prefix:

0. insert: rows of `execution_events` built as the sink builds them, inserted straight into
   the store in batches of 10,000 (the adapter's insert path alone, no Kafka);
1. throughput: N `ExecutionEvent`s are produced to executions.events first; then the sink
   (the service's loop: decode, batch, insert with a dedup token, commit) drains them. The rate
   is taken from the end of the first batch (after the group join) to the last row.
2. visibility: with the sink running and caught up, one `succeeded` event at a time is
   produced and the store is polled (every 5 ms, `SELECT ... WHERE event_id = ...`) until it
   answers; produce → visible, over a number of samples.

Figures, never pass/fail. Prints and writes bench/reports/history.md.
Run: `.venv/bin/python bench/bench_history.py [--events N] [--samples N] [--batch-ms MS]`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.admin import apply_topology
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.history.rows import Source, execution_event_row
from tickwheel.services.history.settings import DEFAULT_MAX_BATCH
from tickwheel.services.history.sink import HistorySink
from tickwheel.stack.broker import BrokerConfig, LocalKafka, free_port
from tickwheel.topology import topic_name

REPORT = Path(__file__).parent / "reports" / "history.md"
BASE_MS = 4_076_000_000_000  # 2099: no retention expires it


def event(n: int, kind: str = "succeeded", at: int | None = None) -> dict[str, Any]:
    execution = f"bench-exec-{n}"
    return {
        "event_id": f"{kind}:{execution}:1:bench-worker:{n}", "event_time": at or BASE_MS + n,
        "event_type": kind, "job_id": f"bench-job-{n % 500}", "job_type": "noop",
        "tenant_id": f"tenant-{n % 7}", "execution_id": execution, "attempt": 1,
        "scheduled_time": BASE_MS + n - 1000, "fire_time": BASE_MS + n - 900,
        "worker_id": "bench-worker", "lease_deadline": None, "error": None, "error_kind": None,
        "reason": None, "details": None,
    }  # fmt: skip


def make_sink(store: ChdbHistoryStore, bootstrap: str, batch_ms: int) -> HistorySink:
    consumer = Consumer(
        consumer_config(
            f"bench-history-{uuid.uuid4().hex[:8]}",
            bootstrap,
            **{"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000},
        )
    )
    sink = HistorySink(
        store,
        consumer,
        DeadLetterWriter(bootstrap),
        max_batch=DEFAULT_MAX_BATCH,
        max_wait_s=batch_ms / 1000,
    )
    sink.subscribe()
    return sink


def insert_rate(store: ChdbHistoryStore, batch_rows: int, batches: int) -> dict[str, float]:
    """Rows/s of the store's insert alone, with rows as the sink builds them."""
    elapsed = 0.0
    for b in range(batches):
        base = 50_000_000 + b * batch_rows
        rows = [
            execution_event_row(event(base + i), Source("bench", 0, base + i, 0))
            for i in range(batch_rows)
        ]
        started = time.perf_counter()
        store.insert("execution_events", rows, dedup_token=f"bench-insert-{b}")
        elapsed += time.perf_counter() - started
    return {
        "rows": batch_rows * batches,
        "batch_rows": batch_rows,
        "per_s": batch_rows * batches / elapsed,
    }


def throughput(
    store: ChdbHistoryStore, bootstrap: str, events: int, batch_ms: int
) -> dict[str, float]:
    producer = EventProducer(bootstrap)
    topic = topic_name("executions.events")
    started = time.perf_counter()
    for n in range(events):
        record = event(n, "leased" if n % 2 else "succeeded")
        producer.send(topic, record["job_id"], encode("ExecutionEvent", record))
    producer.flush()
    produced_s = time.perf_counter() - started
    sink = make_sink(store, bootstrap, batch_ms)
    joined = time.perf_counter()
    first_rows, first_done = 0, 0.0
    while sink.stats.rows < events:
        sink.step()
        if not first_rows and sink.stats.rows:
            first_rows, first_done = sink.stats.rows, time.perf_counter()
    done = time.perf_counter()
    sink.consumer.close()
    counted = store.query(
        "SELECT uniqExact(event_id) FROM execution_events WHERE source_topic = {t:String}",
        {"t": topic},
    ).scalar()
    assert counted == events, counted
    return {
        "events": events,
        "produce_s": produced_s,
        "wall_s": done - joined,
        "steady_rate": (events - first_rows) / (done - first_done) if done > first_done else 0.0,
        "batches": sink.stats.batches,
    }


def visibility(
    store: ChdbHistoryStore, bootstrap: str, samples: int, batch_ms: int, base: int
) -> list[float]:
    sink = make_sink(store, bootstrap, batch_ms)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            sink.step()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    producer = EventProducer(bootstrap, **{"linger.ms": 0})
    topic = topic_name("executions.events")
    delays: list[float] = []
    try:
        # Warm-up: wait until the group has joined and the sink sees a first event.
        warm = event(base)
        producer.send(topic, warm["job_id"], encode("ExecutionEvent", warm))
        producer.flush()
        while not store.query(
            "SELECT count() FROM execution_events WHERE event_id = {id:String}",
            {"id": warm["event_id"]},
        ).scalar():
            time.sleep(0.05)
        for n in range(samples):
            record = event(base + 1 + n)
            payload = encode("ExecutionEvent", record)
            sent = time.perf_counter()
            producer.send(topic, record["job_id"], payload)
            producer.flush()
            while not store.query(
                "SELECT count() FROM execution_events WHERE event_id = {id:String}",
                {"id": record["event_id"]},
            ).scalar():
                time.sleep(0.005)
            delays.append((time.perf_counter() - sent) * 1000)
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(10)
        sink.consumer.close()
    return delays


def percentile(values: list[float], level: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(level * len(ordered)), len(ordered) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument(
        "--batch-ms",
        default="200,20",
        help="the sink's max batch wait in ms; several (comma-separated) measure visibility "
        "at each, throughput at the first (default 200,20; 200 is the service's default)",
    )
    args = parser.parse_args()
    waits = [int(part) for part in args.batch_ms.split(",") if part.strip()]
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"bench{uuid.uuid4().hex[:8]}."
    broker: LocalKafka | None = None
    workdir = Path(tempfile.mkdtemp(prefix="tickwheel-bench-history-"))
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        broker = LocalKafka(
            BrokerConfig(data_dir=workdir / "kafka", port=free_port(), controller_port=free_port())
        )
        broker.start(timeout=120)
        bootstrap = broker.bootstrap
    try:
        apply_topology(bootstrap=bootstrap)
        store = ChdbHistoryStore(workdir / "history")
        try:
            store.migrate()
            inserts = insert_rate(store, 10_000, 5)
            rate = throughput(store, bootstrap, args.events, waits[0])
            delays = {
                wait: visibility(store, bootstrap, args.samples, wait, 10_000_000 * (i + 1))
                for i, wait in enumerate(waits)
            }
        finally:
            store.close()
    finally:
        if broker is not None:
            broker.stop()
    lines = [
        "# tickwheel history sink benchmark",
        "",
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores "
        "(shared with the broker and chDB), one sink, embedded chDB, local single-node Kafka",
        "",
        "## Insert into chDB (the adapter alone)",
        f"- {inserts['rows']:,} `execution_events` rows in batches of {inserts['batch_rows']:,}, "
        "columnar, with a dedup token: "
        f"**{inserts['per_s']:,.0f} rows/s**",
        "",
        "## Sustained ingest into chDB",
        f"- {rate['events']:,} ExecutionEvents produced first ({rate['produce_s']:.1f} s), then "
        f"drained by the sink in {rate['batches']} batches (up to {DEFAULT_MAX_BATCH:,} records or "
        f"{waits[0]} ms each; decode, insert with a dedup token, commit)",
        f"- wall time including the consumer-group join: {rate['wall_s']:.1f} s",
        f"- **steady rate after the first batch: {rate['steady_rate']:,.0f} events/s**",
        "",
        "## Produce → visible in a query",
        f"- {args.samples} `succeeded` events per setting, one at a time, the sink idle and "
        "caught up; polled every 5 ms on the owner's store; the batch wait is the sink's "
        "longest wait for more records once one has arrived",
        *(
            f"- batch wait {wait} ms: **p50 {statistics.median(values):.0f} ms, "
            f"p95 {percentile(values, 0.95):.0f} ms, max {max(values):.0f} ms**"
            for wait, values in delays.items()
        ),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
