"""The Kafka port: what tickwheel's services ask of Kafka, as Protocols.

Two implementations satisfy it, and one contract suite holds them to the same behaviour
(`tests/integration/test_kafka_contract*.py`):

- the real client: `confluent_kafka.Consumer` as a `GroupConsumer`, `TransactionalProducer` and
  `EventProducer` (`tickwheel.adapters.kafka.producer`), `KafkaPartitionReader` and
  `BrokerClients`, which makes them all (`tickwheel.adapters.kafka.broker_clients`);
- the in-memory broker shipped in the package (`tickwheel.adapters.kafka.memory`), for a unit
  tier that runs the services without a broker.

The port names no client type: it is generic in the topic-partition type `P` (both
implementations use `confluent_kafka.TopicPartition`, re-exported by
`tickwheel.adapters.kafka.client`), and errors are the client's `KafkaException` carrying a
`KafkaError`, seen here through `BrokerError`. Method names and signatures are the client's, so
a service moves onto the port by changing an annotation, not its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar, overload


class PartitionOffset(Protocol):
    """A topic, a partition and an offset (`TopicPartition`). Offsets below zero are the
    client's logical ones: -2 beginning, -1 end, -1001 invalid (not known, not committed)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...


P = TypeVar("P", bound=PartitionOffset)

# The header shapes the client accepts and returns (a list of pairs is what it returns).
HeaderValue = str | bytes | None
Headers = Mapping[str, HeaderValue] | Sequence[tuple[str, HeaderValue]]


class BrokerError(Protocol):
    """What a `KafkaException` carries (`exc.args[0]`, a `KafkaError`)."""

    def code(self) -> int: ...
    def name(self) -> str: ...
    def str(self) -> str: ...
    def fatal(self) -> bool: ...
    def retriable(self) -> bool: ...
    def txn_requires_abort(self) -> bool: ...


class KafkaMessage(Protocol):
    """One message from `consume`/`poll`, or handed to a delivery callback."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def headers(self) -> Headers | None: ...
    def timestamp(self) -> tuple[int, int]:
        """(timestamp type, milliseconds since the epoch); type 1 is the producer's time."""
        ...

    def error(self) -> BrokerError | None: ...


class TopicView(Protocol):
    """One topic of `list_topics`: its partitions by id, and an error if it does not exist."""

    @property
    def partitions(self) -> Mapping[int, object]: ...
    @property
    def error(self) -> BrokerError | None: ...


class ClusterView(Protocol):
    """What `list_topics` answers: the topics asked about (or all of them), by name."""

    @property
    def topics(self) -> Mapping[str, TopicView]: ...


