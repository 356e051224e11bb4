"""The timer service: owns partitions of jobs.definitions (and of every co-partitioned topic),
keeps a wheel per partition, and emits due occurrences exactly once.

Exactly-once trigger (docs/decisions/0004-timer-fencing.md):
- one transactional producer per owned partition, `transactional.id = <prefix>tickwheel-timer-p<N>`.
  A new owner's `init_transactions()` fences the previous owner of that partition and waits
  until its open transaction is aborted or committed; only then is the partition's timer state
  read (read_committed). A zombie's later writes are rejected by the broker.
- each tick, for each partition: the execution requests, skipped-occurrence events, timer-state
  updates and the consumed command offsets go in one transaction (writer.py).
- any transaction failure drops the partition's in-memory state and restores it from Kafka
  (restore.py); nothing one record or one job does stops a partition (decision 0055).
"""

from __future__ import annotations

import gc
import logging
from typing import Any

from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.ports.kafka import KafkaClients, ReadRecord
from tickwheel.runtime.partitions import (
    RESTORE_RETRY_S,
    OwnedPartitions,
    adopt_jobs_group,
    group_consumer,
    restore_seconds,
)
from tickwheel.runtime.restores import RestoreResult
from tickwheel.runtime.shutdown import ShutdownDeadline
from tickwheel.runtime.transactions import Outcome
from tickwheel.services.timer.calendars import CalendarFollower
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.inbox import CommandInbox
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.intake import Intake
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.restore import PartitionRestorer
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics, burst_elsewhere
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.services.timer.writer import Sent, TransactionWriter
from tickwheel.topology import topic as declared_topic

log = logging.getLogger("tickwheel.timer")


