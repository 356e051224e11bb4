"""Follow topics from their end, without a consumer group: live views such as the demo."""

from __future__ import annotations

import uuid

from confluent_kafka import OFFSET_END, TopicPartition

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.fatal import GuardedConsumer as Consumer


class Tail:
    def __init__(self, topics: list[str], bootstrap: str | None = None) -> None:
        self._consumer = Consumer(consumer_config(f"tickwheel-tail-{uuid.uuid4()}", bootstrap))
        assignment = []
        for topic in topics:
            metadata = self._consumer.list_topics(topic, timeout=10)
            for partition in sorted(metadata.topics[topic].partitions):
                assignment.append(TopicPartition(topic, partition, OFFSET_END))
        self._consumer.assign(assignment)

    def poll(self, timeout: float) -> list[bytes]:
        return [
            m.value() for m in self._consumer.consume(500, timeout) if not m.error() and m.value()
        ]

    def close(self) -> None:
        self._consumer.close()
