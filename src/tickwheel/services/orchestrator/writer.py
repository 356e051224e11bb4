"""One orchestrator partition's transaction: a batch's events, snapshots, tombstones of pruned
instances, commands, alerts, dead letters, the inputs it forwards to their owner partition and
the checkpoint, committed together (decision 0061): a forwarded input is written once, or the
checkpoint stays before it and it is read and forwarded again.

Transactions run on a small pool, never on the loop's thread (decision 0094): each partition
has its own producer, so the partitions of one poll commit concurrently, and the loop reads
and folds the next poll while they commit. A partition has at most one transaction in
flight; the service waits for it before it hands that partition's next batch over, and a
batch carries the checkpoint it was folded up to (taken on the loop's thread), never the
partition's offset of the moment it is written.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from tickwheel.adapters.avro import encode
from tickwheel.adapters.avro.fast import encode_record
from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.runtime.transactions import Written, ended_in_failure
from tickwheel.services.orchestrator.partition import Batch
from tickwheel.services.orchestrator.records import checkpoint_key, checkpoint_record
from tickwheel.services.orchestrator.restore import OrchestratorTopics, PartitionRuntime
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.orchestrator")


@dataclass(frozen=True)
class Write:
    """One partition's transaction: `batch`, and `next_input` as its checkpoint."""

    runtime: PartitionRuntime
    batch: Batch
    next_input: int
    at_ms: int


class BatchWriter:
    def __init__(self, topics: OrchestratorTopics, workers: int = 8) -> None:
        self.topics = topics
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="orchestrator-tx")

    def submit(self, write: Write) -> Future[Written]:
        """Start `write` on the pool; the caller keeps one in flight per partition."""
        return self._pool.submit(self.write, write)

    def write(self, write: Write) -> Written:
        runtime, batch = write.runtime, write.batch
        producer, partition = runtime.producer, runtime.partition
        started = time.monotonic()
        try:
            producer.begin()
            for event in batch.events:
                producer.send(
                    self.topics.events, event["workflow_id"], encode_record("WorkflowEvent", event)
                )
            for workflow_id, snapshot in batch.snapshot_records().items():
                producer.send(
                    self.topics.state, workflow_id, encode_record("WorkflowSnapshot", snapshot)
                )
            for workflow_id in batch.pruned:
                producer.send(self.topics.state, workflow_id, None)  # tombstone: compacted away
            for out in batch.outgoing:
                producer.send(topic_name(out.topic), out.key, encode_record(out.record, out.value))
            for letter in batch.dead_letters:
                producer.send(self.topics.dlq, letter["job_id"], encode("DeadLetter", letter))
            for forwarded in batch.forwarded:  # unchanged, to the partition that owns the key
                producer.send(
                    self.topics.inputs,
                    forwarded.key,
                    forwarded.value,
                    partition=forwarded.partition,
                    headers=list(forwarded.headers),
                )
            checkpoint = checkpoint_record(
                partition, {self.topics.inputs: write.next_input}, write.at_ms
            )
            producer.send(
                self.topics.state,
                checkpoint_key(partition),
                encode_record("WorkflowSnapshot", checkpoint),
                partition=partition,
            )
            producer.commit()
        except KafkaException as exc:
            return ended_in_failure(producer, exc, partition, started, log)
        return Written("committed", time.monotonic() - started)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
