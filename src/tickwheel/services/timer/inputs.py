"""The timer's co-partitioned inputs: `timers.commands` and `executions.events`, read by
partition by whoever owns the definitions partition (the group assignor knows nothing of
co-partitioning). Their offsets live in the partition's checkpoint record in timers.state,
written in the same transaction as what they caused (decision 0004).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from tickwheel.adapters.kafka.client import OFFSET_BEGINNING, KafkaException, TopicPartition
from tickwheel.ports.kafka import KafkaClients, KafkaMessage, PartitionReader

# Unread worker events beyond this make lease expiries wait (scheduler.tick, hold_leases).
EVENTS_LAG_LIMIT = 2_000


class PartitionInputs:
    def __init__(
        self,
        clients: KafkaClients[TopicPartition],
        reader: PartitionReader,
        group_id: str,
        commands: str,
        events: str,
    ) -> None:
        """`reader` answers where partitions end: on a cluster its probe is a consumer never
        assigned anything, so it answers at once (a consumer with assignments answers behind
        its fetch long-poll, half a second a question)."""
        self.commands, self.events = commands, events
        self._consumer = clients.consumer(
            f"{group_id}-inputs-unused", **{"enable.auto.offset.store": False}
        )
        self._reader = reader

    def assign(self, partition: int, commands: int | None, events: int | None) -> None:
        def start(offset: int | None) -> int:
            return OFFSET_BEGINNING if offset is None else offset

        self._consumer.incremental_assign(
            [
                TopicPartition(self.commands, partition, start(commands)),
                TopicPartition(self.events, partition, start(events)),
            ]
        )

    def unassign(self, partition: int) -> None:
        with contextlib.suppress(KafkaException):
            self._consumer.incremental_unassign(
                [TopicPartition(self.commands, partition), TopicPartition(self.events, partition)]
            )

    def consume(self, limit: int) -> Sequence[KafkaMessage]:
        """What is fetched already, up to `limit`, without waiting."""
        return self._consumer.consume(limit, 0)

    def poll(self, timeout_s: float) -> KafkaMessage | None:
        """The first input to arrive within `timeout_s` (woken as it arrives), or None."""
        return self._consumer.poll(timeout_s)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(low, high) offsets of any topic's partition, asked of the broker."""
        return self._reader.watermarks(topic, partition)

    def events_behind(self, partition: int) -> bool:
        """Whether worker events of `partition` wait unread beyond EVENTS_LAG_LIMIT (from what
        the consumer knows locally: no request to the broker)."""
        tp = TopicPartition(self.events, partition)
        try:
            _low, high = self._consumer.get_watermark_offsets(tp, cached=True)
            position = self._consumer.position([tp])[0].offset
        except KafkaException:
            return False
        return bool(high >= 0 and position >= 0 and high - position > EVENTS_LAG_LIMIT)

    def close(self) -> None:
        self._consumer.close()
