"""Read topics to their end, `read_committed`: restores, CLI look-ups, tests.

A transactional topic ends at its last stable offset; a reader assigned without a group
stops when its position reaches the end offset it saw when it started.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.fatal import GuardedConsumer as Consumer
from tickwheel.errors import TickwheelError


class ReadTimedOut(TickwheelError, TimeoutError):
    """A topic could not be read to its end in time."""


@dataclass(frozen=True)
class Record:
    """One record as read. `key` is the key as text; a key that is not UTF-8 is shown with
    backslash escapes and `key_is_text` is False: such a record is nobody's (keys are job ids),
    and whoever reads it dead-letters it rather than raising mid-restore."""

    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = ()
    key_is_text: bool = True

    def header(self, name: str) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


def decode_key(raw: bytes | None) -> tuple[str | None, bool]:
    """A record key as text, and whether it was valid UTF-8 (else shown with escapes)."""
    if raw is None:
        return None, True
    try:
        return raw.decode(), True
    except UnicodeDecodeError:
        return raw.decode(errors="backslashreplace"), False


def record_of(msg: Any) -> Record:
    """A consumed message as a Record (its key decoded, or marked as not text)."""
    key, key_is_text = decode_key(msg.key())
    return Record(
        msg.topic(),
        msg.partition(),
        msg.offset(),
        key,
        msg.value(),
        0,
        tuple(msg.headers() or ()),
        key_is_text,
    )


def partition_count(topic: str, bootstrap: str | None = None) -> int:
    consumer = Consumer(consumer_config(f"tickwheel-meta-{uuid.uuid4()}", bootstrap))
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        return len(metadata.topics[topic].partitions)
    finally:
        consumer.close()


def read_to_end(
    topic: str,
    partitions: list[int] | None = None,
    bootstrap: str | None = None,
    timeout: float = 120.0,
    batch: int = 5000,
    from_offsets: dict[int, int] | None = None,
) -> Iterator[Record]:
    """Every committed record of `topic` (or of the given partitions), oldest first per
    partition, up to the end offsets seen at the start; from `from_offsets[partition]`
    instead of the beginning where given."""
    consumer = Consumer(
        consumer_config(
            f"tickwheel-reader-{uuid.uuid4()}",
            bootstrap,
            **{"enable.partition.eof": False, "fetch.max.bytes": 52428800},
        )
    )
    try:
        if partitions is None:
            metadata = consumer.list_topics(topic, timeout=10)
            partitions = sorted(metadata.topics[topic].partitions)
        ends: dict[int, int] = {}
        starts: dict[int, int] = {}
        for p in partitions:
            low, high = watermarks(consumer, TopicPartition(topic, p))
            starts[p], ends[p] = max(low, (from_offsets or {}).get(p, low)), high
        open_partitions = {p for p in partitions if ends[p] > starts[p]}
        if not open_partitions:
            return
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in open_partitions])
        deadline = time.monotonic() + timeout
        while open_partitions:
            if time.monotonic() > deadline:
                raise ReadTimedOut(f"reading {topic} to its end took over {timeout}s")
            messages = consumer.consume(batch, 0.2)
            for msg in messages:
                if msg.error():
                    continue
                p = msg.partition()
                if p not in open_partitions:
                    continue
                key, key_is_text = decode_key(msg.key())
                yield Record(
                    topic=topic,
                    partition=p,
                    offset=msg.offset(),
                    key=key,
                    value=msg.value(),
                    timestamp_ms=msg.timestamp()[1],
                    headers=tuple(msg.headers() or ()),
                    key_is_text=key_is_text,
                )
                if msg.offset() + 1 >= ends[p]:
                    open_partitions.discard(p)
            if open_partitions:
                # Transaction markers and compacted gaps leave no record at the end offset:
                # ask where the consumer stands (a local answer) rather than wait for records
                # that will not come (a restore reads three topics per partition this way).
                for tp in consumer.position([TopicPartition(topic, p) for p in open_partitions]):
                    if tp.offset >= ends[tp.partition]:
                        open_partitions.discard(tp.partition)
    finally:
        consumer.close()


def read_back(
    topic: str,
    partition: int,
    enough: Callable[[list[Record]], bool],
    bootstrap: str | None = None,
    first_window: int = 1024,
    timeout: float = 120.0,
) -> list[Record]:
    """The partition's last records, oldest first: read from the end back in windows that grow
    eightfold, until what a window holds is `enough` (or it reaches the beginning). What one
    instance's history costs to find then grows with what was written since it began, not
    with everything the partition holds."""
    consumer = Consumer(consumer_config(f"tickwheel-meta-{uuid.uuid4()}", bootstrap))
    try:
        low, high = watermarks(consumer, TopicPartition(topic, partition))
    finally:
        consumer.close()
    window = first_window
    while True:
        start = max(low, high - window)
        records = list(
            read_to_end(topic, [partition], bootstrap, timeout, from_offsets={partition: start})
        )
        if start == low or enough(records):
            return records
        window *= 8


# What a partition answers while it has just been created or is changing leaders: the broker's
# codes, and the client's own `_UNKNOWN_PARTITION` (its metadata cache has not seen the new
# topic yet; the contract test shows the client, not the broker, answers for an unknown one).
_TRANSIENT = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
    # A broker of a cluster died: the request went to (or waited on) its connection, and the
    # partition's leadership moves to a survivor within the brokers' session timeout.
    KafkaError._DESTROY_BROKER,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError.NOT_COORDINATOR,
    KafkaError.REQUEST_TIMED_OUT,
    # A new leader whose high watermark has not caught up yet answers no offsets for a moment.
    KafkaError.OFFSET_NOT_AVAILABLE,
}


class TopicTail:
    """A topic read in steps: each `read()` yields what was written since the previous one
    (the whole topic the first time), up to the end offsets seen when it began. The callers
    that hold a compacted topic in memory by reading it when asked (the orchestrator's
    workflow definitions, the API's keys, the SDK's workflow definitions) read it this way.
    Not thread-safe: a caller reads under its own lock."""

    def __init__(self, topic: str, bootstrap: str | None = None, timeout: float = 120.0) -> None:
        self.topic = topic
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.next: dict[int, int] = {}  # per partition, the next offset to read

    def read(self) -> Iterator[Record]:
        for record in read_to_end(
            self.topic, None, self.bootstrap, self.timeout, from_offsets=dict(self.next)
        ):
            self.next[record.partition] = record.offset + 1
            yield record


def watermarks(consumer: Consumer, tp: TopicPartition, within_s: float = 30.0) -> tuple[int, int]:
    """The partition's (low, high) offsets, asked of the broker, and asked again while the
    partition has no leader yet (a topic created a moment ago, a leader that just died), for
    up to `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=10)
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            transient = isinstance(error, KafkaError) and error.code() in _TRANSIENT
            if not transient or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
