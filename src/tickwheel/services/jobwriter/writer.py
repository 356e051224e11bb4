"""A poll's one transaction over every partition it judged (decision 0178): each partition's
definitions and tombstones, verdicts, idempotency records, dead letters and the commands it
forwards to their owner partition, and the commands' next offsets committed to the group with
them (`send_offsets`, KIP-447), together: a forwarded command is written once, or the offset
stays before it and it is read and forwarded again.

The offsets carry the consumer's group generation: once the group has given a partition to
another judge, this judge's `send_offsets` is refused (the transaction must abort), so a judge
that lost its partitions, even one that does not know it yet, commits nothing more. One
transaction per poll instead of one per partition per poll: the commit markers, the
transaction-state writes and the transaction requests are paid once per poll."""

from __future__ import annotations

import logging
import time
from typing import Any

from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.ports.kafka import GroupConsumer, TransactionalWriter
from tickwheel.runtime.transactions import Written, ended_in_failure
from tickwheel.services.jobwriter.judge import WRITER_HEADER, WRITER_VALUE, Batch
from tickwheel.services.jobwriter.restore import JobWriterTopics, PartitionRuntime

log = logging.getLogger("tickwheel.jobwriter")
MARK = [(WRITER_HEADER, WRITER_VALUE)]


class BatchWriter:
    def __init__(self, topics: JobWriterTopics) -> None:
        self.topics = topics

    def write(
        self,
        producer: TransactionalWriter[Any],
        consumer: GroupConsumer[Any],
        batches: list[tuple[PartitionRuntime, Batch]],
    ) -> Written:
        """One transaction: every batch's records, then each partition's next command as the
        group's offset (`runtime.next_command`), then the commit."""
        topics = self.topics
        started = time.monotonic()
        try:
            producer.begin()
            for _runtime, batch in batches:
                for job_id, value in batch.definitions:
                    # Same key, so the same partition p as the command (co-partitioned).
                    producer.send(topics.definitions, job_id, value, headers=MARK)
                for command_id, verdict in batch.verdicts:
                    producer.send(topics.verdicts, command_id, verdict)
                for slot, record in batch.idempotency:
                    producer.send(topics.idempotency, slot, record)
                for key, letter in batch.dead_letters:
                    producer.send(topics.dlq, key, letter)
                for forwarded in batch.forwarded:  # unchanged, to the partition that owns it
                    producer.send(
                        topics.commands,
                        forwarded.key,
                        forwarded.value,
                        partition=forwarded.partition,
                        headers=list(forwarded.headers),
                    )
            offsets = [
                TopicPartition(topics.commands, runtime.partition, runtime.next_command)
                for runtime, _batch in batches
            ]
            # Refused once the group's generation moved past this consumer's (KIP-447).
            producer.send_offsets(consumer, offsets)
            producer.commit()
        except KafkaException as exc:
            partitions = [runtime.partition for runtime, _batch in batches]
            log.warning(
                "the poll's transaction ended in failure",
                extra={"action": "poll_transaction_failed", "partitions": partitions},
            )
            return ended_in_failure(producer, exc, partitions[0], started, log)
        return Written("committed", time.monotonic() - started)
