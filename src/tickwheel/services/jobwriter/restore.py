"""Rebuild one partition's judge from Kafka once the group gave it to this judge (decision
0178): wait until no transaction of the previous owner is still open on it, then read
partition p of `jobs.definitions` (read_committed) into the catalogue and where p was judged
to. Runs on the restore thread (`BackgroundRestores`, the timer's and the orchestrator's); the
commands partition stays paused until the result is installed.

The previous owner is not fenced by a transactional id any more (one producer per judge, not
per partition): its transactions can no longer commit offsets for p once the group moved on
(KIP-447, `send_offsets` with the consumer's generation), and the restore waits out the one
it may have had under way: the committed offset is fetched `require_stable` (librdkafka asks
so for a read_committed consumer, and retries while a transaction's offsets are pending),
then the definitions partition is read only once its last stable offset reached its high
watermark as it stood after that (every transaction that wrote it before is decided)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.ports.kafka import GroupConsumer, KafkaClients
from tickwheel.records import JobWriterCheckpoint
from tickwheel.services.jobwriter.judge import PartitionJudge
from tickwheel.topology import topic_name

# A previous owner's open transaction holds the restore at most this long: the broker aborts
# it at the judge's transaction timeout (TRANSACTION_TIMEOUT_MS) and the wait then ends.
TRANSACTION_TIMEOUT_MS = 15_000
STABLE_WAIT_S = TRANSACTION_TIMEOUT_MS / 1000 + 5
STABLE_POLL_S = 0.05


@dataclass(frozen=True)
class JobWriterTopics:
    commands: str
    definitions: str
    verdicts: str
    idempotency: str
    dlq: str
    state: str

    @classmethod
    def declared(cls) -> JobWriterTopics:
        return cls(
            topic_name("jobs.commands"),
            topic_name("jobs.definitions"),
            topic_name("jobs.verdicts"),
            topic_name("api.idempotency"),
            topic_name("executions.dlq"),
            topic_name("jobwriter.state"),
        )


def checkpoint_key(partition: int) -> str:
    return f"__partition__/{partition}"


def transactional_id(instance: str) -> str:
    """One per judge instance (its static group member name is unique already): a restarted
    instance fences its own previous incarnation, nobody else's."""
    return f"{topic_name('tickwheel-jobwriter')}-{instance}"


class PartitionRuntime:
    """One owned partition: its judge, the next command to read and where the follower of
    jobs.definitions starts."""

    def __init__(self, judge: PartitionJudge, definitions_end: int, next_command: int) -> None:
        self.partition = judge.partition
        self.judge = judge
        self.definitions_end = definitions_end
        self.next_command = next_command


class RestoreUnstable(RuntimeError):
    """A previous owner's transaction on the partition is still open past the wait."""


class PartitionRestorer:
    def __init__(
        self, clients: KafkaClients[Any], topics: JobWriterTopics, ttl_ms: int, group_id: str
    ) -> None:
        self.clients = clients
        self.topics = topics
        self.ttl_ms = ttl_ms
        self.group_id = group_id
        self._offsets: GroupConsumer[Any] | None = None  # the group's committed offsets
        self._uncommitted: GroupConsumer[Any] | None = None  # high watermarks

    def restore(self, partition: int) -> PartitionRuntime:
        committed = self._stable_committed(partition)
        reader = self.clients.reader()
        try:
            self._await_decided(reader, partition)
            judge = PartitionJudge(partition, self.ttl_ms)
            end = reader.watermarks(self.topics.definitions, partition)[1]
            for record in reader.read_to_end(self.topics.definitions, [partition]):
                judge.load(record.key if record.key_is_text else None, record.value)
                end = max(end, record.offset + 1)
            checkpoint = self._checkpoint(reader, partition)
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()
        # Both only ever name a place every verdict before was committed at: the record of
        # decision 0129 (a cluster judged before this change), or the group's offset since.
        return PartitionRuntime(judge, end, max(0, committed, checkpoint))

    def close(self) -> None:
        for consumer in (self._offsets, self._uncommitted):
            if consumer is not None:
                consumer.close()
        self._offsets = self._uncommitted = None

    def _stable_committed(self, partition: int) -> int:
        """The group's committed offset of commands partition p, once no transaction that
        carries offsets for it is pending (read_committed: require_stable)."""
        if self._offsets is None:  # never subscribes: only asks the group's coordinator
            self._offsets = self.clients.consumer(
                self.group_id, **{"isolation.level": "read_committed"}
            )
        tp = TopicPartition(self.topics.commands, partition)
        return int(self._offsets.committed([tp], timeout=STABLE_WAIT_S)[0].offset)

    def _await_decided(self, reader: Any, partition: int) -> None:
        """Until every transaction that wrote definitions partition p so far is decided: the
        last stable offset reaches the high watermark seen now."""
        if self._uncommitted is None:
            self._uncommitted = self.clients.consumer(
                f"{self.group_id}-watermarks-{uuid.uuid4()}",
                **{"isolation.level": "read_uncommitted"},
            )
        tp = TopicPartition(self.topics.definitions, partition)
        high = self._uncommitted.get_watermark_offsets(tp, timeout=10)[1]
        deadline = time.monotonic() + STABLE_WAIT_S
        while reader.watermarks(self.topics.definitions, partition)[1] < high:
            if time.monotonic() > deadline:
                raise RestoreUnstable(
                    f"{self.topics.definitions}[{partition}] has a "
                    f"transaction open past {STABLE_WAIT_S}s"
                )
            time.sleep(STABLE_POLL_S)

    def _checkpoint(self, reader: Any, partition: int) -> int:
        next_command = -1
        for record in reader.read_to_end(self.topics.state, [partition]):
            if record.key != checkpoint_key(partition) or record.value is None:
                continue
            try:
                next_command = decode_as(JobWriterCheckpoint, record.value)["next_command"]
            except UndecodableRecord:
                continue  # not ours
        return next_command
