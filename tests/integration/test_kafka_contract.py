"""The Kafka port's contract, producer side (consumer side: `test_kafka_contract_consumers.py`):
the same assertions against the real local broker (here) and the in-memory broker
(`tests/unit/adapters/kafka/test_memory_kafka_contract.py` runs these very functions with a memory `cluster`). This suite is what makes the fake trustworthy: a behaviour the services
rely on belongs here, checked against both, before a unit test may rely on the fake for it.

Where the two differ on purpose it is timing only: the real broker delivers and rebalances
within seconds, the fake within the call. Every wait below is a bounded loop of `consume`
calls (`drive`), so the same assertion holds for both; the fake needs one or two rounds.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tickwheel.adapters.kafka.broker_clients import BrokerClients, KafkaPartitionReader
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.producer import is_fatal
from tickwheel.ports.kafka import KafkaMessage

pytestmark = pytest.mark.integration

MAX_ROUNDS = 600  # consume calls per consumer in one wait, whatever the clock says
MAX_WAIT_S = 60.0
# The broker's floor for a session (group.min.session.timeout.ms, 6 s by default).
LAPSE_MS = 6000


class BrokerCluster:
    """The real local broker: the clients services use (`BrokerClients`), on fresh topics."""

    kind = "broker"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.clients = BrokerClients(bootstrap)
        self._consumers: list[Any] = []
        self._readers: list[KafkaPartitionReader] = []

    def create_topic(self, name: str, partitions: int = 1, compacted: bool = False) -> None:
        config = {"cleanup.policy": "compact"} if compacted else {}
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)])
        for future in futures.values():
            future.result(30)
        # A topic just created may have no leader for a moment: ask until every partition has.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            topic = admin.list_topics(name, timeout=10).topics.get(name)
            ready = topic is not None and len(topic.partitions) == partitions
            if ready and all(p.leader >= 0 for p in topic.partitions.values()):
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {name} has no leader after 30s")

    def consumer(self, group: str, **overrides: Any) -> Any:
        consumer = self.clients.consumer(group, **overrides)
        self._consumers.append(consumer)
        return consumer

    def lapsing_consumer(self, group: str) -> Any:
        """A consumer the group gives up on soon after it stops polling (librdkafka leaves the
        group once `max.poll.interval.ms` passes without a poll)."""
        return self.consumer(group, **{"max.poll.interval.ms": LAPSE_MS,
                                       "session.timeout.ms": LAPSE_MS})  # fmt: skip

    def lapse(self, consumer: Any) -> None:
        """Nothing to do: not polling `consumer` is the lapse; the group notices by itself."""

    def producer(self) -> Any:
        return self.clients.events()

    def transactional(self, transactional_id: str, **overrides: Any) -> Any:
        return self.clients.transactional(transactional_id, **overrides)

    def let_time_pass(self, seconds: float) -> None:
        """Nothing to do: the broker's clock runs by itself, and `drive` waits for it."""

    def reader(self) -> Any:
        reader = self.clients.reader()
        self._readers.append(reader)
        return reader

    def close(self) -> None:
        for consumer in self._consumers:
            with contextlib.suppress(RuntimeError):  # closed by the test itself
                consumer.close()
        for reader in self._readers:
            reader.close()


def broker_cluster(bootstrap: str) -> Iterator[BrokerCluster]:
    """The `cluster` fixture's body, shared by the contract's modules."""
    cluster = BrokerCluster(bootstrap)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(kafka_bootstrap: str) -> Iterator[Any]:
    yield from broker_cluster(kafka_bootstrap)


def name(what: str) -> str:
    return f"contract.{what}.{uuid.uuid4().hex[:8]}"


