"""Client settings shared by every tickwheel Kafka producer and consumer."""

from __future__ import annotations

import os
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def bootstrap_servers() -> str:
    """`KAFKA_BOOTSTRAP_SERVERS` points everything at an existing cluster."""
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP)


def producer_config(bootstrap: str | None = None, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        # Java-compatible partitioning, so Java and Python producers place a key on the same
        # partition (confluent-kafka's default, consistent_random, does not).
        "partitioner": "murmur2_random",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "compression.type": "lz4",
    }
    config.update(overrides)
    return config


def transactional_producer_config(
    transactional_id: str, bootstrap: str | None = None, **overrides: Any
) -> dict[str, Any]:
    return producer_config(
        bootstrap,
        **{"transactional.id": transactional_id, "transaction.timeout.ms": 30000, **overrides},
    )


def consumer_config(
    group_id: str, bootstrap: str | None = None, **overrides: Any
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        "group.id": group_id,
        # Only committed transactional writes are visible: the exactly-once trigger depends on it.
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
    }
    config.update(overrides)
    return config
