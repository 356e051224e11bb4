"""The orchestrator service: owns partitions of workflows.inputs (and of the co-partitioned
workflows.state and workflows.events), folds every input into its instance, and writes what
a batch decided in one transaction per partition (docs/decisions/0059, 0061).

Exactly-once decisions, as the timer's trigger: one transactional producer per owned
partition (`<prefix>tickwheel-orchestrator-p<N>`); a new owner's `init_transactions()` fences
the old one and waits out its open transaction before it reads the partition's snapshots. A
batch's events, snapshots, commands to the timer, alerts, dead letters and the checkpoint
(the next input offset) commit together, so a crash anywhere replays the batch from the
checkpoint into the same state, events and command ids. Any transaction failure drops the
partition's memory and restores it from Kafka.

The loop reads and folds the next polls while the last transactions commit (decision 0094)
and never waits for a commit to read on: while a partition's transaction is in flight, what
the following polls fold joins that partition's next batch, handed over once the one before
it is settled (decision 0131: a batch grows to what arrived during one commit, so a backlog
costs fewer transactions per input). A partition whose transaction failed loses what was
folded meanwhile with the rest of its memory.

An input read on a partition that does not own its key under the current partition count
(`partition_count`: a producer with metadata from before a resize, or an input written before
it; decision 0211) is not folded: it is forwarded unchanged to its owner partition in the
transaction that moves this partition's checkpoint past it, so it is written there once.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from concurrent.futures import Future
from typing import Any

from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.adapters.kafka.placement import foreign_owner, log_forwards
from tickwheel.adapters.kafka.reader import Record, record_of
from tickwheel.clock import Clock, SystemClock
from tickwheel.errors import InvalidInput
from tickwheel.ports.kafka import GroupConsumer, KafkaClients
from tickwheel.runtime.partitions import (
    OwnedPartitions,
    adopt_jobs_group,
    group_consumer,
    restore_seconds,
)
from tickwheel.runtime.restores import RestoreResult
from tickwheel.runtime.shutdown import ShutdownDeadline
from tickwheel.runtime.transactions import Written
from tickwheel.services.orchestrator.approval_webhooks import ApprovalWebhooks
from tickwheel.services.orchestrator.definitions import DefinitionCatalog
from tickwheel.services.orchestrator.metrics import OrchestratorMetrics
from tickwheel.services.orchestrator.notices import ApprovalNotifier
from tickwheel.services.orchestrator.partition import Batch, UnknownDefinition
from tickwheel.services.orchestrator.restore import (
    OrchestratorTopics,
    PartitionRestorer,
    PartitionRuntime,
)
from tickwheel.services.orchestrator.settings import (
    WEBHOOK_SECRET_VAR,
    WEBHOOKS_VAR,
    OrchestratorSettings,
)
from tickwheel.services.orchestrator.writer import BatchWriter, Write
from tickwheel.services.webhooks import WebhookSink, sink_guard
from tickwheel.topology import topic as declared_topic

log = logging.getLogger("tickwheel.orchestrator")

# How often the unread inputs of the owned partitions are counted for the lag metric.
LAG_EVERY_S = 5.0
# A partition's next batch past this many inputs waits for its transaction in flight
# (backpressure: memory ahead of the log, and a batch's size, stay bounded).
MAX_PENDING_INPUTS = 5000
# While a folded batch waits on its partition's commit, polls wait this long at most, so the
# commit's end is noticed at once (a step-to-step hop may be waiting in that batch).
WAITING_POLL_S = 0.001


class OrchestratorService:
    def __init__(
        self,
        settings: OrchestratorSettings,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
        clients: KafkaClients[Any] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.clients: KafkaClients[Any] = clients or BrokerClients(settings.bootstrap)
        self.topics = OrchestratorTopics.declared()
        self.metrics = OrchestratorMetrics()
        # Approval links, once committed.
        self.notifier = ApprovalNotifier(settings.approval_keys, settings.approval_link or None)
        self.webhooks = self._approval_webhooks()  # settings checked before any client exists
        # The jobs group's partition count: which partition owns an input, read at each input
        # (`adopt_partition_count` sets it, and every copy of it, from the cluster's).
        self.partition_count = declared_topic("workflows.inputs").partitions
        self.catalog = DefinitionCatalog(settings.bootstrap)
        self._refreshed_this_poll = False
        self.consumer: GroupConsumer[Any] = group_consumer(
            self.clients, settings.group_id, settings.instance
        )
        self.restorer = PartitionRestorer(
            self.clients,
            self.topics,
            self.catalog,
            self.partition_count,
            self.now_ms,
            settings.retention_ms,
        )
        # A partition is assigned paused until restored: nothing is read before the fence.
        self.owned: OwnedPartitions[PartitionRuntime] = OwnedPartitions(
            name="orchestrator",
            consumer=self.consumer,
            topic=self.topics.inputs,
            restore=self.restorer.restore,
            position=lambda runtime: runtime.next_input,
            clock=self.clock,
            deadline=deadline,
            log=log,
            dropped=self._dropped,
        )
        self.partitions = self.owned.served
        self.writer = BatchWriter(self.topics)
        # The one transaction in flight per partition: what it carries and its outcome.
        self.in_flight: dict[int, tuple[PartitionRuntime, Batch, Future[Written]]] = {}
        self._lag_due = 0.0

    def _approval_webhooks(self) -> list[ApprovalWebhooks]:
        settings = self.settings
        if not settings.approval_webhooks:
            return []
        if not settings.approval_webhook_secret:
            raise InvalidInput(
                WEBHOOK_SECRET_VAR, f"is not set while {WEBHOOKS_VAR} is; accepted: whsec_ + base64"
            )
        guard = sink_guard(
            settings.approval_webhooks, settings.approval_webhook_networks, WEBHOOKS_VAR
        )
        return [
            ApprovalWebhooks(
                WebhookSink(url, settings.approval_webhook_secret, guard, self.clock),
                self.notifier,
                settings.bootstrap,
                self.topics.events,
                settings.group_id,
                settings.approval_webhook_backoff_s,
                observe=lambda outcome: self.metrics.webhooks.labels(outcome).inc(),
            )
            for url in settings.approval_webhooks
        ]

    def now_ms(self) -> int:
        return self.owned.now_ms()

    def adopt_partition_count(self, partitions: int) -> None:
        """Take `partitions` as the jobs group's partition count (the cluster's, which a
        resize made larger than the declared one): the owner of each input read from now on,
        the step keys of the owned partitions' commands, and those of partitions restored
        later (a restore under way when this is called is brought to it at install)."""
        self.partition_count = partitions
        self.restorer.partitions = partitions
        for runtime in self.partitions.values():
            runtime.orchestrator.partitions = partitions

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        # The cluster's count: a resize may have grown it past the file's (decision 0211).
        self.adopt_partition_count(
            adopt_jobs_group(self.settings.bootstrap, self.partition_count).partitions
        )
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port, self.settings.metrics_addr)
        self.catalog.refresh()
        self.start()
        try:
            while self.owned.running:
                self.step()
        finally:
            self.close()

    def start(self) -> None:
        for webhooks in self.webhooks:
            webhooks.start()
        # Their transactions in flight end before partitions are taken away.
        self.owned.subscribe(before_revoke=lambda tps: self._settle({tp.partition for tp in tps}))
        log.info(
            "orchestrator started",
            extra={"action": "orchestrator_started", "instance": self.settings.instance},
        )

    def step(self) -> None:
        """One turn of the loop: poll, serve finished restores, fold and hand over."""
        messages = self._poll()
        for restored in self.owned.restored():
            self._serve(restored)
        self._fold(messages)
        self.owned.retry_due()
        self._observe()

    def close(self) -> None:
        for webhooks in self.webhooks:
            webhooks.stop()
        self._settle()
        for runtime in self.partitions.values():
            runtime.producer.flush(self.owned.flush_budget())
        self.partitions.clear()
        self.writer.close()
        self.consumer.close()

    def stop(self, *_args: Any) -> None:
        for webhooks in self.webhooks:
            webhooks.stop()
        self.owned.stop()

    # -- partitions coming and going -------------------------------------------------------
    def _dropped(self, partition: int, runtime: PartitionRuntime | None, revoked: bool) -> None:
        """A partition left: a revoked one's producer delivers what it holds (its transaction
        in flight was settled first)."""
        if runtime is not None and revoked:
            runtime.producer.flush(self.owned.flush_budget())

    def _serve(self, restored: RestoreResult[PartitionRuntime]) -> None:
        runtime = restored.value
        assert runtime is not None
        runtime.orchestrator.partitions = self.partition_count  # adopted while it ran
        seconds = restore_seconds(restored)
        self.metrics.restore_seconds.observe(seconds)
        if runtime.orchestrator.batch:  # dead letters the restore found
            self._submit([(runtime, runtime.orchestrator.take())])
            self._settle({runtime.partition})
        log.info(
            "partition restored",
            extra={
                "action": "partition_restored",
                "partition": runtime.partition,
                "instances": len(runtime.orchestrator.instances),
                "definitions": len(self.catalog),
                "next_input": runtime.next_input,
                "seconds": round(seconds, 3),
            },
        )

    # -- the loop --------------------------------------------------------------------------
    def _poll(self) -> list[Any]:
        """The next inputs: what is already fetched, else the first to arrive within the poll
        wait and whatever came with it. `consume` alone waits out its whole timeout for a
        batch it cannot fill, so every step-to-step hop paid part of the wait (decision 0131)."""
        messages = list(self.consumer.consume(self.settings.max_batch, 0))
        if messages:
            return messages
        first = self.consumer.poll(self._poll_s())
        if first is None:
            return []
        if self.settings.max_batch == 1:
            return [first]
        return [first, *self.consumer.consume(self.settings.max_batch - 1, 0)]

    def _poll_s(self) -> float:
        for partition in self.in_flight:
            runtime = self.partitions.get(partition)
            if runtime is not None and (runtime.moved or runtime.orchestrator.batch):
                return WAITING_POLL_S
        return self.settings.poll_ms / 1000

    def _fold(self, messages: list[Any]) -> None:
        """Fold the poll into each partition's next batch, then hand over the batches whose
        partition has no transaction in flight (folding overlapped the commits)."""
        now = self.now_ms()
        self._refreshed_this_poll = False
        by_partition: dict[int, list[Any]] = defaultdict(list)
        oldest: int | None = None
        for msg in messages:
            if not msg.error() and msg.partition() in self.partitions:
                by_partition[msg.partition()].append(msg)
        pruned = 0
        for runtime in self.partitions.values():
            pruned += runtime.orchestrator.prune_due(now)  # before this poll's inputs
        for partition, batch in by_partition.items():
            runtime = self.partitions[partition]
            for msg in batch:
                if msg.offset() < runtime.next_input:
                    continue  # read before the seek took effect
                self._receive(runtime, msg, now)
                runtime.next_input = msg.offset() + 1
                runtime.moved = True
                stamp = msg.timestamp()[1]  # when it was written (ms; 0 or less: unknown)
                if stamp > 0 and (oldest is None or stamp < oldest):
                    oldest = stamp
        if pruned:
            self.metrics.pruned.inc(pruned)
            log.info(
                "finished instances pruned", extra={"action": "instances_pruned", "count": pruned}
            )
        self.metrics.input_lag_seconds.set(max(0, now - oldest) / 1000 if oldest else 0)
        self._hand_over()

    def _hand_over(self) -> None:
        """Each partition's batch to its transaction once the one before it is settled; a
        batch past `MAX_PENDING_INPUTS` waits for that commit (backpressure)."""
        self._settle(wait=False)
        for partition, runtime in list(self.partitions.items()):
            if (
                partition in self.in_flight
                and runtime.orchestrator.batch.inputs >= MAX_PENDING_INPUTS
            ):
                self._settle({partition})
        # A partition whose transaction failed was dropped by `_settle`, with what it folded.
        self._submit(
            [
                (runtime, runtime.orchestrator.take())
                for partition, runtime in self.partitions.items()
                if partition not in self.in_flight
            ]
        )

    def _receive(self, runtime: PartitionRuntime, msg: Any, now: int) -> None:
        record = record_of(msg)
        owner = self._owner_elsewhere(record, runtime.partition)
        if owner is not None:
            runtime.orchestrator.forward(record, owner)
            return
        try:
            runtime.orchestrator.receive(record, now)
        except UnknownDefinition:
            # Published a moment ago, perhaps: read the definitions again, at most once per
            # poll (a definition is published before any start naming it, so one read after
            # the start was consumed finds it; a flood of bad starts costs one read).
            if not self._refreshed_this_poll:
                self._refreshed_this_poll = True
                self.catalog.refresh()
            try:
                runtime.orchestrator.receive(record, now)
            except UnknownDefinition as exc:
                runtime.orchestrator.refuse(record, str(exc), now)

    def _owner_elsewhere(self, record: Record, partition: int) -> int | None:
        """Where `record` is to be forwarded, if another partition owns it (a key that is not
        text is nobody's: handled here as ever)."""
        key = record.key if record.key_is_text else None
        return foreign_owner(key, partition, self.partition_count)

    def _submit(self, work: list[tuple[PartitionRuntime, Batch]]) -> None:
        """Each partition's batch to its own transaction, on the writer's pool; a partition
        with nothing new (no batch, no input read) writes nothing."""
        at = self.now_ms()
        for runtime, batch in work:
            if not (batch or runtime.moved):
                continue
            assert runtime.partition not in self.in_flight, "one transaction per partition"
            runtime.moved = False
            write = Write(runtime, batch, runtime.next_input, at)
            self.in_flight[runtime.partition] = (runtime, batch, self.writer.submit(write))

    def _settle(self, partitions: set[int] | None = None, *, wait: bool = True) -> None:
        """Settle the transactions in flight (of `partitions`, or all): wait for them, or with
        `wait=False` only those already ended; a partition whose transaction failed is
        dropped and restored from Kafka (after the session timeout if fenced)."""
        for partition in [p for p in self.in_flight if partitions is None or p in partitions]:
            if not wait and not self.in_flight[partition][2].done():
                continue
            runtime, batch, future = self.in_flight.pop(partition)
            written = future.result()
            self.metrics.observe_transaction(written.outcome, written.seconds)
            if written.outcome == "committed":
                forwarded = len(batch.forwarded)
                self.metrics.inputs.labels("folded").inc(
                    batch.inputs - len(batch.dead_letters) - forwarded
                )
                self.metrics.inputs.labels("dead_lettered").inc(len(batch.dead_letters))
                self.metrics.inputs.labels("forwarded").inc(forwarded)
                if forwarded:
                    log_forwards(log, partition, batch.forwarded)
                self.metrics.events.inc(len(batch.events))
                self.metrics.step_transitions.inc(batch.step_transitions())
                self.notifier.announce(batch)
                continue
            self.owned.settle(partition, runtime, written.outcome)

    def _observe(self) -> None:
        """The gauges: instances held, partitions served, and now and then the unread inputs."""
        orchestrators = [runtime.orchestrator for runtime in self.partitions.values()]
        self.metrics.observe_instances(
            sum(o.open_instances for o in orchestrators),
            sum(len(o.finished) for o in orchestrators),
        )
        self.metrics.partitions.set(len(self.partitions))
        if self.now_ms() / 1000 < self._lag_due:
            return
        self._lag_due = self.now_ms() / 1000 + LAG_EVERY_S
        unread = 0
        for runtime in self.partitions.values():
            tp = TopicPartition(self.topics.inputs, runtime.partition)
            with contextlib.suppress(KafkaException):
                _low, high = self.consumer.get_watermark_offsets(tp, cached=True)
                unread += max(0, high - runtime.next_input)
        self.metrics.input_lag_records.set(unread)
