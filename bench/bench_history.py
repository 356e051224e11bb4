"""Benchmark of the history sink: sustained events per second into chDB, and the delay from
an outcome event being produced to its visibility in a query.

Against a real broker (`KAFKA_BOOTSTRAP_SERVERS`, or a throwaway local Kafka started here)
and a fresh embedded chDB directory, under a fresh topic prefix:

0. insert, 10,000-row batches of `execution_events`, interleaved in one process: the raw chDB
   limit, the Avro ceiling that applies to a sink, the fast path now and as of decision 0123
   (A/B in the same run), and the row path, with wall rate and in-process CPU per row
   (`bench/_history_inserts.py` says what each is);
1. throughput: pipeline-shaped traffic (per execution one request on executions.normal and
   its `leased` and `succeeded` events) produced first, then drained by the sink (the
   service's loop: batch, insert with dedup tokens, commit): the fast path pipelined (the
   service's sink, decision 0150), the fast path with its insert inline, and the row path
   alone, each under its own topic prefix. The rate is taken from the end of the first
   batch's read (after the group join) to the last row's commit; the lag is read after the
   drain;
2. visibility: with the sink running and caught up, one `succeeded` event at a time is
   produced and the store is polled (every 5 ms, `SELECT ... WHERE event_id = ...`) until it
   answers; produce → visible, over a number of samples.

Figures, never pass/fail. Prints and writes bench/reports/history.md.
Run: `.venv/bin/python bench/bench_history.py [--executions N] [--rounds N] [--samples N]
[--batch-ms MS]`.
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
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.history.settings import DEFAULT_MAX_BATCH
from tickwheel.stack.broker import BrokerConfig, LocalKafka
from tickwheel.topology import topic_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._charts import points  # noqa: E402
from bench._common import percentile  # noqa: E402
from bench._history_drain import make_sink, throughput  # noqa: E402
from bench._history_inserts import BASELINE_COMMIT, event, insert_rates  # noqa: E402

REPORT = Path(__file__).parent / "reports" / "history.md"


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
        sink.finish()
        sink.consumer.close()
    return delays


INSERT_LABELS = (
    ("raw", "raw chDB limit: the same rows as a Native buffer built beforehand, inserted bare"),
    ("ceiling", "Avro ceiling: the fast path's statement over a frame spooled beforehand"),
    ("fast", "fast path now: framed as read (decision 0149), decoded and checked by ClickHouse"),
    ("baseline", f"fast path of decision 0123 (git {BASELINE_COMMIT}), same run"),
    ("rows", "row path: decoded in Python, row dicts, columnar insert"),
)


DRAIN_LABELS = (
    ("inline", "fast path, insert inline (the embedded service's sink)"),
    ("pipelined", "fast path, pipelined (a server deployment's sink, decision 0150)"),
)


def insert_row(inserts: dict[str, Any], name: str, label: str) -> str:
    rate = inserts[f"{name}_per_s"]
    ceiling = inserts.get("ceiling_per_s", rate)
    return (f"| {label} | {'**' if name == 'fast' else ''}{rate:,.0f}"
            f"{'**' if name == 'fast' else ''} | {rate / inserts['raw_per_s']:.2f} | "
            f"{rate / ceiling:.2f} | {inserts[f'{name}_cpu_us']:.1f} |")  # fmt: skip


def _from_first_batch(progress: list[tuple[float, int]]) -> tuple[list[float], list[int]]:
    """The drain's progress from its last step with no row written yet (the group join and
    the empty polls before the first records left out)."""
    empty = [t for t, n in progress if n == 0]
    start = empty[-1] if empty else 0.0
    kept = [(t - start, n) for t, n in progress if t >= start]
    return [t for t, _ in kept], [n for _, n in kept]


def _ratio(runs: list[dict[str, Any]], others: list[dict[str, Any]]) -> float:
    def rate(group: list[dict[str, Any]]) -> float:
        return sum(r["steady_rate"] for r in group) / max(len(group), 1)

    return rate(runs) / max(rate(others), 1.0)


def _load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--executions", type=int, default=120_000,
        # 360,000 records: six batches at the sink's 60,000 cap (decision 0183), so the rate
        # after the first batch (the group join) is over five, and the pipelined sink can
        # overlap its inserts with reads at all.
        help="executions of pipeline-shaped traffic per drain (3 records each; default 120,000)",
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
        broker = LocalKafka(BrokerConfig.on_free_ports(workdir / "kafka"))
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
            # Inline (the embedded service's sink) and pipelined, alternated: A B B A.
            drains: dict[str, list[dict[str, Any]]] = {"inline": [], "pipelined": []}
            for mode in ("inline", "pipelined", "pipelined", "inline"):
                run = throughput(store, bootstrap, args.executions, waits[0], encoded=True,
                                 pipelined=mode == "pipelined", profiled=mode == "inline")  # fmt: skip
                drains[mode].append({**run, "load": _load()})
            rows = throughput(store, bootstrap, args.executions, waits[0], encoded=False,
                              pipelined=False)  # fmt: skip
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
            f"{label}, run {n + 1}": _from_first_batch(run["progress"])
            for mode, label in (*DRAIN_LABELS, ("rows", "row path"))
            for n, run in enumerate(drains[mode] if mode != "rows" else [rows])
        },
        "history-drain.png",
        f"History sink draining {rows['records']:,} pipeline records",
        "seconds since the sink's last empty step (the group join left out)",
        "rows inserted",
    )

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
        f"{inserts['rows']:,} rows each way, interleaved round by round in one process (the "
        "order reversed every other round), each insert with its own dedup token "
        f"({loads['insert']}):",
        "",
        "| path | rows/s | ratio to raw | ratio to the Avro ceiling | CPU µs/row in process |",
        "| --- | --- | --- | --- | --- |",
        *(
            insert_row(inserts, name, label)
            for name, label in INSERT_LABELS
            if name in inserts["paths"]
        ),
        "",
        "The raw limit reads a Native buffer ClickHouse produced itself: a sink never has one "
        "(its records arrive as Avro bodies), so the ceiling that applies to it is the second "
        "row, the fast path's own statement over a frame spooled beforehand. Where that "
        "statement's time goes, and what the insert settings and a single decode of requests "
        "change: [history-profile.md](history-profile.md) (`bench/profile_history.py`).",
        "",
        "## Sustained ingest behind the pipeline",
        f"{args.executions:,} executions' records (a request on executions.normal, its `leased` "
        f"and `succeeded` events; {args.executions * 3:,} records, {args.executions * 4:,} rows "
        f"with the derived `requested` events) produced first "
        f"({rows['produce_s']:.1f} s the last time), then "
        f"drained by the sink (up to {DEFAULT_MAX_BATCH:,} records or {waits[0]} ms a batch; "
        "insert with dedup tokens, commit):",
        "",
        *(
            line
            for mode, label in DRAIN_LABELS
            for n, run in enumerate(drains[mode])
            for line in drain(f"{label}, run {n + 1}", run, run["load"])
        ),
        *drain("row path alone (`encoded=False`), inline", rows, loads["rows"]),
        *(
            f"- where inline run {n + 1}'s wall time went after its first batch, µs per record: "
            + ", ".join(f"{stage} {us:.1f}" for stage, us in run["stages_us"].items())
            for n, run in enumerate(drains["inline"])
        ),
        f"- pipelined / inline (runs summed): {_ratio(drains['pipelined'], drains['inline']):.2f}"
        f" times; fast (inline) / row path: "
        f"{_ratio(drains['inline'], [rows]):.1f} times",
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
