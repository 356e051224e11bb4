"""One partition's transaction: the batch's definitions and tombstones, verdicts, idempotency
records and dead letters, and the partition's checkpoint (the next command to judge, on
`jobwriter.state`), committed together (decisions 0126, 0129). The checkpoint is a record,
as the orchestrator's is, not the group's offsets: `send_offsets` costs two round trips to
the group coordinator per transaction, and fencing is the transactional id's already.

The partitions of one poll commit side by side on a small pool (each has its own producer),
so a poll waits for the slowest commit rather than their sum."""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.records import JobWriterCheckpoint
from tickwheel.services.jobwriter.judge import WRITER_HEADER, WRITER_VALUE, Batch
from tickwheel.services.jobwriter.restore import (
    JobWriterTopics,
    PartitionRuntime,
    checkpoint_key,
)
from tickwheel.services.transactions import Written, ended_in_failure

log = logging.getLogger("tickwheel.jobwriter")
MARK = [(WRITER_HEADER, WRITER_VALUE)]


class BatchWriter:
    def __init__(self, topics: JobWriterTopics, workers: int = 6) -> None:
        self.topics = topics
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jobwriter-tx")

    def submit(
        self, runtime: PartitionRuntime, batch: Batch, next_command: int, at_ms: int
    ) -> Future[Written]:
        return self._pool.submit(self.write, runtime, batch, next_command, at_ms)

    def write(
        self, runtime: PartitionRuntime, batch: Batch, next_command: int, at_ms: int
    ) -> Written:
        producer, partition, topics = runtime.producer, runtime.partition, self.topics
        started = time.monotonic()
        try:
            producer.begin()
            for job_id, value in batch.definitions:
                # Same key, so the same partition p as the command (co-partitioned topics).
                producer.send(topics.definitions, job_id, value, headers=MARK)
            for command_id, verdict in batch.verdicts:
                producer.send(topics.verdicts, command_id, verdict)
            for slot, record in batch.idempotency:
                producer.send(topics.idempotency, slot, record)
            for key, letter in batch.dead_letters:
                producer.send(topics.dlq, key, letter)
            checkpoint: JobWriterCheckpoint = {"partition": partition,
                                               "next_command": next_command,
                                               "updated_at": at_ms}  # fmt: skip
            producer.send(topics.state, checkpoint_key(partition),
                          encode("JobWriterCheckpoint", checkpoint), partition=partition)  # fmt: skip
            producer.commit()
        except KafkaException as exc:
            return ended_in_failure(producer, exc, partition, started, log)
        return Written("committed", time.monotonic() - started)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
