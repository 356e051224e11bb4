"""The history sink's lag is a metric: after each batch it knows how many records on its
partitions are not yet written, and the figure falls to zero as it catches up."""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tickwheel.adapters.avro import encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.admin import apply_topology
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.history.sink import HistorySink
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EVENTS = 400
BASE_MS = 4_076_000_000_000


def _event(n: int) -> dict[str, object]:
    return {
        "event_id": f"succeeded:lag-{n}:1:w:{n}", "event_time": BASE_MS + n,
        "event_type": "succeeded", "job_id": f"job-{n % 37}", "job_type": "noop",
        "tenant_id": "t", "execution_id": f"lag-{n}", "attempt": 1,
        "scheduled_time": BASE_MS + n, "fire_time": None, "worker_id": "w",
        "lease_deadline": None, "error": None, "error_kind": None, "reason": None,
        "details": None,
    }  # fmt: skip


def test_the_lag_counts_what_is_not_written_and_falls_to_zero(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", f"lag{uuid.uuid4().hex[:8]}.")
    apply_topology(bootstrap=kafka_bootstrap)
    producer = EventProducer(kafka_bootstrap)
    for n in range(EVENTS):
        event = _event(n)
        producer.send(
            topic_name("executions.events"), str(event["job_id"]), encode("ExecutionEvent", event)
        )
    producer.flush()
    store = ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="lag-")) / "history")
    store.migrate()
    consumer = Consumer(consumer_config(f"lag-{uuid.uuid4().hex[:8]}", kafka_bootstrap))
    sink = HistorySink(store, consumer, DeadLetterWriter(kafka_bootstrap), max_batch=50,
                       max_wait_s=0.05)  # fmt: skip
    sink.subscribe()
    try:
        deadline = time.monotonic() + 60
        while sink.stats.batches == 0 and time.monotonic() < deadline:
            sink.step(idle_timeout_s=0.2)
        assert 0 < sink.stats.records < EVENTS
        # Everything was produced before the sink started: what it has not written is behind.
        assert sink.stats.lag_records == EVENTS - sink.stats.records
        assert sink.stats.lag_ms > 0
        while sink.stats.rows < EVENTS and time.monotonic() < deadline:
            sink.step(idle_timeout_s=0.2)
        assert sink.stats.rows == EVENTS and sink.stats.lag_records == 0
        sink.step(idle_timeout_s=0.2)  # idle: nothing has arrived that is not written
        assert (sink.stats.lag_records, sink.stats.lag_ms) == (0, 0)
    finally:
        consumer.close()
        store.close()
