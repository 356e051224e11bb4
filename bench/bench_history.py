"""Benchmark of the history sink: sustained events per second into chDB, and the delay from
an outcome event being produced to its visibility in a query.

Against a real broker (`KAFKA_BOOTSTRAP_SERVERS`, or a throwaway local Kafka started here)
and a fresh embedded chDB directory, under a fresh topic prefix:

0. insert, 10,000-row batches of `execution_events`, interleaved in one process: the raw chDB
   limit (the same rows as a Native buffer built beforehand, inserted bare), the fast path
   (Avro bodies framed and decoded by ClickHouse, decision 0123) and the row path (decode in
   Python, build row dicts, columnar insert), with wall rate and in-process CPU per row;
1. throughput: pipeline-shaped traffic (per execution one request on executions.normal and
   its `leased` and `succeeded` events) produced first, then drained by the sink (the
   service's loop: batch, insert with dedup tokens, commit), once with the fast path and once
   on the row path alone, each under its own topic prefix. The rate is taken from the end of
   the first batch (after the group join) to the last row; the lag is read after the drain;
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

import clickhouse_connect

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.admin import apply_topology
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.history.columnar import encoded_kinds
from tickwheel.services.history.rows import Source, execution_event_row
from tickwheel.services.history.settings import DEFAULT_MAX_BATCH
from tickwheel.services.history.sink import HistorySink
from tickwheel.stack.broker import BrokerConfig, LocalKafka, free_port
from tickwheel.topology import topic_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._charts import points  # noqa: E402

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


def request(n: int, at: int) -> dict[str, Any]:
    return {
        "execution_id": f"bench-exec-{n}", "job_id": f"bench-job-{n % 500}", "job_version": 1,
        "job_type": "noop", "tenant_id": f"tenant-{n % 7}", "priority": "normal", "attempt": 1,
        "scheduled_time": at - 1000, "fire_time": at - 900, "period_start": at - 61_000,
        "period_end": at - 1000, "payload": "{}", "max_attempts": 3, "trigger": "scheduled",
        "late": False, "requested_at": at - 800, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip


class Read:
    """A consumed message as the sink reads it (topic, partition, offset, value)."""

    def __init__(self, topic: str, offset: int, value: bytes) -> None:
        self._topic, self._offset, self._value = topic, offset, value

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value


def make_sink(
    store: ChdbHistoryStore, bootstrap: str, batch_ms: int, encoded: bool = True
) -> HistorySink:
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
        encoded=encoded,
    )
    sink.subscribe()
    return sink


def insert_rates(store: ChdbHistoryStore, batch_rows: int, rounds: int) -> dict[str, Any]:
    """Rows/s and CPU µs/row of three ways to insert the same 10,000 `execution_events`,
    interleaved round by round so the machine's load falls on all three alike."""
    kind = encoded_kinds()["ExecutionEvent"]
    target = kind.tables[0]
    payloads = [encode("ExecutionEvent", event(n, "leased" if n % 2 else "succeeded"))
                for n in range(batch_rows)]  # fmt: skip
    raw = clickhouse_connect.get_client(interface="chdb", path=store.directory)
    columns = list(target.columns)
    totals = {name: [0.0, 0.0] for name in ("raw", "fast", "rows")}
    try:
        for r in range(rounds):
            topic = f"bench-insert-{r}"
            reads = [Read(topic, i, p) for i, p in enumerate(payloads)]
            started, cpu = time.perf_counter(), time.process_time()
            data = kind.frame(reads)
            store.insert_encoded(target.table, target.columns, target.select, kind.structure,
                                 data, dedup_token=f"bench-fast-{r}")  # fmt: skip
            totals["fast"][0] += time.perf_counter() - started
            totals["fast"][1] += time.process_time() - cpu
            started, cpu = time.perf_counter(), time.process_time()
            made = [execution_event_row(decode(m.value())[1], Source(f"rows-{topic}", 0,
                    m.offset(), 0)) for m in reads]  # fmt: skip
            store.insert("execution_events", made, dedup_token=f"bench-rows-{r}")
            totals["rows"][0] += time.perf_counter() - started
            totals["rows"][1] += time.process_time() - cpu
            # The raw limit: the same rows already in ClickHouse's own format, inserted bare.
            native = raw.raw_query(
                f"SELECT {', '.join(columns)} FROM execution_events "
                f"WHERE source_topic = '{topic}' FORMAT Native"
            )
            started, cpu = time.perf_counter(), time.process_time()
            raw.raw_insert("execution_events", columns, native, fmt="Native",
                           settings={"async_insert": 0,
                                     "insert_deduplication_token": f"bench-raw-{r}"})  # fmt: skip
            totals["raw"][0] += time.perf_counter() - started
            totals["raw"][1] += time.process_time() - cpu
    finally:
        raw.close()
    rows = batch_rows * rounds
    return {
        "rows": rows,
        "batch_rows": batch_rows,
        **{f"{name}_per_s": rows / wall for name, (wall, _cpu) in totals.items()},
        **{f"{name}_cpu_us": cpu * 1e6 / rows for name, (_wall, cpu) in totals.items()},
    }


def produce_pipeline(bootstrap: str, executions: int) -> float:
    """Per execution: its request on executions.normal, then `leased` and `succeeded`."""
    producer = EventProducer(bootstrap)
    requests, events = topic_name("executions.normal"), topic_name("executions.events")
    started = time.perf_counter()
    for n in range(executions):
        at = BASE_MS + n
        producer.send(requests, f"bench-job-{n % 500}", encode("ExecutionRequest", request(n, at)))
        for kind in ("leased", "succeeded"):
            record = event(n, kind, at)
            producer.send(events, record["job_id"], encode("ExecutionEvent", record))
    producer.flush()
    return time.perf_counter() - started


