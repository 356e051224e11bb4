"""The single writer of job definitions (docs/decisions/0099, 0126, 0178): a consumer group
on `jobs.commands`; the owner of partition p judges p's commands in log order against its
catalogue of p's definitions, and writes each poll's verdicts and accepted changes, over every
partition it judged, in one transaction with the commands' offsets (KIP-447: the offsets carry
the consumer's group generation, so a judge the group has moved past commits nothing).

Built as the orchestrator is (decision 0061): on assignment the partition is paused, the
restore thread waits out any transaction of the previous owner still open on it and reads the
partition of `jobs.definitions` (read_committed) into the catalogue; then the loop seeks to
the group's committed offset and resumes. A transaction that fails drops every partition it
carried and restores them from Kafka, so no verdict ever outlives its effect, nor an effect
its verdict. No transaction is open while the consumer polls (each poll's ends first), so a
rebalance, which only happens inside a poll, never revokes a partition under one.

A follower consumer (assigned by hand, read_committed) reads the owned partitions of
`jobs.definitions` from where the restore ended and folds what direct producers wrote (records
without the writer's header): last writer wins, and the next command is judged against it.

A command read on a partition that does not own its key under the current partition count
(`partition_count`: a producer with metadata from before a resize, or a command written before
it; decision 0211) is never judged there: it is forwarded unchanged to its owner partition of
jobs.commands in the transaction that moves this partition's offset past it, so it is written
there once and judged by its owner.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections import defaultdict
from typing import Any

from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import BULK_READER_FETCH
from tickwheel.adapters.kafka.placement import foreign_owner, log_forwards
from tickwheel.adapters.kafka.reader import Record, record_of
from tickwheel.clock import Clock, SystemClock
from tickwheel.ports.kafka import GroupConsumer, KafkaClients, KafkaMessage, TransactionalWriter
from tickwheel.runtime.partitions import (
    OwnedPartitions,
    adopt_jobs_group,
    group_consumer,
    restore_seconds,
)
from tickwheel.runtime.restores import RestoreResult
from tickwheel.runtime.shutdown import ShutdownDeadline
from tickwheel.runtime.transactions import Written
from tickwheel.services.jobwriter.figures import JudgeFigures
from tickwheel.services.jobwriter.judge import Batch
from tickwheel.services.jobwriter.restore import (
    TRANSACTION_TIMEOUT_MS,
    JobWriterTopics,
    PartitionRestorer,
    PartitionRuntime,
    transactional_id,
)
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.services.jobwriter.writer import BatchWriter
from tickwheel.topology import topic as declared_topic

log = logging.getLogger("tickwheel.jobwriter")

# How long the broker holds a fetch that finds nothing. A record arriving answers the held
# fetch at once, so this is no latency: it is how often an idle consumer asks again (at 5 ms,
# 200 requests a second per consumer, broker CPU the creates then lack: decision 0152).
IDLE_FETCH_WAIT_MS = 100


class JobWriterService:
    def __init__(
        self,
        settings: JobWriterSettings,
        clients: KafkaClients[Any],
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.deadline = deadline
        self.topics = JobWriterTopics.declared()
        # The jobs group's partition count: which partition owns a command, read at each
        # command (`adopt_partition_count` sets it from the cluster's).
        self.partition_count = declared_topic("jobs.commands").partitions
        self.consumer: GroupConsumer[Any] = group_consumer(
            clients,
            settings.group_id,
            settings.instance,
            **{"fetch.wait.max.ms": IDLE_FETCH_WAIT_MS},
        )
        # The follower reads back every definition this judge writes (to fold the few a
        # direct producer wrote), so under load it fetched once per transaction's records;
        # it waits for a chunk as a bulk reader does: a direct write folds within 100 ms
        # still, and the broker answers far fewer fetches (decisions 0172, 0173).
        self.follower: GroupConsumer[Any] = clients.consumer(
            f"{settings.group_id}-follower-{uuid.uuid4()}", **BULK_READER_FETCH
        )
        self.clients = clients
        self.restorer = PartitionRestorer(
            clients, self.topics, settings.command_ttl_ms, settings.group_id
        )
        # A partition is assigned paused until restored: nothing is judged before the fence.
        self.owned: OwnedPartitions[PartitionRuntime] = OwnedPartitions(
            name="jobwriter",
            consumer=self.consumer,
            topic=self.topics.commands,
            restore=self.restorer.restore,
            position=lambda runtime: runtime.next_command,
            clock=self.clock,
            deadline=deadline,
            log=log,
            dropped=self._dropped,
        )
        self.partitions = self.owned.served
        self.writer = BatchWriter(self.topics)
        # The judge's one transactional producer (made and initialised at start, again after
        # a fence); its id is the instance's, so it fences only this instance's last run.
        self.producer: TransactionalWriter[Any] | None = None
        self.judged: dict[str, int] = defaultdict(int)  # by outcome, since start
        self.figures = JudgeFigures()  # logged every 10 s while it judges

    def now_ms(self) -> int:
        return self.owned.now_ms()

    def adopt_partition_count(self, partitions: int) -> None:
        """Take `partitions` as the jobs group's partition count (the cluster's, which a
        resize made larger than the declared one): the owner of each command read from now
        on. The judges hold no copy of it."""
        self.partition_count = partitions

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._producer()  # before any partition: the last run's open transaction aborted
        self.owned.subscribe()
        log.info(
            "jobwriter started",
            extra={"action": "jobwriter_started", "instance": self.settings.instance},
        )

    def run(self) -> None:
        # The cluster's count: a resize may have grown it past the file's (decision 0211).
        self.adopt_partition_count(
            adopt_jobs_group(self.settings.bootstrap, self.partition_count).partitions
        )
        if self.settings.metrics_port:
            self.figures.metrics.serve(self.settings.metrics_port, self.settings.metrics_addr)
        self.start()
        try:
            while self.owned.running:
                self.step(self.settings.poll_ms / 1000)
        finally:
            self.close()

    def step(self, timeout_s: float = 0.0) -> None:
        """One poll: install finished restores, fold direct writes, judge the commands read,
        commit them in one transaction, retry failed restores."""
        # The first command ends the wait (`consume(n, t)` waits for n or t), the rest of
        # what is there joins it: a batch is what arrived while the last one committed.
        first = self.consumer.poll(timeout_s)
        messages = [] if first is None else [first]
        if first is not None:
            messages.extend(self.consumer.consume(self.settings.max_batch - 1, 0))
        for restored in self.owned.restored():
            self._serve(restored)
        self._follow()
        self._judge(messages)
        self.owned.retry_due()
        self.figures.maybe_log(time.monotonic())

    def stop(self, *_args: Any) -> None:
        self.owned.stop()

    def close(self) -> None:
        self.owned.restores.stop()
        self.partitions.clear()
        with contextlib.suppress(RuntimeError, KafkaException):
            self.restorer.close()
        with contextlib.suppress(RuntimeError, KafkaException):
            self.follower.close()
        with contextlib.suppress(RuntimeError, KafkaException):
            self.consumer.close()

    # -- partitions coming and going -------------------------------------------------------
    def _dropped(self, partition: int, runtime: PartitionRuntime | None, _revoked: bool) -> None:
        """A partition left (revoked, or dropped after a failed transaction: no transaction is
        ever open then, each poll's ends first): stop following its definitions."""
        self.figures.metrics.partitions.set(len(self.partitions))
        if runtime is None:
            return
        with contextlib.suppress(KafkaException, RuntimeError):
            self.follower.incremental_unassign([TopicPartition(self.topics.definitions, partition)])
        log.info("partition dropped", extra={"action": "partition_dropped", "partition": partition})

    def _serve(self, restored: RestoreResult[PartitionRuntime]) -> None:
        """A restored partition: follow its definitions from where the restore read them."""
        runtime = restored.value
        assert runtime is not None
        partition = runtime.partition
        try:
            self.follower.incremental_assign(
                [TopicPartition(self.topics.definitions, partition, runtime.definitions_end)]
            )
        except KafkaException as exc:
            self.owned.failed(partition, exc)
            return
        self.figures.metrics.partitions.set(len(self.partitions))
        log.info(
            "partition restored",
            extra={
                "action": "partition_restored",
                "partition": partition,
                "definitions": len(runtime.judge.catalogue),
                "next_command": runtime.next_command,
                "seconds": round(restore_seconds(restored), 3),
            },
        )

    # -- the loop --------------------------------------------------------------------------
    def _follow(self) -> None:
        """Fold what direct producers wrote to the owned partitions of jobs.definitions."""
        if not self.partitions:
            return
        for msg in self.follower.consume(10_000, 0):
            runtime = self.partitions.get(msg.partition() or 0)
            if msg.error() or runtime is None:
                continue
            if runtime.judge.fold_direct(record_of(msg)):
                log.info(
                    "direct write folded",
                    extra={
                        "action": "direct_write_folded",
                        "partition": runtime.partition,
                        "offset": msg.offset(),
                    },
                )

    def _judge(self, messages: list[KafkaMessage] | Any) -> None:
        """Judge the poll into each partition's batch in log order (the catalogue moves at
        once, so later commands see earlier ones), then commit every partition's batch in the
        poll's one transaction, and wait for it: what arrives meanwhile is the next batch."""
        now = self.now_ms()
        for msg in messages:
            runtime = self.partitions.get(msg.partition() or 0)
            if msg.error() or runtime is None or msg.partition() is None:
                continue
            offset = msg.offset() or 0
            if offset < runtime.next_command:
                continue  # fetched before the seek took effect
            record = record_of(msg)
            owner = self._owner_elsewhere(record, runtime.partition)
            if owner is None:
                runtime.judge.receive(record, now)
            else:
                runtime.judge.forward(record, owner)
            runtime.next_command = offset + 1
        batches = [
            (runtime, runtime.judge.take())
            for runtime in self.partitions.values()
            if runtime.judge.batch.commands
        ]
        if batches:
            self._write(batches)

    def _owner_elsewhere(self, record: Record, partition: int) -> int | None:
        """Where `record` is to be forwarded, if another partition owns it (a key that is not
        text is nobody's: handled here as ever)."""
        key = record.key if record.key_is_text else None
        return foreign_owner(key, partition, self.partition_count)

    def _write(self, batches: list[tuple[PartitionRuntime, Batch]]) -> None:
        """The poll's transaction; a failure drops every partition it carried (their
        catalogues moved past what committed) and restores them from Kafka."""
        try:
            producer = self._producer()
        except KafkaException as exc:  # a new producer's init failed (the broker away)
            log.warning(
                "producer init failed", extra={"action": "producer_init_failed", "error": str(exc)}
            )
            written = Written("failed", 0.0)
        else:
            written = self.writer.write(producer, self.consumer, batches)
        if written.outcome == "committed":
            taken = Batch.merged([batch for _runtime, batch in batches])
            for outcome, count in taken.outcomes.items():
                self.judged[outcome] += count
            self.figures.committed(taken, written.seconds, self.now_ms())
            for runtime, batch in batches:
                if batch.forwarded:
                    log_forwards(log, runtime.partition, batch.forwarded)
            return
        self.figures.failed_with(written.outcome)
        # A fenced producer is unusable; a failed one may be too (its abort can meet the fence
        # of a transaction the broker timed out). A new one is made when next needed: its
        # init costs one round trip, and fences only this instance's own earlier producer.
        self.producer = None
        for runtime, _batch in batches:
            # No restore failed here: the writer has logged the transaction's failure, and
            # the partition is restored again from what committed.
            self.owned.settle(runtime.partition, runtime, written.outcome)

    def _producer(self) -> TransactionalWriter[Any]:
        if self.producer is None:
            producer = self.clients.transactional(
                transactional_id(self.settings.instance),
                **{"transaction.timeout.ms": TRANSACTION_TIMEOUT_MS},
            )
            producer.init()  # fences this instance's earlier producer, aborts its transaction
            self.producer = producer
        return self.producer
