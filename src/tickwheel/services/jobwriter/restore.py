"""Rebuild one partition's judge from Kafka: fence the previous owner (the transactional id is
the partition's), then read partition p of `jobs.definitions` (read_committed) into the
catalogue and p's checkpoint from `jobwriter.state` (the next command to judge, written with
the verdicts it covers: decision 0129). Runs on the restore thread (`BackgroundRestores`, the
timer's and the orchestrator's); the commands partition stays paused until the result is
installed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.ports.kafka import KafkaClients, TransactionalWriter
from tickwheel.records import JobWriterCheckpoint
from tickwheel.services.jobwriter.judge import PartitionJudge
from tickwheel.topology import topic_name


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
        return cls(topic_name("jobs.commands"), topic_name("jobs.definitions"),
                   topic_name("jobs.verdicts"), topic_name("api.idempotency"),
                   topic_name("executions.dlq"), topic_name("jobwriter.state"))  # fmt: skip


def checkpoint_key(partition: int) -> str:
    return f"__partition__/{partition}"


def transactional_id(partition: int) -> str:
    return f"{topic_name('tickwheel-jobwriter')}-p{partition}"


class PartitionRuntime:
    """One owned partition: its judge, its transactional producer, the next command to read
    and where the follower of jobs.definitions starts."""

    def __init__(
        self, judge: PartitionJudge, producer: TransactionalWriter[Any], definitions_end: int,
        next_command: int = -1,
    ) -> None:  # fmt: skip
        self.partition = judge.partition
        self.judge = judge
        self.producer = producer
        self.definitions_end = definitions_end
        # From the checkpoint; -1: none yet (the group's committed offset, else the start).
        self.next_command = next_command


class PartitionRestorer:
    def __init__(self, clients: KafkaClients[Any], topics: JobWriterTopics, ttl_ms: int) -> None:
        self.clients = clients
        self.topics = topics
        self.ttl_ms = ttl_ms

    def restore(self, partition: int) -> PartitionRuntime:
        producer = self.clients.transactional(transactional_id(partition))
        # Fences the previous owner and waits out its open transaction before we read.
        producer.init()
        judge = PartitionJudge(partition, self.ttl_ms)
        reader = self.clients.reader()
        end = reader.watermarks(self.topics.definitions, partition)[1]
        for record in reader.read_to_end(self.topics.definitions, [partition]):
            judge.load(record.key if record.key_is_text else None, record.value)
            end = max(end, record.offset + 1)
        next_command = -1
        for record in reader.read_to_end(self.topics.state, [partition]):
            if record.key != checkpoint_key(partition) or record.value is None:
                continue
            try:
                next_command = decode_as(JobWriterCheckpoint, record.value)["next_command"]
            except UndecodableRecord:
                continue  # not ours: the group's committed offset is the fallback
        close = getattr(reader, "close", None)
        if close is not None:
            close()
        return PartitionRuntime(judge, producer, end, next_command)
