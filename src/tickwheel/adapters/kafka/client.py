"""The confluent-kafka names the services use, imported here so that this package stays the
only importer of the client library (an import-linter contract enforces it).

`Consumer` is the client's consumer with the fatal-error guard (`fatal.GuardedConsumer`): no
consume loop can skip a fatal error as it skips a passing one (decision 0200)."""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from tickwheel.adapters.kafka.fatal import FatalClientError
from tickwheel.adapters.kafka.fatal import GuardedConsumer as Consumer

__all__ = [
    "OFFSET_BEGINNING",
    "Consumer",
    "FatalClientError",
    "KafkaError",
    "KafkaException",
    "TopicPartition",
]
