"""`MemoryClients`: the `KafkaClients` of the in-memory broker, made from the same settings
as the real ones (`consumer_config`; overrides go to the client)."""

from __future__ import annotations

from typing import Any

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.memory._broker import MemoryBroker
from tickwheel.adapters.kafka.memory._consumer import MemoryConsumer
from tickwheel.adapters.kafka.memory._producers import (
    MemoryEventProducer,
    MemoryTransactionalProducer,
)
from tickwheel.adapters.kafka.memory._reader import MemoryPartitionReader


class MemoryClients:
    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker

    def consumer(self, group_id: str, **overrides: Any) -> MemoryConsumer:
        return MemoryConsumer(self.broker, consumer_config(group_id, "memory", **overrides))

    def transactional(self, transactional_id: str, **overrides: Any) -> MemoryTransactionalProducer:
        return MemoryTransactionalProducer(self.broker, transactional_id, **overrides)

    def events(self, **overrides: Any) -> MemoryEventProducer:
        return MemoryEventProducer(self.broker)

    def reader(self) -> MemoryPartitionReader:
        return MemoryPartitionReader(self.broker)
