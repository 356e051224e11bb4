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
from tickwheel.adapters.kafka.producer import EventProducer, TransactionalProducer
from tickwheel.services.history.sink import HistorySink
from tickwheel.topology import topic_name

from .history_sink_running import group_caught_up

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


def test_a_group_that_wrote_every_transactional_record_counts_as_caught_up(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixtures' `group_caught_up` on a transactional topic: each transaction's commit
    marker takes an offset after its records, so the sink's committed offset (one past its
    last record) stays below the high watermark; written everything must still read as done,
    and a record left unwritten must still read as behind."""
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", f"txn{uuid.uuid4().hex[:8]}.")
    apply_topology(bootstrap=kafka_bootstrap)
    topic = topic_name("executions.events")
    producer = TransactionalProducer(f"caught-up-{uuid.uuid4().hex[:8]}", kafka_bootstrap)
    producer.init()

    def publish(first: int, count: int) -> None:
        producer.begin()
        for n in range(first, first + count):
            event = _event(n)
            producer.send(topic, str(event["job_id"]), encode("ExecutionEvent", event))
        producer.commit()

    for first in range(0, 60, 20):
        publish(first, 20)
    group = f"txn-{uuid.uuid4().hex[:8]}"
    assert not group_caught_up(kafka_bootstrap, group, [topic])  # nothing committed yet
    store = ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="txn-")) / "history")
    store.migrate()
    consumer = Consumer(consumer_config(group, kafka_bootstrap))
    sink = HistorySink(store, consumer, DeadLetterWriter(kafka_bootstrap), max_batch=1000,
                       max_wait_s=0.05)  # fmt: skip
    sink.subscribe()
    try:
        deadline = time.monotonic() + 60
        while sink.stats.rows < 60 and time.monotonic() < deadline:
            sink.step(idle_timeout_s=0.2)
        assert sink.stats.rows == 60
        ends = [
            consumer.get_watermark_offsets(tp, timeout=10)[1]
            for tp in consumer.committed(consumer.assignment(), timeout=10)
        ]
        committed = [tp.offset for tp in consumer.committed(consumer.assignment(), timeout=10)]
        # The situation the helper has to see through: committed below the watermark.
        assert any(0 <= c < end for c, end in zip(committed, ends, strict=True))
        assert group_caught_up(kafka_bootstrap, group, [topic])
        publish(60, 1)  # one more record, not written
        assert not group_caught_up(kafka_bootstrap, group, [topic])
    finally:
        consumer.close()
        store.close()