class GroupConsumer(Protocol[P]):
    """A consumer: in a group (`subscribe`, cooperative-sticky: partitions move one by one,
    with `on_revoke` before `on_assign`, both called from inside `consume`/`poll`) or assigned
    by hand (`assign`). `read_committed` consumers stop at the last stable offset and never see
    an aborted record. Positions are -1001 until the consumer has read past something after an
    assign or a seek."""

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[[GroupConsumer[P], list[P]], None] | None = None,
        on_revoke: Callable[[GroupConsumer[P], list[P]], None] | None = None,
        on_lost: Callable[[GroupConsumer[P], list[P]], None] | None = None,
    ) -> None: ...
    def poll(self, timeout: float = -1) -> KafkaMessage | None: ...
    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[KafkaMessage]: ...
    def assign(self, partitions: list[P]) -> None: ...
    def unassign(self) -> None: ...
    def assignment(self) -> list[P]: ...
    def incremental_assign(self, partitions: list[P]) -> None: ...
    def incremental_unassign(self, partitions: list[P]) -> None: ...
    def pause(self, partitions: list[P]) -> None: ...
    def resume(self, partitions: list[P]) -> None: ...
    def seek(self, partition: P) -> None: ...
    def position(self, partitions: list[P]) -> list[P]: ...
    def committed(self, partitions: list[P], timeout: float = -1) -> list[P]: ...
    # In the client's order (mypy matches overloads in order).
    @overload
    def commit(self, *, offsets: list[P], asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(self, *, offsets: list[P], asynchronous: Literal[False]) -> list[P]: ...
    def get_watermark_offsets(
        self, partition: P, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        """(low, high); for a `read_committed` consumer high is the last stable offset."""
        ...

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterView: ...
    def offsets_for_times(self, partitions: list[P], timeout: float = -1) -> list[P]:
        """Each partition's offset taken as a timestamp (ms) answered with the first offset
        whose record is that recent, or -1 when there is none."""
        ...

    def consumer_group_metadata(self) -> object:
        """What `TransactionalWriter.send_offsets` hands to the transaction (KIP-447)."""
        ...

    def close(self) -> None:
        """Leave the group (calling `on_revoke` for what it owns); later calls raise
        `RuntimeError`."""
        ...


DeliveryCallback = Callable[[BrokerError | None, KafkaMessage], None]


class TransactionalWriter(Protocol[P]):
    """A transactional producer. `init` fences every earlier producer with the same
    transactional id: the broker aborts the zombie's open transaction, the zombie's next
    request to the broker (flush, send_offsets, commit, abort) raises a fatal `KafkaException`
    (`is_fatal` is true), every later call raises, and nothing it sent reaches a
    `read_committed` reader. A transaction left open past `transaction.timeout.ms` is aborted
    by the broker, which fences its producer the same way."""

    @property
    def transactional_id(self) -> str: ...
    def init(self, timeout: float = 30.0) -> None: ...
    def begin(self) -> None: ...
    def send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        partition: int = -1,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None: ...
    def send_offsets(self, consumer: GroupConsumer[P], offsets: list[P]) -> None:
        """Commit the consumer group's `offsets` with the open transaction, and only if it
        commits."""
        ...

    def commit(self, timeout: float = 30.0) -> None: ...
    def abort(self, timeout: float = 30.0) -> None: ...
    def poll(self, timeout: float = 0.0) -> None: ...
    def flush(self, timeout: float = 30.0) -> int: ...


class EventWriter(Protocol):
    """An at-least-once producer: keys are placed by Kafka's murmur2 partitioner; `flush`
    raises `ProduceFailed` if anything sent was not delivered."""

    def send(self, topic: str, key: str | None, value: bytes | None) -> None: ...
    def flush(self, timeout: float = 30.0) -> None: ...


class ReadRecord(Protocol):
    """One record read by a `PartitionReader` (`tickwheel.adapters.kafka.reader.Record`)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> str | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def timestamp_ms(self) -> int: ...
    @property
    def headers(self) -> tuple[tuple[str, bytes], ...]: ...
    @property
    def key_is_text(self) -> bool: ...


class PartitionReader(Protocol):
    """Reads partitions to their end without a group, `read_committed` (restores, look-ups)."""

    def partition_count(self, topic: str) -> int: ...
    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(low, last stable offset) of the partition."""
        ...

    def read_to_end(
        self,
        topic: str,
        partitions: list[int] | None = None,
        from_offsets: Mapping[int, int] | None = None,
    ) -> Iterator[ReadRecord]:
        """Every committed record, oldest first per partition, up to the end offsets seen at
        the start; from `from_offsets[partition]` instead of the beginning where given."""
        ...


class KafkaClients(Protocol[P]):
    """Where code gets its Kafka clients: `BrokerClients(bootstrap)` for a cluster,
    `MemoryClients(broker)` for the in-memory one. Overrides are client settings
    (`{"isolation.level": "read_uncommitted"}`, `{"transaction.timeout.ms": 2000}`)."""

    def consumer(self, group_id: str, **overrides: Any) -> GroupConsumer[P]: ...
    def transactional(self, transactional_id: str, **overrides: Any) -> TransactionalWriter[P]: ...
    def events(self, **overrides: Any) -> EventWriter: ...
    def reader(self) -> PartitionReader: ...


R = TypeVar("R", bound=ReadRecord)


def latest_per_key(records: Iterable[R]) -> dict[str, R]:
    """A compacted topic as its consumers see it once compaction has run: the newest record of
    each key, a tombstone (no value) deleting the key. Records without a key are dropped: a
    compacted topic refuses them."""
    latest: dict[str, R] = {}
    for record in records:
        if record.key is None:
            continue
        if record.value is None:
            latest.pop(record.key, None)
        else:
            latest[record.key] = record
    return latest
