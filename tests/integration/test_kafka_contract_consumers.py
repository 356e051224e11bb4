"""The Kafka port's contract, consumer side: groups, positions, watermarks and metadata, on the
real local broker here and on the in-memory one in `tests/unit/adapters/kafka/test_memory_kafka_contract.py`.
The harness (`cluster`, `drive`) and the rules it follows are in `test_kafka_contract.py`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from tests.integration.test_kafka_contract import (
    broker_cluster,
    drive,
    name,
    numbered,
    positions,
    read_values,
    send_all,
)
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.ports.kafka import latest_per_key

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(kafka_bootstrap: str) -> Iterator[Any]:
    yield from broker_cluster(kafka_bootstrap)


# -- groups ----------------------------------------------------------------------------------
def _member(
    cluster: Any, group: str, topic: str, who: str, events: list[Any], lapsing: bool = False
) -> Any:
    consumer = cluster.lapsing_consumer(group) if lapsing else cluster.consumer(group)

    def on_assign(c: Any, partitions: list[Any]) -> None:
        events.append((who, "assign", sorted(tp.partition for tp in partitions)))
        c.incremental_assign(partitions)

    def on_revoke(c: Any, partitions: list[Any]) -> None:
        events.append((who, "revoke", sorted(tp.partition for tp in partitions)))
        c.incremental_unassign(partitions)

    def on_lost(c: Any, partitions: list[Any]) -> None:
        events.append((who, "lost", sorted(tp.partition for tp in partitions)))
        c.incremental_unassign(partitions)

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    return consumer


def owned(consumer: Any) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_a_second_member_takes_partitions_revoked_before_they_are_assigned(cluster: Any) -> None:
    topic, group = name("group"), name("members")
    cluster.create_topic(topic, partitions=4)
    events: list[Any] = []
    first = _member(cluster, group, topic, "first", events)
    drive([first], lambda: owned(first) == {0, 1, 2, 3})
    second = _member(cluster, group, topic, "second", events)
    # The newcomer polls first: it must not be handed anything `first` has not let go of.
    drive(
        [second, first],
        lambda: len(owned(first)) == 2 and len(owned(second)) == 2,
        always=lambda: not owned(first) & owned(second),  # never two owners at once
    )
    assert owned(first) | owned(second) == {0, 1, 2, 3}
    moved = sorted(owned(second))
    revoked_at = events.index(("first", "revoke", moved))
    assigned_at = events.index(("second", "assign", moved))
    assert revoked_at < assigned_at  # cooperative: let go first, then handed over
    assert all(e[1] != "revoke" for e in events if e[0] == "second")

    second.close()  # leaving the group revokes what it owns, through its callback
    assert events[-1] == ("second", "revoke", moved)
    left_at = len(events)
    drive([first], lambda: owned(first) == {0, 1, 2, 3})
    assert ("first", "assign", moved) in events[left_at:]  # handed back in one assignment
    with pytest.raises(RuntimeError):
        second.consume(1, 0)


def test_a_member_that_stops_polling_loses_its_partitions_to_the_others(cluster: Any) -> None:
    topic, group = name("lapse"), name("lapse")
    cluster.create_topic(topic, partitions=2)
    events: list[Any] = []
    lapsed = _member(cluster, group, topic, "lapsed", events, lapsing=True)
    drive([lapsed], lambda: owned(lapsed) == {0, 1})
    other = _member(cluster, group, topic, "other", events)
    drive([lapsed, other], lambda: len(owned(lapsed)) == 1 and len(owned(other)) == 1)
    kept = sorted(owned(lapsed))
    cluster.lapse(lapsed)  # stops polling: the group moves on without it
    drive([other], lambda: owned(other) == {0, 1})
    # KIP-447: until it learns, the zombie may not commit offsets for the group in a
    # transaction; the producer aborts and goes on (it is not fenced: its id is its own).
    sink = name("sink")
    cluster.create_topic(sink)
    producer = cluster.transactional(name("eos"))
    producer.init()
    producer.begin()
    producer.send(sink, "k", b"zombie's", partition=0)
    with pytest.raises(KafkaException) as refused:
        producer.send_offsets(lapsed, [TopicPartition(topic, 0, 1)])
    assert refused.value.args[0].code() == KafkaError.UNKNOWN_MEMBER_ID
    assert refused.value.args[0].txn_requires_abort()
    producer.abort()
    producer.begin()
    producer.send(sink, "k", b"owner's", partition=0)
    producer.send_offsets(other, [TopicPartition(topic, 0, 1)])
    producer.commit()
    assert read_values(cluster, sink) == [b"owner's"]
    # Its next polls say why, then call `on_lost` (not `on_revoke`: it owns nothing by then),
    # and it joins again, so the group ends balanced.
    errors: list[int] = []
    drive([lapsed, other], lambda: ("lapsed", "lost", kept) in events, errors=errors)
    assert KafkaError._MAX_POLL_EXCEEDED in errors
    assert ("lapsed", "revoke", kept) not in events
    drive([lapsed, other], lambda: len(owned(lapsed)) == 1 and len(owned(other)) == 1)


# -- positions and metadata -------------------------------------------------------------------
def test_pause_seek_and_position(cluster: Any) -> None:
    topic = name("seek")
    cluster.create_topic(topic)
    send_all(cluster, topic, numbered(5))
    consumer = cluster.consumer(name("seek"))
    tp = TopicPartition(topic, 0)
    consumer.assign([TopicPartition(topic, 0, 0)])
    assert positions(consumer, topic) == -1001  # not known until something is read
    got: dict[int, list[Any]] = {}
    drive([consumer], lambda: len(got.get(0, [])) == 5, got)
    assert [m.offset() for m in got[0]] == [0, 1, 2, 3, 4]
    assert positions(consumer, topic) == 5

    consumer.pause([tp])
    consumer.seek(TopicPartition(topic, 0, 1))
    assert positions(consumer, topic) == -1001
    for _ in range(3):  # paused: nothing comes (the real client is given a moment to show it)
        assert consumer.consume(10, 0.2) == []
    consumer.resume([tp])
    got.clear()
    drive([consumer], lambda: len(got.get(0, [])) == 4, got)
    assert [m.offset() for m in got[0]] == [1, 2, 3, 4]
    with pytest.raises(KafkaException) as unassigned:
        consumer.seek(TopicPartition(topic, 1, 0))
    assert unassigned.value.args[0].code() == KafkaError._STATE


def test_watermarks_and_the_last_stable_offset(cluster: Any) -> None:
    topic = name("marks")
    cluster.create_topic(topic)
    tp = TopicPartition(topic, 0)
    committed = cluster.consumer(name("rc"))
    uncommitted = cluster.consumer(name("ru"), **{"isolation.level": "read_uncommitted"})
    reader = cluster.reader()
    assert committed.get_watermark_offsets(tp, timeout=10) == (0, 0)
    send_all(cluster, topic, numbered(3))
    assert committed.get_watermark_offsets(tp, timeout=10) == (0, 3)

    txn = cluster.transactional(name("marks"))
    txn.init()
    txn.begin()
    txn.send(topic, "k", b"t1", partition=0)
    txn.send(topic, "k", b"t2", partition=0)
    txn.flush(30)
    assert committed.get_watermark_offsets(tp, timeout=10) == (0, 3)
    assert uncommitted.get_watermark_offsets(tp, timeout=10) == (0, 5)
    assert reader.watermarks(topic, 0) == (0, 3)
    txn.commit()
    # The marker counts. The real broker writes it just after `commit` returns: wait for it
    # (the fake has written it within the call).
    drive([], lambda: committed.get_watermark_offsets(tp, timeout=10) == (0, 6))
    assert reader.watermarks(topic, 0) == (0, 6)


def test_committed_offsets_are_where_the_group_starts(cluster: Any) -> None:
    topic, group = name("commit"), name("commit")
    cluster.create_topic(topic)
    send_all(cluster, topic, numbered(4))
    first = cluster.consumer(group)
    tp = TopicPartition(topic, 0)
    assert first.committed([tp], timeout=10)[0].offset == -1001
    done = first.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    assert [(d.topic, d.partition, d.offset) for d in done] == [(topic, 0, 3)]
    assert first.committed([tp], timeout=10)[0].offset == 3
    second = cluster.consumer(group)
    second.incremental_assign([TopicPartition(topic, 0)])  # no offset: the committed one
    got: dict[int, list[Any]] = {}
    drive([second], lambda: len(got.get(0, [])) == 1, got)
    assert [m.value() for m in got[0]] == [b"3"]
    found = second.offsets_for_times([TopicPartition(topic, 0, 0)], timeout=10)
    assert found[0].offset == 0
    future_ms = int(time.time() * 1000) + 3_600_000  # no record is this recent on either
    assert second.offsets_for_times([TopicPartition(topic, 0, future_ms)], 10)[0].offset == -1


def test_a_compacted_topic_reads_as_the_latest_record_per_key(cluster: Any) -> None:
    topic = name("compacted")
    cluster.create_topic(topic, partitions=2, compacted=True)
    send_all(cluster, topic, [("a", b"1"), ("b", b"2"), ("a", b"3"), ("c", b"4"), ("b", None)])
    latest = latest_per_key(cluster.reader().read_to_end(topic))
    assert {key: record.value for key, record in latest.items()} == {"a": b"3", "c": b"4"}
    assert all(r.partition == partition_for(k, 2) for k, r in latest.items())


def test_topics_are_listed_with_their_partitions_and_unknown_ones_with_an_error(
    cluster: Any,
) -> None:
    topic = name("listed")
    cluster.create_topic(topic, partitions=3)
    consumer = cluster.consumer(name("meta"))
    assert sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions) == [0, 1, 2]
    assert cluster.reader().partition_count(topic) == 3
    missing = name("missing")
    unknown = consumer.list_topics(missing, timeout=10).topics[missing]
    assert len(unknown.partitions) == 0
    assert unknown.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_an_unknown_topic_is_reported_and_the_consumer_goes_on(cluster: Any) -> None:
    missing, present = name("missing"), name("present")
    cluster.create_topic(present)
    assigned = cluster.consumer(name("assigned"))
    assigned.assign([TopicPartition(missing, 0, 0), TopicPartition(present, 0, 0)])
    send_all(cluster, present, [("k", b"here")])
    got: dict[int, list[Any]] = {}
    drive([assigned], lambda: len(got.get(0, [])) == 1, got)
    assert [m.value() for m in got[0]] == [b"here"]
    with pytest.raises(KafkaException) as unknown:
        assigned.get_watermark_offsets(TopicPartition(missing, 0), timeout=10)
    assert unknown.value.args[0].code() == KafkaError._UNKNOWN_PARTITION

    subscribed = cluster.consumer(name("subscribed"))
    subscribed.subscribe([missing])
    errors: list[int] = []
    drive([subscribed], lambda: KafkaError.UNKNOWN_TOPIC_OR_PART in errors, errors=errors)
    subscribed.consume(1, 0.1)  # still usable: no exception, whatever else it reports
