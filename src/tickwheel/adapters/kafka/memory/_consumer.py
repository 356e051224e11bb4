"""`MemoryConsumer`: confluent-kafka's `Consumer`, against the in-memory broker.

Calls return at once: `consume(n, timeout)` gives what is there now (the real client waits up
to `timeout` for `n`), and the group's rebalance callbacks run inside `consume`/`poll`, as
librdkafka runs them. Positions follow librdkafka: -1001 after an assign or a seek until the
consumer has read past something, then the next offset to read (markers and aborted records
it skipped included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, overload

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    KafkaError,
    TopicPartition,
)

from tickwheel.adapters.kafka.fatal import raise_if_fatal
from tickwheel.adapters.kafka.memory._broker import MemoryBroker
from tickwheel.adapters.kafka.memory._errors import kafka_exception, state_error
from tickwheel.adapters.kafka.memory._groups import GroupMetadata, Member
from tickwheel.adapters.kafka.memory._log import PartitionKey
from tickwheel.adapters.kafka.memory._messages import ClusterMetadata, MemoryMessage

RebalanceCallback = Callable[[Any, list[Any]], None]


@dataclass
class _Fetch:
    start: int  # the offset asked for (maybe logical), resolved on the first read
    next_offset: int | None = None
    position: int = OFFSET_INVALID
    paused: bool = False


class MemoryConsumer:
    """Takes the broker and the same config dict as the real client (`consumer_config(...)`):
    `group.id`, `isolation.level` (default read_committed, as tickwheel configures it),
    `auto.offset.reset`; the rest (bootstrap, timeouts, fetch sizes) has no meaning here."""

    def __init__(self, broker: MemoryBroker, config: dict[str, Any]) -> None:
        if "group.id" not in config:
            raise ValueError("group.id: a consumer needs a group id (the real client refuses)")
        self._broker = broker
        self._group_id = str(config["group.id"])
        self._read_committed = config.get("isolation.level", "read_committed") != (
            "read_uncommitted"
        )
        self._reset = str(config.get("auto.offset.reset", "latest"))
        if str(config.get("enable.auto.commit", "true")).lower() not in ("false", "0"):
            # Committing behind the caller's back is timing the fake has no clock for.
            raise ValueError(
                "enable.auto.commit: the in-memory consumer supports False only "
                "(tickwheel's consumer_config sets it)"
            )
        self._fetches: dict[PartitionKey, _Fetch] = {}
        self._member: Member | None = None
        self._topics: list[str] = []
        self._missing_told: set[str] = set()
        self._callbacks: dict[str, RebalanceCallback | None] = {}
        self._closed = False
        self._next_first = 0  # which assigned partition is read first, in turn

    # -- the group -------------------------------------------------------------------------
    def subscribe(
        self,
        topics: list[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        self._open()
        self._topics = list(topics)
        self._missing_told = set()
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        if self._member is not None:
            self._broker.group(self._group_id).leave(self._member.member_id)
        self._member = self._broker.group(self._group_id).join(self._topics)

    def unsubscribe(self) -> None:
        self._open()
        self._leave()

    def memberid(self) -> str:
        return "" if self._member is None else self._member.member_id

    def consumer_group_metadata(self) -> GroupMetadata:
        self._open()
        group = self._broker.group(self._group_id)
        member = "" if self._member is None else self._member.member_id
        return GroupMetadata(self._group_id, group.generation, member)

    def _serve_rebalance(self, out: list[MemoryMessage]) -> None:
        """Run the callbacks the group owes this member, in order; without a callback do what
        librdkafka does by itself (incremental assign or unassign). A lost session is also
        told as an error message, as librdkafka tells it."""
        member = self._member
        while member is not None and member.events:
            kind, keys = member.events.popleft()
            if kind == "lost":
                # Everything it holds is lost, a revoke it had not served yet included.
                keys = sorted(self._fetches)
            partitions = [TopicPartition(t, p) for t, p in keys]
            callback = self._callbacks.get(kind)
            if kind == "lost" and callback is None:
                # The client's documented fallback: lost partitions go to on_revoke.
                callback = self._callbacks.get("revoke")
            if callback is not None:
                callback(self, partitions)
            elif kind == "assign":
                self.incremental_assign(partitions)
            else:
                self.incremental_unassign(partitions)
            if kind == "revoke":
                self._broker.group(self._group_id).released(member.member_id, keys)
            if kind == "lost":
                reason = "Application maximum poll interval exceeded (the session expired)"
                error = KafkaError(KafkaError._MAX_POLL_EXCEEDED, reason)
                out.insert(0, MemoryMessage(None, None, None, None, None, None, 0, error))
                # librdkafka joins again by itself after losing its session.
                self._member = member = self._broker.group(self._group_id).join(self._topics)

    def _tell_missing_topics(self, out: list[MemoryMessage]) -> None:
        """A subscribed topic that does not exist is told once as an error message (the
        client's `UNKNOWN_TOPIC_OR_PART`, not fatal), and the consumer goes on."""
        for topic in self._topics:
            if topic not in self._broker.topics and topic not in self._missing_told:
                self._missing_told.add(topic)
                error = KafkaError(
                    KafkaError.UNKNOWN_TOPIC_OR_PART, f"Subscribed topic not available: {topic}"
                )
                out.append(MemoryMessage(topic, None, None, None, None, None, 0, error))

    def _leave(self) -> None:
        member, self._member = self._member, None
        if member is None:
            return
        member.events.clear()
        owned = sorted(member.owned)
        if owned:
            partitions = [TopicPartition(t, p) for t, p in owned]
            callback = self._callbacks.get("revoke")
            if callback is not None:
                callback(self, partitions)
            else:
                self.incremental_unassign(partitions)
        self._broker.group(self._group_id).leave(member.member_id)

    # -- assignment ------------------------------------------------------------------------
    def assign(self, partitions: list[TopicPartition]) -> None:
        self._open()
        self._fetches.clear()
        self.incremental_assign(partitions)

    def unassign(self) -> None:
        self._open()
        self._fetches.clear()

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._open()
        for tp in partitions:
            # An unknown topic is accepted, as the client accepts it: nothing comes from it.
            self._fetches[(tp.topic, tp.partition)] = _Fetch(tp.offset)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._open()
        for tp in partitions:
            self._fetches.pop((tp.topic, tp.partition), None)

    def assignment(self) -> list[TopicPartition]:
        self._open()
        return [TopicPartition(t, p) for t, p in self._fetches]

    def _start(self, key: PartitionKey, offset: int) -> int:
        """Where reading starts: an offset given, else the group's committed one, else the
        `auto.offset.reset` end."""
        log = self._broker.log(*key)
        if offset >= 0:
            return offset
        if offset == OFFSET_BEGINNING:
            return 0
        if offset == OFFSET_END:
            return log.end(self._read_committed)
        committed = self._broker.group(self._group_id).committed.get(key)
        if committed is not None:
            return committed
        return self._reset_offset(key)

    def _reset_offset(self, key: PartitionKey) -> int:
        if self._reset in ("earliest", "smallest", "beginning"):
            return 0
        return self._broker.log(*key).end(self._read_committed)

    def _fetch(self, tp: TopicPartition) -> _Fetch:
        fetch = self._fetches.get((tp.topic, tp.partition))
        if fetch is None:
            raise state_error(f"{tp.topic} [{tp.partition}] is not assigned")
        return fetch

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._set_paused(partitions, True)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._set_paused(partitions, False)

    def _set_paused(self, partitions: list[TopicPartition], paused: bool) -> None:
        self._open()
        for fetch in filter(
            None, (self._fetches.get((tp.topic, tp.partition)) for tp in partitions)
        ):
            fetch.paused = paused

    def seek(self, partition: TopicPartition) -> None:
        self._open()
        fetch = self._fetch(partition)
        fetch.start, fetch.next_offset = partition.offset, None
        fetch.position = OFFSET_INVALID

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        self._open()
        answer = []
        for tp in partitions:
            fetch = self._fetches.get((tp.topic, tp.partition))
            offset = OFFSET_INVALID if fetch is None else fetch.position
            answer.append(TopicPartition(tp.topic, tp.partition, offset))
        return answer

    # -- reading ---------------------------------------------------------------------------
    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[MemoryMessage]:
        """What is readable now, up to `num_messages`, taking partitions in turn; never waits
        (`timeout` is the caller's to spend)."""
        self._open()
        self._raise_if_failed()
        self._broker.expire_transactions()
        messages: list[MemoryMessage] = []
        self._tell_missing_topics(messages)
        self._serve_rebalance(messages)
        keys = list(self._fetches)
        if not keys:
            return messages
        first = self._next_first % len(keys)
        self._next_first += 1
        for key in keys[first:] + keys[:first]:
            fetch = self._fetches[key]
            if not fetch.paused:
                self._read(key, fetch, num_messages - len(messages), messages)
            if len(messages) >= num_messages:
                break
        return messages

    def poll(self, timeout: float = -1) -> MemoryMessage | None:
        messages = self.consume(1, timeout)
        return messages[0] if messages else None

    def _read(self, key: PartitionKey, fetch: _Fetch, limit: int, out: list[MemoryMessage]) -> None:
        topic = self._broker.topics.get(key[0])
        if topic is None or not 0 <= key[1] < len(topic.logs):
            return
        log = topic.logs[key[1]]
        if fetch.next_offset is None:
            fetch.next_offset = self._start(key, fetch.start)
        if fetch.next_offset > log.high:
            # Out of range (the log is shorter than asked for): reset, as the client does.
            fetch.next_offset = self._reset_offset(key)
        end = log.end(self._read_committed)
        taken = 0
        moved = False
        while fetch.next_offset < end and taken < limit:
            entry = log.entries[fetch.next_offset]
            fetch.next_offset += 1
            moved = True
            if not entry.visible(self._read_committed):
                continue
            headers = None if entry.headers is None else list(entry.headers)
            out.append(
                MemoryMessage(
                    *key, entry.offset, entry.key, entry.value, headers, entry.timestamp_ms
                )
            )
            taken += 1
        if moved:
            fetch.position = fetch.next_offset

    # -- offsets ---------------------------------------------------------------------------
    @overload
    def commit(self, *, asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(self, *, asynchronous: Literal[False]) -> list[TopicPartition]: ...
    @overload
    def commit(self, *, message: MemoryMessage, asynchronous: Literal[True] = ...) -> None: ...
    @overload
    def commit(
        self, *, message: MemoryMessage, asynchronous: Literal[False]
    ) -> list[TopicPartition]: ...
    @overload
    def commit(
        self, *, offsets: list[TopicPartition], asynchronous: Literal[True] = ...
    ) -> None: ...
    @overload
    def commit(
        self, *, offsets: list[TopicPartition], asynchronous: Literal[False]
    ) -> list[TopicPartition]: ...
    def commit(
        self,
        *,
        message: MemoryMessage | None = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition] | None:
        """The client's overloads: explicit offsets, a message's next offset, or every
        assigned partition's position."""
        self._open()
        if offsets is not None:
            chosen = [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        elif message is not None:
            offset = message.offset()
            if offset is None:
                raise kafka_exception(KafkaError._INVALID_ARG, "Local: Invalid argument")
            chosen = [(message.topic(), message.partition(), offset + 1)]
        else:
            chosen = [(t, p, f.position) for (t, p), f in self._fetches.items() if f.position >= 0]
        if not chosen:
            raise kafka_exception(KafkaError._NO_OFFSET, "Local: No offset stored")
        committed = self._broker.group(self._group_id).committed
        for topic, partition, offset in chosen:
            committed[(topic, partition)] = offset
        if asynchronous:
            return None
        return [TopicPartition(t, p, o) for t, p, o in chosen]

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[Any]:
        self._open()
        committed = self._broker.group(self._group_id).committed
        return [
            TopicPartition(
                tp.topic, tp.partition, committed.get((tp.topic, tp.partition), OFFSET_INVALID)
            )
            for tp in partitions
        ]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        """(low, high); high is the last stable offset for a read_committed consumer. The
        real client's `cached=True` answers from its last fetch; this one is always current."""
        self._open()
        self._broker.expire_transactions()
        topic = self._broker.topics.get(partition.topic)
        if topic is None or not 0 <= partition.partition < len(topic.logs):
            raise kafka_exception(KafkaError._UNKNOWN_PARTITION, "Local: Unknown partition")
        return 0, topic.logs[partition.partition].end(self._read_committed)

    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        self._open()
        answer = []
        for tp in partitions:
            log = self._broker.log(tp.topic, tp.partition)
            end = log.end(self._read_committed)
            found = next(
                (
                    e.offset
                    for e in log.entries[:end]
                    if e.visible(self._read_committed) and e.timestamp_ms >= tp.offset
                ),
                OFFSET_END,
            )
            answer.append(TopicPartition(tp.topic, tp.partition, found))
        return answer

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self._open()
        return self._broker.metadata(topic)

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Leave the group, calling `on_revoke` for what it owns, as the client does."""
        if self._closed:
            return
        self._leave()
        self._fetches.clear()
        self._closed = True

    def _raise_if_failed(self) -> None:
        """A group member whose client failed for good (`MemoryBroker.fail_group_members`)
        sees the fatal error as the guarded client shows it: raised (`fatal.raise_if_fatal`)."""
        reason = self._broker.failed_groups.get(self._group_id)
        if reason is None or self._member is None:
            return
        error = KafkaError(KafkaError._FATAL, f"Fatal error: {reason}", fatal=True)
        raise_if_fatal([MemoryMessage(None, None, None, None, None, None, 0, error)])

    def _open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")