def drive(
    consumers: Sequence[Any],
    until: Callable[[], bool],
    into: dict[int, list[Any]] | None = None,
    errors: list[int] | None = None,
    always: Callable[[], bool] = lambda: True,
) -> None:
    """Call `consume` on every consumer until `until()` holds: at most MAX_ROUNDS rounds and
    MAX_WAIT_S seconds. Messages land in `into[index of the consumer]`, the codes of error
    messages in `errors`; `always()` must hold after every call."""
    deadline = time.monotonic() + MAX_WAIT_S
    for _ in range(MAX_ROUNDS):
        if until():
            return
        for index, consumer in enumerate(consumers):
            messages = consumer.consume(100, 0.1)
            if into is not None:
                into.setdefault(index, []).extend(m for m in messages if m.error() is None)
            if errors is not None:
                errors.extend(m.error().code() for m in messages if m.error() is not None)
            assert always(), "an invariant broke while the consumers polled"
        if not consumers:
            time.sleep(0.1)  # waiting on the broker alone: ask again in a moment
        if time.monotonic() > deadline:
            break
    assert until(), "the condition did not hold within the bounded wait"


def send_all(cluster: Any, topic: str, records: Sequence[tuple[str, bytes | None]]) -> None:
    """Send (key, value) pairs with a plain producer, delivered once this returns."""
    producer = cluster.producer()
    for key, value in records:
        producer.send(topic, key, value)
    producer.flush(30)


def numbered(count: int) -> list[tuple[str, bytes | None]]:
    """`count` records of one key, valued b"0", b"1", ..."""
    return [("k", f"{i}".encode()) for i in range(count)]


def read_values(cluster: Any, topic: str) -> list[bytes | None]:
    return [record.value for record in cluster.reader().read_to_end(topic)]


def positions(consumer: Any, topic: str, partition: int = 0) -> int:
    return int(consumer.position([TopicPartition(topic, partition)])[0].offset)


# -- order and placement -------------------------------------------------------------------
def _produce_keyed(cluster: Any, topic: str) -> list[tuple[str, bytes]]:
    sent = [(f"job-{i % 7}", f"{i}".encode()) for i in range(35)]
    send_all(cluster, topic, sent)
    return sent


def _consume_all(cluster: Any, topic: str, partitions: int, count: int) -> list[Any]:
    consumer = cluster.consumer(name("order"))
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got: dict[int, list[Any]] = {}
    drive([consumer], lambda: len(got.get(0, [])) >= count, got)
    return got[0]


def test_each_partition_is_consumed_in_the_order_it_was_produced(cluster: Any) -> None:
    topic = name("order")
    cluster.create_topic(topic, partitions=3)
    sent = _produce_keyed(cluster, topic)
    messages = _consume_all(cluster, topic, 3, len(sent))
    assert len(messages) == len(sent)
    for p in range(3):
        offsets = [m.offset() for m in messages if m.partition() == p]
        assert offsets == sorted(offsets) == list(range(len(offsets)))
    for key in {k for k, _ in sent}:
        assert [m.value() for m in messages if m.key() == key.encode()] == [
            v for k, v in sent if k == key
        ]


def test_a_key_lands_on_its_murmur2_partition(cluster: Any) -> None:
    topic = name("keys")
    cluster.create_topic(topic, partitions=3)
    sent = _produce_keyed(cluster, topic)
    messages: Sequence[KafkaMessage] = _consume_all(cluster, topic, 3, len(sent))
    placed = {(m.key() or b"").decode(): m.partition() for m in messages}
    assert placed == {key: partition_for(key, 3) for key, _ in sent}
    assert len(set(placed.values())) > 1  # the keys chosen do spread: the check can fail


