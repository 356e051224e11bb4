"""The producers of `tickwheel.adapters.kafka.producer` (`EventProducer`,
`TransactionalProducer`), against the in-memory broker: same methods, same exceptions.

`MemoryEventProducer` puts a record in the log at once (the real client delivers it some
milliseconds later). `MemoryTransactionalProducer` keeps its records in a local queue until
`poll`, `flush` or `commit`, the latest moment the real client sends them: an abort before then
purges them, as the real client does when it has not sent them yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
    raw_key = _raw(key)
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
    """`TransactionalProducer` in memory. What it sends waits in a local queue, as in
    librdkafka, until `poll`, `flush` or `commit` delivers it into the log (inside the open
    transaction, so the last stable offset waits for it); `abort` purges what is still queued
    (its delivery reports say `_PURGE_QUEUE`, as the real client's do) and aborts the rest.

    A transaction left open past `transaction.timeout.ms` (by the broker's clock) is aborted
    by the broker and its producer fenced, as a real coordinator does.

    `init()` fences every earlier producer with the same transactional id: the broker aborts
    its open transaction, and the zombie's next flush, send_offsets, commit or abort raises the
    fatal `_FENCED` `KafkaException` (a send after that raises `_FATAL`), as a real broker
    answers it. A zombie's `begin` is local and passes until it has met its fence."""

    def __init__(self, broker: MemoryBroker, transactional_id: str, **overrides: Any) -> None:
        self.transactional_id = transactional_id
        self._broker = broker
        # The real client's setting (tickwheel's transactional_producer_config: 30 s).
        self._timeout_ms = int(overrides.get("transaction.timeout.ms", 30000))
        self._epoch: int | None = None
        self._transaction: Transaction | None = None
        self._fatal: KafkaError | None = None
        self._queued: list[_Queued] = []
        self._reports: list[tuple[DeliveryCallback, KafkaError | None, MemoryMessage]] = []

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
        self._broker.expire_transactions()
        self._transaction = self._broker.begin(self.transactional_id, self._epoch, self._timeout_ms)

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
        self._broker.topic(topic)  # an unknown topic fails here, not at delivery
        self._queued.append(_Queued(topic, key, value, partition, headers, on_delivery))

    def send_offsets(self, consumer: Any, offsets: list[Any]) -> None:
        """Commit the consumer group's `offsets` with the open transaction (and only if it
        commits). A consumer the group has expelled is refused (`UNKNOWN_MEMBER_ID`, the
        transaction must abort), as a real coordinator refuses it."""
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open (begin first)")
        metadata = consumer.consumer_group_metadata()
        if not self._broker.group(metadata.group_id).knows(metadata.member_id):
            # KIP-447: a member the group has expelled (a zombie) may not commit for it.
            raise KafkaException(
                KafkaError(
                    KafkaError.UNKNOWN_MEMBER_ID,
                    "Broker: Unknown member (the group has moved on without this consumer)",
                    txn_requires_abort=True,
                )
            )
        carried = self._transaction.offsets.setdefault(metadata.group_id, {})
        for tp in offsets:
            carried[(tp.topic, tp.partition)] = tp.offset

    def commit(self, timeout: float = 30.0) -> None:
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open")
        self._deliver()
        transaction, self._transaction = self._transaction, None
        self._broker.end(transaction, commit=True)
        self._serve_reports()

    def abort(self, timeout: float = 30.0) -> None:
        self._raise_if_fenced()
        if self._transaction is None:
            raise state_error("no transaction is open")
        purged, self._queued = self._queued, []
        for item in purged:
            if item.on_delivery is not None:
                error = KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue")
                unsent = MemoryMessage(
                    item.topic,
                    max(item.partition, -1),
                    None,
                    _raw(item.key),
                    item.value,
                    item.headers,
                    0,
                )
                self._reports.append((item.on_delivery, error, unsent))
        transaction, self._transaction = self._transaction, None
        self._broker.end(transaction, commit=False)
        self._serve_reports()

    def poll(self, timeout: float = 0.0) -> None:
        if not self._fenced():
            self._deliver()
        self._serve_reports()

    def flush(self, timeout: float = 30.0) -> int:
        if self._queued:
            self._raise_if_fenced()
        self._deliver()
        self._serve_reports()
        return 0

    # -- delivery and fencing --------------------------------------------------------------
    def _deliver(self) -> None:
        queued, self._queued = self._queued, []
        for item in queued:
            message = _append(
                self._broker,
                item.topic,
                item.key,
                item.value,
                item.partition,
                item.headers,
                self._transaction,
            )
            if item.on_delivery is not None:
                self._reports.append((item.on_delivery, None, message))

    def _serve_reports(self) -> None:
        reports, self._reports = self._reports, []
        for callback, error, message in reports:
            callback(error, message)

    def _fenced(self) -> bool:
        self._broker.expire_transactions()
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
            self._queued.clear()
            raise KafkaException(self._fatal)


@dataclass(frozen=True)
class _Queued:
    topic: str
    key: str | None
    value: bytes | None
    partition: int
    headers: list[tuple[str, bytes]] | None
    on_delivery: DeliveryCallback | None


def _raw(key: str | None) -> bytes | None:
    return key.encode() if key is not None else None
