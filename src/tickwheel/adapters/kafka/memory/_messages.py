"""The message and metadata shapes the fake clients return (the client's own are C types that
cannot be built with an offset)."""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError


@dataclass(frozen=True)
class MemoryMessage:
    """A consumed message (or one handed to a delivery callback), read like the client's:
    `msg.offset()`, `msg.key()`, ..."""

    _topic: str | None
    _partition: int | None
    _offset: int | None  # None: never delivered (purged)
    _key: bytes | None
    _value: bytes | None
    _headers: list[tuple[str, bytes]] | None
    _timestamp_ms: int
    _error: KafkaError | None = None

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int | None:
        return self._partition

    def offset(self) -> int | None:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return None if self._headers is None else list(self._headers)

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self._timestamp_ms

    def error(self) -> KafkaError | None:
        return self._error

    def __len__(self) -> int:
        return 0 if self._value is None else len(self._value)


@dataclass(frozen=True)
class PartitionMetadata:
    id: int
    leader: int = 0


@dataclass(frozen=True)
class TopicMetadata:
    topic: str
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    error: KafkaError | None = None


@dataclass(frozen=True)
class ClusterMetadata:
    topics: dict[str, TopicMetadata]
    brokers: dict[int, str] = field(default_factory=lambda: {0: "memory"})
    cluster_id: str = "memory"