# -- transactions ----------------------------------------------------------------------------
def test_read_committed_hides_open_and_aborted_transactions(cluster: Any) -> None:
    topic = name("txn")
    cluster.create_topic(topic)
    open_txn = cluster.transactional(name("open"))
    open_txn.init()
    open_txn.begin()
    open_txn.send(topic, "k", b"open-1", partition=0)
    open_txn.send(topic, "k", b"open-2", partition=0)
    assert open_txn.flush(30) == 0  # in the log, not committed
    plain = cluster.producer()
    plain.send(topic, "k", b"plain")
    plain.flush(30)

    committed = cluster.consumer(name("rc"))
    uncommitted = cluster.consumer(name("ru"), **{"isolation.level": "read_uncommitted"})
    for consumer in (committed, uncommitted):
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: dict[int, list[Any]] = {}
    drive([committed, uncommitted], lambda: len(got.get(1, [])) == 3, got)
    # The last stable offset waits at the open transaction's first record, ahead of `plain`.
    assert got.get(0, []) == []
    assert committed.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 0)
    assert [m.value() for m in got[1]] == [b"open-1", b"open-2", b"plain"]
    assert read_values(cluster, topic) == []

    open_txn.abort()
    drive([committed], lambda: len(got.get(0, [])) == 1, got)
    assert [m.value() for m in got[0]] == [b"plain"]
    # The abort marker takes an offset: 2 aborted records, plain, the marker.
    assert committed.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 4)
    assert read_values(cluster, topic) == [b"plain"]

    later = cluster.transactional(name("later"))
    later.init()
    later.begin()
    later.send(topic, "k", b"committed", partition=0)
    later.commit()
    drive([committed], lambda: len(got.get(0, [])) == 2, got)
    assert [m.value() for m in got[0]] == [b"plain", b"committed"]
    assert read_values(cluster, topic) == [b"plain", b"committed"]
    drive([committed], lambda: positions(committed, topic) == 6)  # past the commit marker


def test_a_new_producer_with_the_same_transactional_id_fences_the_zombie(cluster: Any) -> None:
    topic = name("fence")
    cluster.create_topic(topic)
    transactional_id = name("owner")
    zombie = cluster.transactional(transactional_id)
    zombie.init()
    zombie.begin()
    zombie.send(topic, "k", b"zombie-1", partition=0)
    zombie.flush(30)

    heir = cluster.transactional(transactional_id)
    heir.init()  # aborts the zombie's open transaction
    zombie.send(topic, "k", b"zombie-2", partition=0)  # buffered; the broker will refuse it
    with pytest.raises(KafkaException) as fenced:
        zombie.commit(10)
    assert is_fatal(fenced.value)
    assert fenced.value.args[0].code() == KafkaError._FENCED
    # Nothing more goes through it. (The real client answers a begin after a failed commit
    # with `_CONFLICT`, and after a failed flush with `_FENCED`: the code is not part of the
    # contract, the refusal is.)
    with pytest.raises(KafkaException):
        zombie.begin()

    heir.begin()
    heir.send(topic, "k", b"heir", partition=0)
    heir.commit()
    assert read_values(cluster, topic) == [b"heir"]