def throughput(
    store: ChdbHistoryStore, bootstrap: str, executions: int, batch_ms: int, encoded: bool
) -> dict[str, Any]:
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"bench{uuid.uuid4().hex[:8]}."
    apply_topology(bootstrap=bootstrap)
    produced_s = produce_pipeline(bootstrap, executions)
    records = executions * 3
    sink = make_sink(store, bootstrap, batch_ms, encoded)
    joined = time.perf_counter()
    first_records, first_done = 0, 0.0
    progress: list[tuple[float, int]] = []
    cpu_start = 0.0
    while sink.stats.records < records:
        sink.step()
        if not first_records and sink.stats.records:
            first_records, first_done = sink.stats.records, time.perf_counter()
            cpu_start = time.process_time()
        progress.append((time.perf_counter() - joined, sink.stats.records))
    done = time.perf_counter()
    cpu = time.process_time() - cpu_start
    lag_after = sink.stats.lag_records
    sink.consumer.close()
    counted = store.query(
        "SELECT uniqExact(event_id) FROM execution_events WHERE source_topic IN "
        "({e:String}, {r:String})",
        {"e": topic_name("executions.events"), "r": topic_name("executions.normal")},
    ).scalar()
    assert counted == records, counted
    steady = records - first_records
    return {
        "records": records,
        "rows": sink.stats.rows,
        "produce_s": produced_s,
        "wall_s": done - joined,
        "steady_rate": steady / (done - first_done) if done > first_done else 0.0,
        "cpu_us": cpu * 1e6 / steady if steady else 0.0,
        "batches": sink.stats.batches,
        "lag_after": lag_after,
        "progress": progress,
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


def _load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--executions", type=int, default=40_000,
        help="executions of pipeline-shaped traffic per drain (3 records each; default 40,000)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="10,000-row insert rounds")
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
    loads: dict[str, str] = {}
    try:
        apply_topology(bootstrap=bootstrap)
        store = ChdbHistoryStore(workdir / "history")
        try:
            store.migrate()
            inserts = insert_rates(store, 10_000, args.rounds)
            loads["insert"] = _load()
            fast = throughput(store, bootstrap, args.executions, waits[0], encoded=True)
            loads["fast"] = _load()
            rows = throughput(store, bootstrap, args.executions, waits[0], encoded=False)
            loads["rows"] = _load()
            delays = {
                wait: visibility(store, bootstrap, args.samples, wait, 10_000_000 * (i + 1))
                for i, wait in enumerate(waits)
            }
        finally:
            store.close()
    finally:
        if broker is not None:
            broker.stop()
    chart = points(
        {
            label: ([t for t, _ in run["progress"]], [n for _, n in run["progress"]])
            for label, run in (("fast path (decision 0123)", fast), ("row path", rows))
        },
        "history-drain.png",
        f"History sink draining {fast['records']:,} pipeline records",
        "seconds since the sink started",
        "records written and committed",
    )
    raw = inserts["raw_per_s"]

    def drain(label: str, run: dict[str, Any], load: str) -> list[str]:
        return [
            f"- {label}: **{run['steady_rate']:,.0f} records/s** after the first batch "
            f"({run['rows']:,} rows from {run['records']:,} records in {run['batches']} batches, "
            f"{run['cpu_us']:.1f} CPU µs per record in the sink's process; wall including the "
            f"group join {run['wall_s']:.1f} s; records behind after the drain: "
            f"{run['lag_after']}; {load})",
        ]

    lines = [
        "# tickwheel history sink benchmark",
        "",
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores "
        "(shared with the broker, chDB and, on this machine, other work: load averages given "
        "with each figure), one sink, embedded chDB, local single-node Kafka",
        "",
        f"## Insert into chDB, {inserts['batch_rows']:,}-row batches of `execution_events`",
        f"{inserts['rows']:,} rows each way, interleaved round by round in one process, each "
        f"insert with its own dedup token ({loads['insert']}):",
        "",
        "| path | rows/s | ratio to raw | CPU µs/row in process |",
        "| --- | --- | --- | --- |",
        f"| raw chDB limit: the same rows as a Native buffer built beforehand, inserted bare | "
        f"{raw:,.0f} | 1.00 | {inserts['raw_cpu_us']:.1f} |",
        f"| fast path: Avro bodies framed, decoded and checked by ClickHouse (decision 0123) | "
        f"**{inserts['fast_per_s']:,.0f}** | {inserts['fast_per_s'] / raw:.2f} | "
        f"{inserts['fast_cpu_us']:.1f} |",
        f"| row path: decoded in Python, row dicts, columnar insert (before 0123) | "
        f"{inserts['rows_per_s']:,.0f} | {inserts['rows_per_s'] / raw:.2f} | "
        f"{inserts['rows_cpu_us']:.1f} |",
        "",
        "## Sustained ingest behind the pipeline",
        f"{args.executions:,} executions' records (a request on executions.normal, its `leased` "
        f"and `succeeded` events; {args.executions * 3:,} records, {args.executions * 4:,} rows "
        f"with the derived `requested` events) produced first ({fast['produce_s']:.1f} s), then "
        f"drained by the sink (up to {DEFAULT_MAX_BATCH:,} records or {waits[0]} ms a batch; "
        "insert with dedup tokens, commit):",
        "",
        *drain("fast path", fast, loads["fast"]),
        *drain("row path alone (`encoded=False`)", rows, loads["rows"]),
        f"- fast / row path: {fast['steady_rate'] / max(rows['steady_rate'], 1):.1f} times",
        "",
        f"![records written over time]({chart})",
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
