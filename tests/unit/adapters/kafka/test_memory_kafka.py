"""The in-memory Kafka beyond the contract suite: what only a fake can be asked (no threads, no
sleeping, every group history), and its refusals. Behaviour a real broker can show belongs in
`tests/integration/test_kafka_contract.py` instead, where both are held to it."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.memory import (
    MemoryBroker,
    MemoryConsumer,
    MemoryEventProducer,
    MemoryPartitionReader,
    MemoryTransactionalProducer,
)
from tickwheel.adapters.kafka.producer import ProduceFailed, is_fatal
from tickwheel.clock import FakeClock
from tickwheel.topology import load_topology


def consumer(broker: MemoryBroker, group: str = "g", **overrides: Any) -> MemoryConsumer:
    return MemoryConsumer(broker, consumer_config(group, "memory", **overrides))


def test_nothing_waits_sleeps_or_starts_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sleeping(seconds: float) -> None:
        raise AssertionError(f"slept {seconds}s")

    monkeypatch.setattr(time, "sleep", no_sleeping)
    threads = threading.active_count()
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t", 2)
    member = consumer(broker)
    member.subscribe(["t"])
    assert member.consume(500, timeout=3600) == []  # returns at once: time is the caller's
    assert member.poll(3600) is None
    assert {tp.partition for tp in member.assignment()} == {0, 1}
    producer = MemoryTransactionalProducer(broker, "tx")
    producer.init(3600)
    producer.begin()
    producer.send("t", "k", b"v")
    producer.commit(3600)
    assert [m.value() for m in member.consume(10, 3600)] == [b"v"]
    assert threading.active_count() == threads


def test_record_times_come_from_the_injected_clock() -> None:
    clock = FakeClock(start=1_800_000_000.0)
    broker = MemoryBroker(clock=clock)
    broker.create_topic("t")
    producer = MemoryEventProducer(broker)
    producer.send("t", "k", b"1")
    clock.advance(60)
    producer.send("t", "k", b"2")
    reader = MemoryPartitionReader(broker)
    assert [r.timestamp_ms for r in reader.read_to_end("t")] == [
        1_800_000_000_000,
        1_800_000_060_000,
    ]
    found = consumer(broker).offsets_for_times([TopicPartition("t", 0, 1_800_000_030_000)])
    assert found[0].offset == 1


def test_records_without_a_key_are_spread_by_the_injected_generator() -> None:
    def placements(seed: int) -> list[int | None]:
        broker = MemoryBroker(clock=FakeClock(), rng=random.Random(seed))
        broker.create_topic("t", 8)
        producer = MemoryEventProducer(broker)
        for _ in range(20):
            producer.send("t", None, b"v")
        member = consumer(broker, **{"auto.offset.reset": "earliest"})
        member.assign([TopicPartition("t", p) for p in range(8)])
        return sorted(m.partition() for m in member.consume(100))

    assert placements(1) == placements(1)
    assert len(set(placements(1))) > 1


def test_the_declared_topology_is_created_with_its_partitions_and_compaction() -> None:
    broker = MemoryBroker(clock=FakeClock())
    specs = load_topology()
    broker.create_topics(specs)
    broker.create_topics(specs)  # idempotent, as apply_topology is
    for spec in specs:
        topic = broker.topic(spec.name)
        assert len(topic.logs) == spec.partitions
        assert topic.compacted == ("compact" in spec.cleanup_policy)
    with pytest.raises(KafkaException) as exists:
        broker.create_topic(specs[0].name)
    assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_the_last_stable_offset_waits_for_the_oldest_open_transaction() -> None:
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t")
    first, second = (MemoryTransactionalProducer(broker, i) for i in ("a", "b"))
    for producer, value in ((first, b"a"), (second, b"b")):
        producer.init()
        producer.begin()
        producer.send("t", "k", value, partition=0)
        producer.flush()
    reader = MemoryPartitionReader(broker)
    assert reader.watermarks("t", 0) == (0, 0)
    second.commit()  # committed, but behind the still open `first`
    assert reader.watermarks("t", 0) == (0, 0)
    assert list(reader.read_to_end("t")) == []
    first.abort()
    assert reader.watermarks("t", 0) == (0, 4)
    assert [r.value for r in reader.read_to_end("t")] == [b"b"]


def test_a_transactional_producer_refuses_calls_out_of_order() -> None:
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t")
    producer = MemoryTransactionalProducer(broker, "tx")
    with pytest.raises(KafkaException):
        producer.begin()  # not initialized
    producer.init()
    with pytest.raises(KafkaException) as no_transaction:
        producer.send("t", "k", b"v")
    assert no_transaction.value.args[0].code() == KafkaError._STATE
    producer.begin()
    with pytest.raises(KafkaException):
        producer.begin()
    with pytest.raises(KafkaException) as unknown:
        producer.send("missing", "k", b"v")
    assert unknown.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_a_fenced_producer_stays_dead() -> None:
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t")
    zombie = MemoryTransactionalProducer(broker, "tx")
    zombie.init()
    zombie.begin()
    MemoryTransactionalProducer(broker, "tx").init()
    zombie.send("t", "k", b"lost")  # local: accepted, never delivered
    with pytest.raises(KafkaException) as flushed:
        zombie.flush()
    assert is_fatal(flushed.value)
    with pytest.raises(KafkaException) as sent:
        zombie.send("t", "k", b"again")
    assert sent.value.args[0].code() == KafkaError._FATAL
    for call in (zombie.begin, zombie.commit, zombie.abort, zombie.init):
        with pytest.raises(KafkaException) as refused:
            call()
        assert is_fatal(refused.value)
    assert broker.log("t", 0).high == 0


def test_an_event_producer_reports_an_unknown_topic_at_flush() -> None:
    broker = MemoryBroker(clock=FakeClock())
    producer = MemoryEventProducer(broker)
    producer.send("missing", "k", b"v")
    with pytest.raises(ProduceFailed, match="missing"):
        producer.flush()
    producer.flush()  # reported once


def test_a_consumer_needs_a_group_and_refuses_use_after_close() -> None:
    broker = MemoryBroker(clock=FakeClock())
    with pytest.raises(ValueError, match=r"group\.id"):
        MemoryConsumer(broker, {"bootstrap.servers": "memory"})
    closed = consumer(broker)
    closed.close()
    closed.close()  # idempotent, as the client's
    with pytest.raises(RuntimeError, match="closed"):
        closed.assignment()


def test_lost_partitions_go_to_on_revoke_when_there_is_no_on_lost() -> None:
    """confluent-kafka's `subscribe` documents it: "If not specified, lost partition events
    will be delivered to on_revoke, if specified"."""
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t", 2)
    revoked: list[list[int]] = []

    def on_revoke(member: Any, partitions: list[Any]) -> None:
        revoked.append(sorted(tp.partition for tp in partitions))
        member.incremental_unassign(partitions)

    lapsing = consumer(broker)
    lapsing.subscribe(["t"], on_revoke=on_revoke)
    lapsing.consume()
    broker.expire_member("g", lapsing.memberid())
    errors = [m.error().code() for m in lapsing.consume(10) if m.error() is not None]
    assert errors == [KafkaError._MAX_POLL_EXCEEDED]
    assert revoked == [[0, 1]]
    assert {tp.partition for tp in lapsing.assignment()} == {0, 1}  # joined again, given back


