"""One orchestrator partition's transaction: a batch's events, snapshots, commands, alerts,
dead letters and the checkpoint, committed together (decision 0061). Several partitions'
transactions are written at once (each partition has its own producer): the loop waits for
the slowest commit, not for the sum of them."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.adapters.kafka.producer import is_fatal
from tickwheel.services.orchestrator.partition import Batch
from tickwheel.services.orchestrator.records import checkpoint_key, checkpoint_record
from tickwheel.services.orchestrator.restore import OrchestratorTopics, PartitionRuntime
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.orchestrator")
Outcome = Literal["committed", "fenced", "failed"]


class BatchWriter:
    def __init__(self, topics: OrchestratorTopics, now_ms: Callable[[], int]) -> None:
        self.topics = topics
        self.now_ms = now_ms
        self._pool: ThreadPoolExecutor | None = None

    def write_all(self, work: list[tuple[PartitionRuntime, Batch]]) -> list[Outcome]:
        """Each (partition, batch) in its own transaction, concurrently; outcomes in order."""
        if len(work) <= 1:
            return [self.write(runtime, batch) for runtime, batch in work]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="orchestrator-tx")
        return list(self._pool.map(lambda item: self.write(*item), work))

    def write(self, runtime: PartitionRuntime, batch: Batch) -> Outcome:
        producer, partition = runtime.producer, runtime.partition
        try:
            producer.begin()
            for event in batch.events:
                producer.send(self.topics.events, event["workflow_id"],
                              encode("WorkflowEvent", event))  # fmt: skip
            for workflow_id, snapshot in batch.snapshot_records().items():
                producer.send(self.topics.state, workflow_id, encode("WorkflowSnapshot", snapshot))
            for out in batch.outgoing:
                producer.send(topic_name(out.topic), out.key, encode(out.record, out.value))
            for letter in batch.dead_letters:
                producer.send(self.topics.dlq, letter["job_id"], encode("DeadLetter", letter))
            checkpoint = checkpoint_record(partition, {self.topics.inputs: runtime.next_input},
                                           self.now_ms())  # fmt: skip
            producer.send(self.topics.state, checkpoint_key(partition),
                          encode("WorkflowSnapshot", checkpoint), partition=partition)  # fmt: skip
            producer.commit()
        except KafkaException as exc:
            fenced = is_fatal(exc)
            log.warning(
                "fenced; dropping the partition" if fenced else "transaction failed; restoring",
                extra={"action": "producer_fenced" if fenced else "transaction_failed",
                       "partition": partition, "error": str(exc)},
            )  # fmt: skip
            if not fenced:
                with contextlib.suppress(KafkaException):
                    producer.abort()
            return "fenced" if fenced else "failed"
        return "committed"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
