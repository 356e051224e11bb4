"""The foundation against the real local broker: transactions are atomic and invisible when
aborted, co-partitioned topics route a key to the same partition, and a cluster that differs
from the declared topology is refused with a message that names the difference."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tickwheel.adapters.kafka.admin import apply_topology, verify_topology
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.partitioner import murmur2, partition_for
from tickwheel.adapters.kafka.producer import EventProducer, TransactionalProducer
from tickwheel.adapters.kafka.reader import Record, read_back
from tickwheel.errors import TopologyMismatch
from tickwheel.topology import load_topology

pytestmark = pytest.mark.integration

# Kafka's own answer, from the broker's kafka-clients jar in jshell:
# Utils.toPositive(Utils.murmur2("a".getBytes(UTF_8))) and the same for "job-1".
JAVA_A, JAVA_JOB_1 = 584102524, 1130425772


def _create(bootstrap: str, *topics: tuple[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(n, num_partitions=p, replication_factor=1) for n, p in topics]
    )
    for future in futures.values():
        future.result(30)


def _read_all(
    bootstrap: str, topic: str, isolation: str = "read_committed"
) -> list[tuple[int, str, bytes]]:
    """Every record of `topic` as (partition, key, value), read until the end of each partition."""
    consumer = Consumer(
        consumer_config(f"reader-{uuid.uuid4()}", bootstrap, **{"isolation.level": isolation})
    )
    metadata = consumer.list_topics(topic, timeout=10)
    partitions = list(metadata.topics[topic].partitions)
    ends = {}
    for p in partitions:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ends[p] = high
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    records: list[tuple[int, str, bytes]] = []
    positions = {p: 0 for p in partitions}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = all(
            positions[p] >= ends[p]
            or consumer.position([TopicPartition(topic, p)])[0].offset >= ends[p]
            for p in partitions
        )
        if done:
            break
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        positions[msg.partition()] = msg.offset() + 1
        records.append((msg.partition(), msg.key().decode(), msg.value()))
    consumer.close()
    return records


def test_committed_transaction_is_visible_and_aborted_one_is_not(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    requests, state = f"{unique_prefix}requests", f"{unique_prefix}state"
    _create(kafka_bootstrap, (requests, 4), (state, 4))

    producer = TransactionalProducer(f"{unique_prefix}tx", kafka_bootstrap)
    producer.init()
    keys = [f"job-{i}" for i in range(40)]

    producer.begin()
    for key in keys:
        producer.send(requests, key, b"committed:" + key.encode())
        producer.send(state, key, b"state:" + key.encode())
    producer.commit()

    producer.begin()
    for key in keys:
        producer.send(requests, key, b"aborted:" + key.encode())
        producer.send(state, key, b"aborted:" + key.encode())
    producer.flush()  # the aborted records reach the log: only the abort marker hides them
    producer.abort()

    committed_requests = _read_all(kafka_bootstrap, requests)
    committed_state = _read_all(kafka_bootstrap, state)
    assert sorted(v for _, _, v in committed_requests) == sorted(
        b"committed:" + k.encode() for k in keys
    )
    assert all(not v.startswith(b"aborted") for _, _, v in committed_state)
    assert len(committed_state) == len(keys)

    # Co-partitioning: murmur2_random puts each key on the same partition in both topics.
    request_partition = {k: p for p, k, _ in committed_requests}
    state_partition = {k: p for p, k, _ in committed_state}
    assert request_partition == state_partition
    assert len(set(request_partition.values())) > 1  # the keys really spread

    # read_uncommitted sees the aborted records: they were written, and hidden only by the abort.
    uncommitted = _read_all(kafka_bootstrap, requests, "read_uncommitted")
    assert sum(1 for _, _, v in uncommitted if v.startswith(b"aborted")) == len(keys)


def test_murmur2_random_matches_the_java_partitioner(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    """librdkafka's murmur2_random places keys as Kafka's Java partitioner does, which our
    own `partition_for` (used by readers to find a key) also computes."""
    topic = f"{unique_prefix}murmur"
    _create(kafka_bootstrap, (topic, 6))
    producer = EventProducer(kafka_bootstrap)
    keys = [f"job-{i}" for i in range(30)]
    for key in keys:
        producer.send(topic, key, b"x")
    producer.flush()
    placed = {k: p for p, k, _ in _read_all(kafka_bootstrap, topic)}
    assert placed == {k: partition_for(k, 6) for k in keys}
    # Known Java values (Utils.murmur2 of these UTF-8 keys), so a wrong port cannot agree with itself.
    assert [murmur2(k.encode()) & 0x7FFFFFFF for k in ("a", "job-1")] == [JAVA_A, JAVA_JOB_1]


def test_topology_apply_is_idempotent(applied_topology: str, kafka_bootstrap: str) -> None:
    assert apply_topology(bootstrap=kafka_bootstrap) == []
    verify_topology(bootstrap=kafka_bootstrap)


def test_wrong_partition_count_is_refused_naming_topic_and_counts(
    kafka_bootstrap: str, unique_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", unique_prefix)
    specs = load_topology()
    wrong = next(s for s in specs if s.name.endswith("timers.state"))
    _create(kafka_bootstrap, (wrong.name, wrong.partitions + 2))
    with pytest.raises(TopologyMismatch) as refused:
        apply_topology(specs, bootstrap=kafka_bootstrap)
    message = str(refused.value)
    assert (
        f"topic '{wrong.name}' has {wrong.partitions + 2} partitions, topology declares {wrong.partitions}"
        in message
    )
    assert "co-partitioned group 'jobs' is not co-partitioned" in message


def test_missing_topic_is_named(
    kafka_bootstrap: str, unique_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", unique_prefix)
    with pytest.raises(TopologyMismatch) as refused:
        verify_topology(bootstrap=kafka_bootstrap)
    assert f"topic '{unique_prefix}jobs.definitions' is missing" in str(refused.value)


def test_reading_back_stops_at_the_first_window_that_is_enough(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    """`read_back` (what finds one workflow instance's events): a record near the end is found
    in the last window alone, whatever the partition holds before it; one at the beginning
    makes it read everything."""
    topic = f"{unique_prefix}back"
    _create(kafka_bootstrap, (topic, 1))
    producer = EventProducer(kafka_bootstrap)
    for i in range(5000):
        producer.send(topic, "first" if i == 0 else ("last" if i == 4990 else "other"), b"x")
    producer.flush(30)
    windows: list[int] = []

    def holds(key: str) -> Callable[[list[Record]], bool]:
        def enough(records: list[Record]) -> bool:
            windows.append(len(records))
            return any(r.key == key for r in records)

        return enough

    records = read_back(topic, 0, holds("last"), kafka_bootstrap, first_window=100)
    assert windows == [100] and [r.offset for r in records] == list(range(4900, 5000))
    windows.clear()
    records = read_back(topic, 0, holds("first"), kafka_bootstrap, first_window=100)
    # 100, 800, 5000 (6,400 reaches the beginning: all of it, with no need to ask).
    assert windows == [100, 800] and [r.offset for r in records] == list(range(5000))