# -- groups under every history ------------------------------------------------------------
Step = tuple[str, int]  # ("join" | "leave" | "expire" | "poll", member index)
steps = st.lists(
    st.tuples(st.sampled_from(["join", "leave", "expire", "poll", "poll"]), st.integers(0, 3)),
    max_size=30,
)


@PROPS
@given(partitions=st.integers(1, 7), history=steps)
def test_a_partition_never_has_two_owners_and_a_settled_group_is_balanced(
    partitions: int, history: list[Step]
) -> None:
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t", partitions)
    members: dict[int, MemoryConsumer] = {}
    # A member whose session expired still holds its partitions locally until its next poll
    # tells it (a zombie, as on a real broker: see the contract's lapsed member); fencing, not
    # the assignment, keeps its writes out. Its view is not the group's until then.
    lapsed: set[int] = set()

    def check_single_owner() -> None:
        seen: list[int] = []
        for index, member in members.items():
            if index not in lapsed:
                seen.extend(tp.partition for tp in member.assignment())
        assert len(seen) == len(set(seen)), f"a partition owned twice: {sorted(seen)}"

    for action, index in history:
        if action == "join" and index not in members:
            members[index] = consumer(broker)
            members[index].subscribe(["t"])
        elif action == "leave" and index in members:
            members.pop(index).close()
            lapsed.discard(index)
        elif action == "expire" and index in members:
            broker.expire_member("g", members[index].memberid())
            lapsed.add(index)
        elif action == "poll" and index in members:
            members[index].consume(10)
            lapsed.discard(index)
        check_single_owner()
    for _ in range(4):  # settle: every member polls; a cooperative rebalance needs two rounds
        for index, member in members.items():
            member.consume(10)
            lapsed.discard(index)
            check_single_owner()
    if members:
        counts = [len(m.assignment()) for m in members.values()]
        assert sum(counts) == partitions
        assert max(counts) - min(counts) <= 1


def test_a_joining_member_takes_only_what_balance_needs() -> None:
    broker = MemoryBroker(clock=FakeClock())
    broker.create_topic("t", 6)
    first, second = consumer(broker), consumer(broker)
    first.subscribe(["t"])
    first.consume()
    second.subscribe(["t"])
    for _ in range(2):
        first.consume()
        second.consume()
    before = {tp.partition for tp in first.assignment()}
    third = consumer(broker)
    third.subscribe(["t"])
    for _ in range(2):
        for member in (first, second, third):
            member.consume()
    after = {tp.partition for tp in first.assignment()}
    assert len(before) == 3 and len(after) == 2 and after < before  # kept two of its own
    assert sorted(len(m.assignment()) for m in (first, second, third)) == [2, 2, 2]
