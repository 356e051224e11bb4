"""The producers of `tickwheel.adapters.kafka.producer` (`EventProducer`,
`TransactionalProducer`), against the in-memory broker: same methods, same exceptions.

A record sent is in the log at once (the real client delivers it some milliseconds later);
delivery callbacks still run only from `poll`, `flush` and `commit`, as librdkafka runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from tickwheel.adapters.kafka.memory._broker import MemoryBroker
from tickwheel.adapters.kafka.memory._errors import fenced_error, state_error
from tickwheel.adapters.kafka.memory._log import Transaction
from tickwheel.adapters.kafka.memory._messages import MemoryMessage
from tickwheel.adapters.kafka.producer import ProduceFailed

DeliveryCallback = Callable[[Any, Any], None]


def _append(
    broker: MemoryBroker,
    topic: str,
    key: str | None,
    value: bytes | None,
    partition: int,
    headers: list[tuple[str, bytes]] | None,
    transaction: Transaction | None,
) -> MemoryMessage:
    raw_key = key.encode() if key is not None else None
    if partition < 0:
        partition = broker.partition_for(topic, raw_key)
    log = broker.log(topic, partition)
    stored = tuple(headers) if headers else None
    now = broker.now_ms()
    offset = log.append(raw_key, value, stored, now, transaction)
    if transaction is not None:
        transaction.partitions.add((topic, partition))
    return MemoryMessage(topic, partition, offset, raw_key, value, headers or None, now)


class MemoryEventProducer:
    """`EventProducer` in memory: at least once, keys placed by murmur2; `flush()` raises
    `ProduceFailed` for what could not be delivered (an unknown topic)."""

    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker
        self._errors: list[str] = []

    def send(self, topic: str, key: str | None, value: bytes | None) -> None:
        try:
            _append(self._broker, topic, key, value, -1, None, None)
        except KafkaException as exc:
            self._errors.append(f"{topic}: {exc.args[0]}")

    def flush(self, timeout: float = 30.0) -> None:
        if self._errors:
            errors, self._errors = self._errors, []
            raise ProduceFailed("delivery failed: " + "; ".join(errors[:5]))


class MemoryTransactionalProducer:
    """`TransactionalProducer` in memory. `init()` fences every earlier producer with the same
    transactional id: the broker aborts its open transaction, and the zombie's sends go nowhere
    while its next flush, begin, send_offsets, commit or abort raises the fatal `_FENCED`
    `KafkaException` (a send after that raises `_FATAL`), as a real broker answers it."""

    def __init__(self, broker: MemoryBroker, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self._broker = broker
        self._epoch: int | None = None
        self._transaction: Transaction | None = None
        self._fatal: KafkaError | None = None
        self._deliveries: list[tuple[DeliveryCallback, MemoryMessage]] = []
        self._zombie_sends = 0  # sent after being fenced: they will never be delivered

    def init(self, timeout: float = 30.0) -> None:
        self._raise_if_fatal()
        self._epoch = self._broker.init_producer(self.transactional_id)
        self._transaction = None

    def begin(self) -> None:
        self._raise_if_fatal()
        if self._epoch is None:
            raise state_error("the transactional producer is not initialized (init first)")
        if self._transaction is not None:
            raise state_error("a transaction is already open")
        # Local in librdkafka: a zombie learns nothing here; its next request to the broker
        # does. The open transaction of a fenced epoch is never appended to.
        self._transaction = self._broker.begin(self.transactional_id, self._epoch)

    def send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        partition: int = -1,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        if self._fatal is not None:
            raise KafkaException(KafkaError(KafkaError._FATAL, self._fatal.str(), fatal=True))
        if self._transaction is None:
            raise state_error("no transaction is open (begin first)")
        if self._fenced():
            self._zombie_sends += 1
            return
        message = _append(self._broker, topic, key, value, partition, headers, self._transaction)
        if on_delivery is not None:
            self._deliveries.append((on_delivery, message))

    def send_offsets(self, consumer: Any, offsets: list[Any]) -> None:
        """Commit the consumer group's `offsets` with the open transaction (and only if it
        commits)."""
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open (begin first)")
        group = consumer.consumer_group_metadata().group_id
        carried = self._transaction.offsets.setdefault(group, {})
        for tp in offsets:
            carried[(tp.topic, tp.partition)] = tp.offset

    def commit(self, timeout: float = 30.0) -> None:
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open")
        self._serve_deliveries()
        transaction, self._transaction = self._transaction, None
        self._broker.end(transaction, commit=True)

    def abort(self, timeout: float = 30.0) -> None:
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open")
        self._serve_deliveries()
        transaction, self._transaction = self._transaction, None
        self._broker.end(transaction, commit=False)

    def poll(self, timeout: float = 0.0) -> None:
        self._serve_deliveries()

    def flush(self, timeout: float = 30.0) -> int:
        if self._zombie_sends:
            self._raise_if_fenced()
        self._serve_deliveries()
        return 0

    # -- fencing ---------------------------------------------------------------------------
    def _fenced(self) -> bool:
        return self._epoch is not None and self._broker.epoch(self.transactional_id) > self._epoch

    def _raise_if_fatal(self) -> None:
        if self._fatal is not None:
            raise KafkaException(self._fatal)

    def _raise_if_fenced(self) -> None:
        """A request to the broker: a newer epoch makes this producer fatally fenced."""
        self._raise_if_fatal()
        if self._fenced():
            self._fatal = fenced_error(self.transactional_id)
            self._transaction = None
            self._deliveries.clear()
            raise KafkaException(self._fatal)

    def _serve_deliveries(self) -> None:
        deliveries, self._deliveries = self._deliveries, []
        for callback, message in deliveries:
            callback(None, message)
