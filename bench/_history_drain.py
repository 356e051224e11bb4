"""The history benchmark's drain: pipeline-shaped traffic produced on a fresh topic prefix,
then read back by a sink until every record is written and committed (bench_history.py
reports the runs)."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from bench._history_inserts import BASE_MS, event
from bench._history_stages import StageClock, TimedSink, TimedStore
from tickwheel.adapters.avro import encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.admin import apply_topology
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.history.settings import DEFAULT_MAX_BATCH, SINK_FETCH
from tickwheel.services.history.sink import HistorySink
from tickwheel.topology import topic_name


def request(n: int, at: int) -> dict[str, Any]:
    return {
        "execution_id": f"bench-exec-{n}", "job_id": f"bench-job-{n % 500}", "job_version": 1,
        "job_type": "noop", "tenant_id": f"tenant-{n % 7}", "priority": "normal", "attempt": 1,
        "scheduled_time": at - 1000, "fire_time": at - 900, "period_start": at - 61_000,
        "period_end": at - 1000, "payload": "{}", "max_attempts": 3, "trigger": "scheduled",
        "late": False, "requested_at": at - 800, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip


def make_sink(
    store: ChdbHistoryStore,
    bootstrap: str,
    batch_ms: int,
    encoded: bool = True,
    pipelined: bool = True,
    stages: StageClock | None = None,
) -> HistorySink:
    consumer = Consumer(
        consumer_config(
            f"bench-history-{uuid.uuid4().hex[:8]}",
            bootstrap,
            **{"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000, **SINK_FETCH},
        )
    )
    sink_type, sink_store = HistorySink, store
    if stages is not None:  # the profiled run: the insert inline, each stage timed
        sink_type, sink_store, pipelined = TimedSink, TimedStore(store, stages), False
    sink = sink_type(
        sink_store,  # type: ignore[arg-type]
        consumer,
        DeadLetterWriter(bootstrap),
        max_batch=DEFAULT_MAX_BATCH,
        max_wait_s=batch_ms / 1000,
        encoded=encoded,
        pipelined=pipelined,
    )
    if isinstance(sink, TimedSink) and stages is not None:
        sink.clock = stages
    sink.subscribe()
    return sink


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
    store: ChdbHistoryStore,
    bootstrap: str,
    executions: int,
    batch_ms: int,
    encoded: bool,
    pipelined: bool = True,
    profiled: bool = False,
) -> dict[str, Any]:
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"bench{uuid.uuid4().hex[:8]}."
    apply_topology(bootstrap=bootstrap)
    produced_s = produce_pipeline(bootstrap, executions)
    records = executions * 3
    stages = StageClock() if profiled else None
    sink = make_sink(store, bootstrap, batch_ms, encoded, pipelined, stages)
    joined = time.perf_counter()
    first_records, first_done = 0, 0.0
    progress: list[tuple[float, int]] = []
    cpu_start = 0.0
    while sink.stats.records < records:
        sink.step()
        if not first_records and sink.stats.records:
            first_records, first_done = sink.stats.records, time.perf_counter()
            cpu_start = time.process_time()
            if stages is not None:  # the group join is in the first batch's read
                stages.seconds = dict.fromkeys(stages.seconds, 0.0)
        progress.append((time.perf_counter() - joined, sink.stats.rows))
    sink.finish()  # pipelined: the last batch's insert, then its commit
    progress.append((time.perf_counter() - joined, sink.stats.rows))
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
        "stages_us": stages.per_record_us(records - first_records) if stages else {},
    }
