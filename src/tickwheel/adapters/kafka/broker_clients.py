"""The Kafka port over a real cluster: `BrokerClients` makes the clients a service uses
(`KafkaClients`), and `KafkaPartitionReader` is the `PartitionReader` (`read_to_end`,
`watermarks` and `partition_count` of `tickwheel.adapters.kafka.reader`, bound to one bootstrap
address). The in-memory twin is `tickwheel.adapters.kafka.memory.MemoryClients`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.fatal import GuardedConsumer as Consumer
from tickwheel.adapters.kafka.producer import EventProducer, TransactionalProducer
from tickwheel.adapters.kafka.reader import Record, partition_count, read_to_end, watermarks

# How long `watermarks` keeps asking (a leader moving after a broker died takes the brokers'
# session timeout), and how long one probe is given before a new one asks instead.
PROBE_WITHIN_S = 30.0
PROBE_RETRY_S = 5.0


class KafkaPartitionReader:
    def __init__(self, bootstrap: str | None = None, timeout: float = 120.0) -> None:
        self._bootstrap = bootstrap
        self._timeout = timeout
        self._probe: Consumer | None = None

    def partition_count(self, topic: str) -> int:
        return partition_count(topic, self._bootstrap)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(low, last stable offset), asked of the broker by a consumer never assigned
        anything (it answers at once)."""
        deadline = time.monotonic() + PROBE_WITHIN_S
        while True:
            if self._probe is None:
                group = f"tickwheel-watermarks-{uuid.uuid4()}"
                self._probe = Consumer(consumer_config(group, self._bootstrap))
            try:
                return watermarks(self._probe, TopicPartition(topic, partition), PROBE_RETRY_S)
            except KafkaException:
                # A probe that keeps failing is dropped, not asked again: after a broker of a
                # cluster died or was replaced, a long-lived probe answered "unknown partition"
                # or timed out for its whole 30 s while a new client saw the partition at once.
                self.close()
                if time.monotonic() >= deadline:
                    raise

    def read_to_end(
        self,
        topic: str,
        partitions: list[int] | None = None,
        from_offsets: Mapping[int, int] | None = None,
    ) -> Iterator[Record]:
        offsets = dict(from_offsets) if from_offsets is not None else None
        return read_to_end(topic, partitions, self._bootstrap, self._timeout, from_offsets=offsets)

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None


class BrokerClients:
    """The clients of one cluster, made with tickwheel's settings (`consumer_config`,
    `transactional_producer_config`, `producer_config`); overrides go to the client."""

    def __init__(self, bootstrap: str | None = None) -> None:
        self.bootstrap = bootstrap

    def consumer(self, group_id: str, **overrides: Any) -> Consumer:
        return Consumer(consumer_config(group_id, self.bootstrap, **overrides))

    def transactional(self, transactional_id: str, **overrides: Any) -> TransactionalProducer:
        return TransactionalProducer(transactional_id, self.bootstrap, **overrides)

    def events(self, **overrides: Any) -> EventProducer:
        return EventProducer(self.bootstrap, **overrides)

    def reader(self) -> KafkaPartitionReader:
        return KafkaPartitionReader(self.bootstrap)
