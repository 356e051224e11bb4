"""Producers: a plain one for definitions and events, and a transactional one for the
exactly-once paths (the timer's emit + state + offsets in one transaction)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from tickwheel.adapters.kafka.config import producer_config, transactional_producer_config
from tickwheel.adapters.kafka.fatal import raise_on_fatal_error
from tickwheel.errors import TickwheelError
from tickwheel.ports.kafka import GroupConsumer


class ProduceFailed(TickwheelError, RuntimeError):
    """A record could not be delivered."""


class EventProducer:
    """At-least-once producer with idempotence on; `flush()` raises if any delivery failed."""

    def __init__(self, bootstrap: str | None = None, **overrides: Any) -> None:
        # A fatal error (a broken idempotent sequence) is raised from the next poll or flush
        # rather than logged while every later send fails (decision 0200).
        config = producer_config(bootstrap, **{"error_cb": raise_on_fatal_error, **overrides})
        self._producer = Producer(config)
        self._errors: list[str] = []

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._errors.append(f"{msg.topic()}: {err}")

    def send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        on_delivery: Callable[[Any, Any], None] | None = None,
    ) -> None:
        while True:
            try:
                self._producer.produce(
                    topic,
                    key=key.encode() if key is not None else None,
                    value=value,
                    on_delivery=on_delivery or self._on_delivery,
                )
                break
            except BufferError:
                # The local queue is full: serve delivery reports until there is room.
                self._producer.poll(0.05)
        self._producer.poll(0)

    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery reports for up to `timeout` s (a report ends the wait); how many."""
        served: int = self._producer.poll(timeout)
        return served

    def flush(self, timeout: float = 30.0) -> None:
        remaining = self._producer.flush(timeout)
        if remaining:
            raise ProduceFailed(f"{remaining} records not delivered within {timeout}s")
        if self._errors:
            errors, self._errors = self._errors, []
            raise ProduceFailed("delivery failed: " + "; ".join(errors[:5]))

    def deliver(
        self, topic: str, key: str | None, value: bytes | None, timeout: float = 30.0
    ) -> None:
        """Send one record and wait for its own acknowledgement. Unlike `flush`, which waits
        until nothing is in flight (other threads' records too), concurrent callers each wait
        for their record only, and their records share batches. Raises ProduceFailed."""
        self.deliver_all(topic, [(key, value)], timeout)

    def deliver_all(
        self,
        topic: str,
        records: Sequence[tuple[str | None, bytes | None]],
        timeout: float = 30.0,
    ) -> None:
        """Send `records` (key, value) together and wait for their own acknowledgements, all of
        them: a batch costs one wait, not one per record. Raises ProduceFailed."""
        done = threading.Event()
        failures: list[Any] = []
        pending = [len(records)]

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(err)
            pending[0] -= 1
            if pending[0] == 0:
                done.set()

        for key, value in records:
            self.send(topic, key, value, on_delivery=delivered)
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        deadline = time.monotonic() + timeout
        while records and not done.is_set():
            if time.monotonic() > deadline:
                raise ProduceFailed(f"{topic}: not delivered within {timeout}s")
            # Short polls: another caller's poll may serve these records' reports.
            self._producer.poll(0.005)
        if failures:
            raise ProduceFailed(f"{topic}: delivery failed: {failures[0]}")


class TransactionalProducer:
    """One Kafka transactional producer. `init()` fences any earlier producer with the same
    transactional id (a zombie's open transaction is aborted and its later writes rejected)."""

    def __init__(self, transactional_id: str, bootstrap: str | None = None, **overrides: Any):
        self.transactional_id = transactional_id
        self._producer = Producer(
            transactional_producer_config(transactional_id, bootstrap, **overrides)
        )

    def init(self, timeout: float = 30.0) -> None:
        self._producer.init_transactions(timeout)

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        partition: int = -1,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: Callable[[Any, Any], None] | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {}
        if partition >= 0:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = headers
        if on_delivery is not None:
            kwargs["on_delivery"] = on_delivery
        while True:
            try:
                self._producer.produce(
                    topic, key=key.encode() if key is not None else None, value=value, **kwargs
                )
                return
            except BufferError:
                self._producer.poll(0.05)

    def send_offsets(
        self, consumer: GroupConsumer[TopicPartition], offsets: list[TopicPartition]
    ) -> None:
        """Commit consumed input offsets inside the open transaction (KIP-447 group metadata:
        a consumer of an older group generation is fenced)."""
        self._producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())

    def commit(self, timeout: float = 30.0) -> None:
        self._producer.commit_transaction(timeout)

    def abort(self, timeout: float = 30.0) -> None:
        self._producer.abort_transaction(timeout)

    def poll(self, timeout: float = 0.0) -> None:
        self._producer.poll(timeout)

    def flush(self, timeout: float = 30.0) -> int:
        remaining: int = self._producer.flush(timeout)
        return remaining


_FENCED_CODES = {
    KafkaError._FENCED,
    KafkaError._FATAL,  # what produce() raises once the producer has hit a fatal (fencing) error
    KafkaError.PRODUCER_FENCED,
    KafkaError.INVALID_PRODUCER_EPOCH,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def is_fatal(exc: KafkaException) -> bool:
    """A fenced or otherwise fatal producer error: the producer must be dropped, not retried."""
    error = exc.args[0] if exc.args else None
    if not isinstance(error, KafkaError):
        return False
    return bool(error.fatal()) or error.code() in _FENCED_CODES