class TimerService:
    def __init__(
        self,
        settings: TimerSettings,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
        clients: KafkaClients[TopicPartition] | None = None,
        inline: bool = False,
    ) -> None:
        """`clients`: where the Kafka clients come from (the cluster of `settings.bootstrap`
        unless given: `MemoryClients` for the in-memory tier). `inline`: restores and the
        calendars' first read run in the loop's own thread, not threads of their own (the
        in-memory broker is one thread's)."""
        self.settings = settings
        self.inline = inline
        self.clients = clients if clients is not None else BrokerClients(settings.bootstrap)
        self.reader = self.clients.reader()
        self.clock = clock or SystemClock()
        self.topics = TimerTopics()
        self.definitions = self.topics.definitions
        self.metrics = TimerMetrics()
        # The group decides which definitions partitions we own.
        self.consumer = group_consumer(self.clients, settings.group_id, settings.instance)
        # A partition is assigned paused until its restore (on the restore thread) is served.
        # The restorer is looked up at each restore, not bound here: a test wraps it.
        self.owned: OwnedPartitions[PartitionRuntime] = OwnedPartitions(
            name="timer",
            consumer=self.consumer,
            topic=self.definitions,
            restore=lambda partition: self.restorer.restore(partition),
            position=lambda runtime: runtime.definitions_end,
            clock=self.clock,
            deadline=deadline,
            log=log,
            dropped=self._dropped,
            inline=inline,
        )
        self.partitions = self.owned.served
        self.inputs = PartitionInputs(
            self.clients, self.reader, settings.group_id, self.topics.commands, self.topics.events
        )
        partition_count = declared_topic("jobs.definitions").partitions
        self.gate = RecordGate(partition_count, settings.max_payload_bytes, self.now_ms)
        self.restorer = PartitionRestorer(
            settings, self.topics, self.gate, self.inputs, self.now_ms, self.clients, self.reader
        )
        self.writer = TransactionWriter(self.topics, self.metrics, self.now_ms)
        # Holiday calendars: read to the end on a thread at start, then followed each loop.
        self.calendars = CalendarFollower(
            self.clients, self.reader, dead_letter=self._calendar_rejected
        )
        self.inbox = CommandInbox(
            self.gate,
            self.topics.commands,
            definitions_end=lambda p: self.inputs.watermarks(self.definitions, p)[1],
            definitions_read=self._definitions_read,
        )
        self.intake = Intake(
            self.consumer,
            self.inputs,
            self.partitions,
            self.gate,
            self.inbox,
            self.topics,
            self.now_ms,
        )
        self._next_tick_ms = 0  # when the wheels are due to turn again (the injected clock)

    def _calendar_rejected(self, record: ReadRecord, exc: Exception) -> None:
        # One instance writes it: the owner of partition 0 (every instance reads calendars).
        if 0 in self.partitions:
            self.partitions[0].pending_emission.dead_letters.append(
                self.gate.rejection(record, exc)
            )

    def now_ms(self) -> int:
        return self.owned.now_ms()

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        group = adopt_jobs_group(self.settings.bootstrap, self.gate.partition_count)
        self.gate.adopt(group.partitions, resized=group.resized)
        self.start()
        try:
            while self.owned.running:
                self.step()
        finally:
            self.close()

    def start(self) -> None:
        """Join the group and start reading the calendars; `step` then serves what it owns."""
        if self.inline:
            self.calendars.load()
        else:
            self.calendars.start()
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port, self.settings.metrics_addr)
        self.owned.subscribe()
        log.info(
            "timer started", extra={"action": "timer_started", "instance": self.settings.instance}
        )

    def step(self) -> None:
        """One turn of the loop: read (returning at the first input, or when the next tick is
        due), serve restored partitions, follow the calendars, tick and commit every owned
        partition. An input is decided and committed in the turn it arrives; idle, the loop
        turns once a tick (decision 0143)."""
        wait_ms = max(0, self._next_tick_ms - self.now_ms())
        self.intake.apply(self.intake.read(wait_ms / 1000))
        now = self.now_ms()
        if now >= self._next_tick_ms:
            self._next_tick_ms = now + self.settings.tick_ms
        for restored in self.owned.restored():
            self._serve(restored)
        self.calendars.poll()
        self.calendars.follow(self.partitions, self.now_ms())
        self._tick_all()
        self.owned.retry_due()

    def close(self) -> None:
        # No transaction is ever open between polls: what a stop abandons, the broker
        # aborts, and the heir restores from what was committed.
        for runtime in self.partitions.values():
            runtime.producer.flush(self.owned.flush_budget())
        self.partitions.clear()  # the revoke callback in close() has nothing to flush
        self.consumer.close()
        self.inputs.close()
        self.calendars.close()
        close_reader = getattr(self.reader, "close", None)  # the cluster's has a probe to close
        if close_reader is not None:
            close_reader()

    def stop(self, *_args: Any) -> None:
        self.owned.stop()

    # -- partitions coming and going -------------------------------------------------------
    def _dropped(self, partition: int, runtime: PartitionRuntime | None, revoked: bool) -> None:
        """A partition left: stop reading its inputs; a revoked one's producer delivers what it
        holds (no transaction is ever left open between polls: nothing to abort)."""
        self.inputs.unassign(partition)
        if runtime is not None and revoked:
            runtime.producer.flush(self.owned.flush_budget())

    def _serve(self, restored: RestoreResult[PartitionRuntime]) -> None:
        """A restored partition: read its inputs from its checkpoint, and write what its
        restore decided first."""
        runtime = restored.value
        assert runtime is not None
        partition = runtime.partition
        try:
            self.inputs.assign(partition, runtime.command_offset, runtime.events_offset)
        except Exception as exc:
            self.owned.failed(partition, exc)
            return
        # Catch-up after a long outage can be large: one transaction per bounded chunk of jobs.
        catch_up, runtime.catch_up = runtime.catch_up, PartitionWrites()
        for chunk in catch_up.chunks(self.settings.max_batch):
            if not self._commit(runtime, chunk):
                break
        # What a restore loads (a million jobs) lives as long as the partition: out of the
        # cyclic collector's sight, a full collection no longer walks it (bursts ran ~7%
        # faster). Jobs hold no reference cycles, so refcounting still frees them when the
        # partition goes. Collected first, so no garbage of a dropped partition is pinned.
        gc.collect()
        gc.freeze()
        elapsed = restore_seconds(restored)
        self.metrics.restore_seconds.observe(elapsed)
        self.metrics.wheel_size.labels(str(partition)).set(len(runtime.timer.wheel))
        log.info(
            "partition restored",
            extra={
                "action": "partition_restored",
                "partition": partition,
                "jobs": len(runtime.timer.jobs),
                "seconds": round(elapsed, 3),
                "caught_up": len(catch_up.requests),
            },
        )

    def _definitions_read(self, partition: int) -> int | None:
        try:
            [tp] = self.consumer.position([TopicPartition(self.definitions, partition)])
        except KafkaException:
            return None
        return int(tp.offset)

    # -- the loop --------------------------------------------------------------------------
    def _tick_all(self) -> None:
        """Tick every served partition and send its transaction, then commit them all: each
        commit's wait for the broker overlaps the other partitions' ticks and sends."""
        now = self.now_ms()
        sent: list[Sent] = []
        for partition, runtime in list(self.partitions.items()):
            if runtime.held_commands:
                self.inbox.release(runtime, now)
            emission = runtime.pending_emission
            runtime.pending_emission = PartitionWrites()
            try:
                emission.extend(
                    runtime.timer.tick(now, hold_leases=self.inputs.events_behind(partition))
                )
            except Exception as exc:
                # The scheduler isolates its jobs; this is a last resort against a bug of its
                # own: the partition is rebuilt from Kafka, the others go on.
                log.exception(
                    "tick failed; restoring the partition",
                    extra={"action": "tick_failed", "partition": partition, "error": repr(exc)},
                )
                self.owned.drop(partition, RESTORE_RETRY_S)
                continue
            runtime.add_states(
                emission,
                max_batch=self.settings.max_batch,
                lag_ms=self.settings.state_lag_ms,
                now_ms=now,
                burst_elsewhere=burst_elsewhere(self.partitions.values(), runtime),
            )
            if emission or runtime.inputs_moved:
                outcome = self.writer.send(runtime, emission)
                if isinstance(outcome, Sent):
                    sent.append(outcome)
                else:
                    self._settle(runtime, outcome)
            self.metrics.wheel_size.labels(str(partition)).set(len(runtime.timer.wheel))
        for transaction in sent:
            self._settle(transaction.runtime, self.writer.finish(transaction))

    def _commit(self, runtime: PartitionRuntime, emission: PartitionWrites) -> bool:
        """Write `emission` in one transaction; on failure the partition's memory is dropped and
        a restore is scheduled. Returns whether it committed."""
        return self._settle(runtime, self.writer.commit(runtime, emission))

    def _settle(self, runtime: PartitionRuntime, outcome: Outcome) -> bool:
        """Act on a transaction's outcome; returns whether it committed."""
        return self.owned.settle(runtime.partition, runtime, outcome)