def test_a_transaction_over_two_topics_is_all_or_nothing_with_its_headers(cluster: Any) -> None:
    left, right = name("left"), name("right")
    cluster.create_topic(left, partitions=2)
    cluster.create_topic(right)
    producer = cluster.transactional(name("both"))
    producer.init()
    reports: list[tuple[int | None, tuple[str, int], int | None]] = []

    def note(err: Any, msg: Any) -> None:
        reports.append((err.code() if err else None, (msg.topic(), msg.partition()), msg.offset()))

    def write(outcome: str, flush: bool) -> None:
        producer.begin()
        for partition in (0, 1):
            producer.send(left, "k", outcome.encode(), partition, [("seq", b"1")], note)
        producer.send(right, "k", outcome.encode(), 0, [("seq", b"2")], note)
        if flush:
            assert producer.flush(30) == 0
        if outcome == "abort":
            producer.abort()
        else:
            producer.commit()

    # Aborted before a flush: what the client has not sent yet is purged (`_PURGE_QUEUE`, no
    # offset); what its background thread already sent is in the log and aborted there. On a
    # real client which of the two depends on timing (linger.ms); the fake always purges.
    write("abort", flush=False)
    assert len(reports) == 3
    for code, _where, offset in reports:
        assert (code, offset is None) in ((KafkaError._PURGE_QUEUE, True), (None, False))
    places = [(left, 0), (left, 1), (right, 0)]
    reports.clear()
    # Flushed, then aborted: every record was delivered into the log, then aborted.
    write("abort", flush=True)
    assert sorted((code, where) for code, where, _ in reports) == [(None, p) for p in places]
    aborted_at = {where: offset for _code, where, offset in reports}
    reports.clear()
    # The commit flushes: every delivery report has run once it returns (the timer's request
    # log counts on it), each after the aborted record of its partition.
    write("commit", flush=False)
    assert sorted((code, where) for code, where, _ in reports) == [(None, p) for p in places]
    assert all(offset > aborted_at[where] for _code, where, offset in reports)
    # Partitions are read in no set order (the real consumer fetches them as they come).
    records = sorted(cluster.reader().read_to_end(left), key=lambda r: r.partition) + list(
        cluster.reader().read_to_end(right)
    )
    assert [(r.topic, r.partition, r.value) for r in records] == [
        (left, 0, b"commit"),
        (left, 1, b"commit"),
        (right, 0, b"commit"),
    ]
    assert [r.headers for r in records] == [(("seq", b"1"),), (("seq", b"1"),), (("seq", b"2"),)]
    consumer = cluster.consumer(name("headers"))
    consumer.assign([TopicPartition(right, 0, OFFSET_BEGINNING)])
    got: dict[int, list[Any]] = {}
    drive([consumer], lambda: len(got.get(0, [])) == 1, got)
    assert got[0][0].headers() == [("seq", b"2")]


def test_offsets_sent_to_a_transaction_commit_with_it_and_not_without(cluster: Any) -> None:
    source, sink = name("source"), name("sink")
    cluster.create_topic(source)
    cluster.create_topic(sink)
    group = name("group")
    consumer = cluster.consumer(group)
    consumer.assign([TopicPartition(source, 0, OFFSET_BEGINNING)])
    tp = TopicPartition(source, 0)
    producer = cluster.transactional(name("eos"))
    producer.init()

    producer.begin()
    producer.send(sink, "k", b"aborted", partition=0)
    producer.send_offsets(consumer, [TopicPartition(source, 0, 5)])
    producer.abort()
    assert consumer.committed([tp], timeout=10)[0].offset < 0  # nothing committed

    producer.begin()
    producer.send(sink, "k", b"committed", partition=0)
    producer.send_offsets(consumer, [TopicPartition(source, 0, 7)])
    producer.commit()
    drive([], lambda: consumer.committed([tp], timeout=10)[0].offset == 7)
    assert read_values(cluster, sink) == [b"committed"]


def test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_fenced(
    cluster: Any,
) -> None:
    topic, transactional_id = name("timeout"), name("stalled")
    cluster.create_topic(topic)
    stalled = cluster.transactional(transactional_id, **{"transaction.timeout.ms": 2000})
    stalled.init()
    stalled.begin()
    stalled.send(topic, "k", b"stalled", partition=0)
    stalled.flush(30)
    consumer = cluster.consumer(name("rc"))
    tp = TopicPartition(topic, 0)
    assert consumer.get_watermark_offsets(tp, timeout=10) == (0, 0)
    cluster.let_time_pass(3.0)  # the producer does nothing meanwhile (a stopped process)
    # The broker aborts it by itself: the stable offset passes the record and its marker.
    drive([], lambda: consumer.get_watermark_offsets(tp, timeout=10) == (0, 2))
    assert read_values(cluster, topic) == []
    with pytest.raises(KafkaException) as fenced:
        stalled.commit(10)
    assert is_fatal(fenced.value)
    assert fenced.value.args[0].code() == KafkaError._FENCED
    heir = cluster.transactional(transactional_id)
    heir.init()
    heir.begin()
    heir.send(topic, "k", b"heir", partition=0)
    heir.commit()
    assert read_values(cluster, topic) == [b"heir"]
