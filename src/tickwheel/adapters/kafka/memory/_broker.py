"""The in-memory broker: topics, the transaction coordinator and the group coordinator, all in
one object that the fake clients share. No threads and no sleeping: everything happens inside
the client call that causes it, and time is whatever the injected clock says."""

from __future__ import annotations

import random
from collections.abc import Iterable

from confluent_kafka import KafkaError

from tickwheel.adapters.kafka.memory._errors import kafka_exception
from tickwheel.adapters.kafka.memory._groups import Group
from tickwheel.adapters.kafka.memory._log import PartitionKey, PartitionLog, Topic, Transaction
from tickwheel.adapters.kafka.memory._messages import (
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
)
from tickwheel.adapters.kafka.partitioner import murmur2
from tickwheel.clock import Clock, SystemClock
from tickwheel.topology import TopicSpec


class MemoryBroker:
    """One Kafka cluster in memory. Create topics first (`create_topic`, `create_topics`); the
    clients of `tickwheel.adapters.kafka.memory` take the broker instead of a bootstrap address.
    `rng` places records without a key (librdkafka's murmur2_random picks a random partition)."""

    def __init__(self, clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random(0)
        self.topics: dict[str, Topic] = {}
        self.groups: dict[str, Group] = {}
        # transactional id -> (current epoch, its open transaction)
        self._epochs: dict[str, int] = {}
        self._open: dict[str, Transaction] = {}
        # group id -> why its members' clients failed for good (`fail_group_members`)
        self.failed_groups: dict[str, str] = {}

    # -- topics ----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, compacted: bool = False) -> None:
        if name in self.topics:
            raise kafka_exception(
                KafkaError.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            )
        if partitions < 1:
            raise kafka_exception(KafkaError.INVALID_PARTITIONS, "partitions must be >= 1")
        self.topics[name] = Topic(name, [PartitionLog() for _ in range(partitions)], compacted)

    def create_topics(self, specs: Iterable[TopicSpec]) -> None:
        """Every declared topic (`tickwheel.topology.load_topology()`), as `apply_topology`
        creates them on a cluster; existing ones are left alone."""
        for spec in specs:
            if spec.name not in self.topics:
                compacted = "compact" in spec.cleanup_policy
                self.create_topic(spec.name, spec.partitions, compacted)

    def metadata(self, topic: str | None = None) -> ClusterMetadata:
        """What `list_topics` answers: the topic asked about (or all of them), an unknown one
        with the broker's error and no partitions."""
        names = [topic] if topic is not None else sorted(self.topics)
        topics: dict[str, TopicMetadata] = {}
        for name in names:
            found = self.topics.get(name)
            if found is None:
                reason = "Broker: Unknown topic or partition"
                error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, reason)
                topics[name] = TopicMetadata(name, {}, error)
            else:
                parts = {p: PartitionMetadata(p) for p in range(len(found.logs))}
                topics[name] = TopicMetadata(name, parts)
        return ClusterMetadata(topics)

    def topic(self, name: str) -> Topic:
        self.expire_transactions()
        try:
            return self.topics[name]
        except KeyError:
            raise kafka_exception(
                KafkaError.UNKNOWN_TOPIC_OR_PART, f"Broker: Unknown topic or partition ({name})"
            ) from None

    def log(self, topic: str, partition: int) -> PartitionLog:
        return self.topic(topic).log(partition)

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def partition_for(self, topic: str, key: bytes | None) -> int:
        """librdkafka's `murmur2_random`: Java's partitioner for a key, random without one."""
        count = len(self.topic(topic).logs)
        if key is None:
            return self.rng.randrange(count)
        return (murmur2(key) & 0x7FFFFFFF) % count

    # -- transactions ----------------------------------------------------------------------
    def init_producer(self, transactional_id: str) -> int:
        """InitProducerId: abort the id's open transaction (a zombie's) and start a new epoch,
        which fences every producer of an older one."""
        stale = self._open.pop(transactional_id, None)
        if stale is not None:
            self._finish(stale, commit=False)
        epoch = self._epochs.get(transactional_id, -1) + 1
        self._epochs[transactional_id] = epoch
        return epoch

    def epoch(self, transactional_id: str) -> int:
        return self._epochs.get(transactional_id, -1)

    def begin(self, transactional_id: str, epoch: int, timeout_ms: int) -> Transaction:
        transaction = Transaction(transactional_id, epoch, deadline_ms=self.now_ms() + timeout_ms)
        self._open[transactional_id] = transaction
        return transaction

    def expire_transactions(self) -> None:
        """The coordinator's transaction timeout: a transaction open past its producer's
        `transaction.timeout.ms` (by the injected clock) is aborted and its epoch bumped, so
        its producer is fenced, as a real broker does it (KIP-588). Checked on every client
        call that reads or writes, instead of by a thread."""
        now = self.now_ms()
        due = [t for t in self._open.values() if now >= t.deadline_ms]
        for transaction in due:
            del self._open[transaction.transactional_id]
            epoch = self._epochs.get(transaction.transactional_id, -1)
            self._epochs[transaction.transactional_id] = epoch + 1
        for transaction in due:  # after the bookkeeping: writing a marker comes back here
            self._finish(transaction, commit=False)

    def end(self, transaction: Transaction, commit: bool) -> None:
        if self._open.get(transaction.transactional_id) is transaction:
            del self._open[transaction.transactional_id]
        self._finish(transaction, commit)

    def _finish(self, transaction: Transaction, commit: bool) -> None:
        transaction.state = "committed" if commit else "aborted"
        now = self.now_ms()
        for topic, partition in sorted(transaction.partitions):
            self.log(topic, partition).end_transaction(transaction, now)
        if commit:
            for group_id, offsets in transaction.offsets.items():
                self.group(group_id).committed.update(offsets)

    # -- groups ----------------------------------------------------------------------------
    def group(self, group_id: str) -> Group:
        if group_id not in self.groups:
            self.groups[group_id] = Group(group_id, self._partitions_of)
        return self.groups[group_id]

    def _partitions_of(self, topic: str) -> list[PartitionKey]:
        found = self.topics.get(topic)
        return [] if found is None else [(topic, p) for p in range(len(found.logs))]

    def fail_group_members(self, group_id: str, reason: str) -> None:
        """Every consumer subscribed to the group meets a fatal client error at its next
        consume or poll, as librdkafka reports a static member fenced by another member with
        its `group.instance.id` (`_FATAL`); from then on each of its calls fails."""
        self.failed_groups[group_id] = reason

    def expire_member(self, group_id: str, member_id: str) -> None:
        """The member's session timed out (it stopped polling): the group takes its partitions
        back without waiting for it; its next poll calls `on_lost` and it joins again."""
        self.group(group_id).expire(member_id)
