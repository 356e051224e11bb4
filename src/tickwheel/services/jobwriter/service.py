"""The single writer of job definitions (docs/decisions/0099, 0126): a consumer group on
`jobs.commands`; the owner of partition p judges p's commands in log order against its
catalogue of p's definitions, and writes each poll's verdicts and accepted changes in one
transaction per partition, with the commands' offsets.

Built as the orchestrator is (decision 0061): on assignment the partition is paused, the
restore thread fences the previous owner (`<prefix>tickwheel-jobwriter-p<N>`) and reads the
partition of `jobs.definitions` (read_committed) into the catalogue; then the loop seeks to
the group's committed offset and resumes. A transaction that fails drops the partition and
restores it from Kafka, so no verdict ever outlives its effect, nor an effect its verdict.
Where the partition was judged to is a checkpoint record on `jobwriter.state`, in the same
transaction (decision 0129).

A follower consumer (assigned by hand, read_committed) reads the owned partitions of
`jobs.definitions` from where the restore ended and folds what direct producers wrote (records
without the writer's header): last writer wins, and the next command is judged against it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections import defaultdict
from concurrent.futures import Future
from typing import Any

from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import BULK_READER_FETCH
from tickwheel.clock import Clock, SystemClock
from tickwheel.logs import configure_logging
from tickwheel.ports.kafka import GroupConsumer, KafkaClients, KafkaMessage
from tickwheel.services.jobwriter.figures import JudgeFigures
from tickwheel.services.jobwriter.judge import Batch
from tickwheel.services.jobwriter.restore import (
    JobWriterTopics,
    PartitionRestorer,
    PartitionRuntime,
)
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.services.jobwriter.writer import BatchWriter
from tickwheel.services.shutdown import KAFKA_BUDGET_S, ShutdownDeadline, serve
from tickwheel.services.timer.gate import record_of
from tickwheel.services.timer.restore import BackgroundRestores
from tickwheel.services.transactions import Written

log = logging.getLogger("tickwheel.jobwriter")

# As the timer and the orchestrator: after a fence, wait past the session timeout.
FENCED_RECHECK_S = 30.0
RESTORE_RETRY_S = 2.0
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
        self.running = True
        self.partitions: dict[int, PartitionRuntime] = {}
        self.restore_due: dict[int, float] = {}
        self.consumer: GroupConsumer[Any] = clients.consumer(
            settings.group_id,
            **{"max.poll.interval.ms": 600000, "session.timeout.ms": 10000,
               "heartbeat.interval.ms": 1000, "fetch.wait.max.ms": IDLE_FETCH_WAIT_MS,
               "group.instance.id": f"{settings.group_id}-{settings.instance}"},
        )  # fmt: skip
        # The follower reads back every definition this judge writes (to fold the few a
        # direct producer wrote), so under load it fetched once per transaction's records;
        # it waits for a chunk as a bulk reader does: a direct write folds within 100 ms
        # still, and the broker answers far fewer fetches (decisions 0172, 0173).
        self.follower: GroupConsumer[Any] = clients.consumer(
            f"{settings.group_id}-follower-{uuid.uuid4()}", **BULK_READER_FETCH
        )
        self.restorer = PartitionRestorer(clients, self.topics, settings.command_ttl_ms)
        self.restores: BackgroundRestores[PartitionRuntime] = BackgroundRestores(
            self.restorer.restore, name="jobwriter-restore"
        )
        self.writer = BatchWriter(self.topics)
        self.judged: dict[str, int] = defaultdict(int)  # by outcome, since start
        self.figures = JudgeFigures()  # logged every 10 s while it judges
        # The one transaction in flight per partition: what it carries and its outcome.
        self.in_flight: dict[int, tuple[PartitionRuntime, Batch, Future[Written]]] = {}

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self.consumer.subscribe([self.topics.commands], on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)  # fmt: skip
        log.info("jobwriter started", extra={"action": "jobwriter_started",
                                             "instance": self.settings.instance})  # fmt: skip

    def run(self) -> None:
        from tickwheel.adapters.kafka.admin import verify_topology

        verify_topology(bootstrap=self.settings.bootstrap)
        if self.settings.metrics_port:  # loopback unless the address says otherwise
            self.figures.metrics.serve(
                self.settings.metrics_port, os.environ.get("TICKWHEEL_METRICS_ADDR", "127.0.0.1")
            )
        self.start()
        try:
            while self.running:
                self.step(self.settings.poll_ms / 1000)
        finally:
            self.close()

    def step(self, timeout_s: float = 0.0) -> None:
        """One poll: install finished restores, fold direct writes, judge the commands read,
        hand each partition's batch to its transaction, retry failed restores."""
        # The first command ends the wait (`consume(n, t)` waits for n or t), the rest of
        # what is there joins it: a batch is what arrived while the last one committed.
        first = self.consumer.poll(timeout_s)
        messages = [] if first is None else [first]
        if first is not None:
            messages.extend(self.consumer.consume(self.settings.max_batch - 1, 0))
        self._install_restores()
        self._follow()
        self._judge(messages)
        self._retry_restores()
        self.figures.maybe_log(time.monotonic())

    def stop(self, *_args: Any) -> None:
        self.running = False
        self.restores.stop()
        if self.deadline is not None:
            self.deadline.arm(KAFKA_BUDGET_S)

    def close(self) -> None:
        self.restores.stop()
        self.settle()
        self.partitions.clear()
        self.writer.close()
        with contextlib.suppress(RuntimeError, KafkaException):
            self.follower.close()
        with contextlib.suppress(RuntimeError, KafkaException):
            self.consumer.close()

    # -- rebalancing -----------------------------------------------------------------------
    def _on_assign(self, consumer: GroupConsumer[Any], partitions: list[Any]) -> None:
        consumer.incremental_assign(partitions)
        consumer.pause(partitions)  # until restored: nothing is judged before the fence
        for tp in partitions:
            self.restores.begin(tp.partition)

    def _on_revoke(self, consumer: GroupConsumer[Any], partitions: list[Any]) -> None:
        self.settle({tp.partition for tp in partitions})  # their transactions end first
        for tp in partitions:
            self.restore_due.pop(tp.partition, None)
            self.restores.cancel(tp.partition)
            self._drop(tp.partition)
        with contextlib.suppress(KafkaException):
            consumer.incremental_unassign(partitions)

    def _drop(self, partition: int) -> None:
        runtime = self.partitions.pop(partition, None)
        self.figures.metrics.partitions.set(len(self.partitions))
        if runtime is None:
            return
        with contextlib.suppress(KafkaException, RuntimeError):
            self.follower.incremental_unassign([TopicPartition(self.topics.definitions, partition)])
        log.info("partition dropped", extra={"action": "partition_dropped",
                                             "partition": partition})  # fmt: skip

    def _install_restores(self) -> None:
        for result in self.restores.finished():
            runtime = result.value
            if result.error is not None or runtime is None:
                self._restore_failed(result.partition, result.error or RuntimeError("no result"))
                continue
            partition = runtime.partition
            try:
                tp = TopicPartition(self.topics.commands, partition)
                if runtime.next_command < 0:  # no checkpoint yet: the group's offset, if any
                    committed = self.consumer.committed([tp], timeout=10)[0].offset
                    runtime.next_command = max(0, committed)
                self.consumer.seek(TopicPartition(self.topics.commands, partition,
                                                  runtime.next_command))  # fmt: skip
                self.follower.incremental_assign([TopicPartition(
                    self.topics.definitions, partition, runtime.definitions_end)])  # fmt: skip
                self.consumer.resume([tp])
            except KafkaException as exc:
                self._restore_failed(partition, exc)
                continue
            self.partitions[partition] = runtime
            self.figures.metrics.partitions.set(len(self.partitions))
            log.info("partition restored", extra={
                "action": "partition_restored", "partition": partition,
                "definitions": len(runtime.judge.catalogue), "next_command": runtime.next_command,
                "seconds": round(time.monotonic() - result.started, 3)})  # fmt: skip

    def _restore_failed(
        self, partition: int, exc: Exception, wait_s: float = RESTORE_RETRY_S
    ) -> None:
        log.error("restore failed; trying again", extra={
            "action": "restore_failed", "partition": partition, "error": repr(exc)})  # fmt: skip
        self._drop(partition)
        with contextlib.suppress(KafkaException):
            self.consumer.pause([TopicPartition(self.topics.commands, partition)])
        self.restore_due[partition] = time.monotonic() + wait_s

    def _retry_restores(self) -> None:
        if not self.restore_due:
            return
        owned = {tp.partition for tp in self.consumer.assignment()}
        for partition, due in list(self.restore_due.items()):
            if partition not in owned or partition in self.partitions:
                del self.restore_due[partition]
            elif time.monotonic() >= due and not self.restores.under_way(partition):
                del self.restore_due[partition]
                self.restores.begin(partition)

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
                log.info("direct write folded", extra={
                    "action": "direct_write_folded", "partition": runtime.partition,
                    "offset": msg.offset()})  # fmt: skip

    def _judge(self, messages: list[KafkaMessage] | Any) -> None:
        """Judge the poll into each partition's batch in log order (the catalogue moves at
        once, so later commands see earlier ones), then commit every partition's batch, side
        by side, each in its own transaction."""
        now = self.now_ms()
        for msg in messages:
            runtime = self.partitions.get(msg.partition() or 0)
            if msg.error() or runtime is None or msg.partition() is None:
                continue
            offset = msg.offset() or 0
            if offset < runtime.next_command:
                continue  # fetched before the seek took effect
            runtime.judge.receive(record_of(msg), now)
            runtime.next_command = offset + 1
        for partition, runtime in self.partitions.items():
            if not runtime.judge.batch.commands:
                continue
            taken = runtime.judge.take()
            future = self.writer.submit(runtime, taken, runtime.next_command, now)
            self.in_flight[partition] = (runtime, taken, future)
        # Wait for every partition's commit before the next poll. Overlapping the next poll
        # with the commits (handing a partition its next batch as soon as its last settled)
        # measured slower on this 2-core machine: more, smaller transactions, and the broker
        # shares the cores (bench/reports/api-writes.md). What arrives meanwhile is the next
        # poll's batch.
        self._settle(wait=True)

    def settle(self, partitions: set[int] | None = None) -> None:
        """Wait for the transactions in flight (of `partitions`, or all)."""
        self._settle(wait=True, partitions=partitions)

    def _settle(self, wait: bool, partitions: set[int] | None = None) -> None:
        """Take the outcomes of finished transactions (all of them when `wait`); a partition
        whose transaction failed is dropped with what it judged since, and restored."""
        for partition, (runtime, taken, future) in list(self.in_flight.items()):
            if partitions is not None and partition not in partitions:
                continue
            if not wait and not future.done():
                continue
            del self.in_flight[partition]
            written = future.result()
            if written.outcome == "committed":
                for outcome, count in taken.outcomes.items():
                    self.judged[outcome] += count
                self.figures.committed(taken, written.seconds, self.now_ms())
                continue
            self.figures.failed_with(written.outcome)
            if self.partitions.get(partition) is not runtime:
                continue  # revoked meanwhile
            self._restore_failed(partition, RuntimeError(written.outcome),
                                 FENCED_RECHECK_S if written.outcome == "fenced"
                                 else RESTORE_RETRY_S)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    from tickwheel.adapters.kafka.broker_clients import BrokerClients
    from tickwheel.services.environment import service_parser

    parser = service_parser("tickwheel.services.jobwriter")
    parser.add_argument("--instance", default=os.environ.get("TICKWHEEL_INSTANCE", "jobwriter"),
                        help="this instance's name in the group (env TICKWHEEL_INSTANCE)")  # fmt: skip
    args = parser.parse_args(argv)
    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))

    def build(deadline: ShutdownDeadline) -> JobWriterService:
        settings = JobWriterSettings(instance=args.instance)
        return JobWriterService(settings, BrokerClients(settings.bootstrap), deadline=deadline)

    serve(log, "jobwriter", build)
