"""What the pipeline benchmark reads back from a run: the executions' events (from Kafka,
once the run is over or about to be), the history's row count, the CPU each process spent,
and which instance owned what."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import cpu_seconds
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.events import requested_event
from tickwheel.sdk.jobs import PRIORITIES
from tickwheel.topology import topic_name


def events(bootstrap: str) -> list[dict[str, Any]]:
    """Every execution event, with each request as its `requested` event (the timer publishes
    the request alone; history derives the event from it)."""
    out = [
        decode(r.value, "ExecutionEvent")[1]
        for r in read_to_end(topic_name("executions.events"), None, bootstrap, timeout=600)
        if r.value is not None
    ]
    for priority in PRIORITIES:
        topic = topic_name(f"executions.{priority}")
        out += [
            requested_event(decode(r.value, "ExecutionRequest")[1])
            for r in read_to_end(topic, None, bootstrap, timeout=600)
            if r.value is not None
        ]
    return out


def wait_for_succeeded(
    bootstrap: str,
    expected: int,
    deadline: float,
    on_written: Callable[[int], None] | None = None,
) -> int:
    """Wait until `expected` executions have succeeded (or the deadline); returns how many had.
    `on_written` is told the events topic's record count each time it is read (the steady
    run's warm CPU snapshot is taken there).

    While the pipeline runs this asks only the events topic's end offsets: decoding every
    event to count them, every few seconds, cost the benchmark's own process up to a core
    (450,000 records at the end of a 10,000/s steady run) on the two cores the pipeline
    shares. The events are decoded once a no-op's two (leased, succeeded) can all be there,
    and again only after more arrived."""
    topic = topic_name("executions.events")
    consumer = Consumer(consumer_config(f"bench-count-{uuid.uuid4()}", bootstrap))
    try:
        partitions = [
            TopicPartition(topic, p)
            for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]
        decoded_at, done = -1, 0
        while time.time() < deadline:
            time.sleep(0.5)
            try:
                written = sum(
                    consumer.get_watermark_offsets(tp, 5, cached=False)[1] for tp in partitions
                )
            except KafkaException:  # a leader moving: asked again next time
                continue
            if on_written is not None:
                on_written(written)
            if written < 2 * expected or written == decoded_at:
                continue
            decoded_at = written
            done = sum(1 for e in events(bootstrap) if e["event_type"] == "succeeded")
            if done >= expected:
                break
        return done
    finally:
        consumer.close()


def cpu_per_execution(
    before: dict[str, float], pids: dict[str, int], executions: int
) -> dict[str, float]:
    """CPU µs each process spent per execution since `before` (its CPU seconds then)."""
    return {
        name: (cpu_seconds(pid) - before[name]) / max(1, executions) * 1e6
        for name, pid in pids.items()
    }


def describe_cpu(per_execution: dict[str, float]) -> str:
    parts = ", ".join(f"{name} {us:,.0f}" for name, us in per_execution.items())
    return f"CPU µs per execution: {parts}; all {sum(per_execution.values()):,.0f}"


def times_of(all_events: list[dict[str, Any]], kind: str) -> dict[str, int]:
    """Execution id -> the time of its first event of `kind` (epoch ms)."""
    first: dict[str, int] = {}
    for e in all_events:
        if e["event_type"] == kind:
            first.setdefault(e["execution_id"], e["event_time"])
    return first


def history_rows(history_dir: Path) -> int:
    """Distinct `execution_events` rows the history holds (read through the sink, its owner)."""
    from tickwheel.adapters.clickhouse import HistorySettings
    from tickwheel.history import open_history_reader

    try:
        reader = open_history_reader(HistorySettings(history_dir=history_dir), wait_s=1.0)
    except Exception:  # not started yet, or busy starting
        return -1
    try:
        return int(reader.query("SELECT uniqExact(event_id) FROM execution_events", {}).scalar())
    except Exception:
        return -1
    finally:
        reader.close()


def count_by_worker(all_events: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in all_events:
        if e["event_type"] == "leased":
            name = str(e["worker_id"]).split("@")[0]
            counts[name] = counts.get(name, 0) + 1
    return counts


def assignments(
    log_dir: Path, names: list[str], since_s: float, until_s: float
) -> tuple[dict[str, list[int]], list[int]]:
    """The partitions each timer owned at `until_s` (epoch s; before the stop revokes them),
    from its log (`partition_restored` adds, `partition_revoked` takes away), and those revoked
    from a timer from `since_s` on: moved mid-run, not by the start-up's rebalance."""
    owned: dict[str, list[int]] = {}
    moved: list[int] = []
    for name in names:
        partitions: set[int] = set()
        for line in (log_dir / f"{name}.log").read_text(errors="replace").splitlines():
            if '"partition_restored"' not in line and '"partition_revoked"' not in line:
                continue
            try:
                entry = json.loads(line)
                partition = int(entry["partition"])
            except (ValueError, KeyError, TypeError):
                continue
            if float(entry.get("ts", 0)) >= until_s:
                break
            if entry.get("action") == "partition_restored":
                partitions.add(partition)
            else:
                partitions.discard(partition)
                if float(entry.get("ts", 0)) >= since_s:
                    moved.append(partition)
        owned[name] = sorted(partitions)
    return owned, sorted(moved)
