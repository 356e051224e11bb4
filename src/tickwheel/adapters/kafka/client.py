"""The confluent-kafka names the services use, imported here so that this package stays the
only importer of the client library (an import-linter contract enforces it)."""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

__all__ = ["OFFSET_BEGINNING", "Consumer", "KafkaError", "KafkaException", "TopicPartition"]
