"""The client's own exceptions, raised the way librdkafka raises them, so that code written
against the port (and `is_fatal`) cannot tell the fake from the real client."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException


def kafka_exception(code: int, reason: str, fatal: bool = False) -> KafkaException:
    return KafkaException(KafkaError(code, reason, fatal=fatal))


def fenced_error(transactional_id: str) -> KafkaError:
    """What a zombie producer meets once a newer producer with its transactional id has run
    `init` (librdkafka's `_FENCED`, fatal; seen on a real broker: flush, begin, commit, abort)."""
    return KafkaError(
        KafkaError._FENCED,
        f"Broker: Producer attempted an operation with an old epoch ({transactional_id}): "
        "transactional producer fenced by newer producer instance",
        fatal=True,
    )


def state_error(reason: str) -> KafkaException:
    return kafka_exception(KafkaError._STATE, f"Local: Erroneous state: {reason}")
