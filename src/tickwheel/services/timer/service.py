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

import contextlib
import gc
import logging
import os
import time
from typing import Any

from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.adapters.kafka.topology_changes import read_changes
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.ports.kafka import GroupConsumer, KafkaClients, ReadRecord
from tickwheel.runtime.restores import BackgroundRestores
from tickwheel.runtime.shutdown import KAFKA_BUDGET_S, ShutdownDeadline
from tickwheel.services.timer.calendars import CalendarFollower
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.inbox import CommandInbox
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.intake import Intake
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.restore import PartitionRestorer
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics, burst_elsewhere
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.services.timer.writer import Outcome, Sent, TransactionWriter
from tickwheel.topology import JOBS_GROUP, TopicSpec, group_partitions
from tickwheel.topology import topic as declared_topic

log = logging.getLogger("tickwheel.timer")

# Longer than the group session timeout (10 s): by then a zombie has been told it lost its
# partitions, so a partition still assigned to us after a fence really is ours.
FENCED_RECHECK_S = 30.0
RESTORE_RETRY_S = 5.0


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
        self.deadline = deadline  # armed by stop(): past it the process exits (decision 0050)
        self.clock = clock or SystemClock()
        self.topics = TimerTopics()
        self.definitions = self.topics.definitions
        self.partitions: dict[int, PartitionRuntime] = {}
        # Partitions we still own but must rebuild (after a failed transaction), and when (on
        # the injected clock, never backwards: `now_ms`).
        self.restore_due: dict[int, float] = {}
        self._last_now_ms = 0
        self.metrics = TimerMetrics()
        self.running = True
        # The group decides which definitions partitions we own. Static membership: a restarted
        # instance with the same name gets its partitions back without waiting for a rebalance.
        self.consumer = self.clients.consumer(
            settings.group_id,
            **{"max.poll.interval.ms": 600000, "session.timeout.ms": 10000,
               "heartbeat.interval.ms": 1000,
               "group.instance.id": f"{settings.group_id}-{settings.instance}"},
        )  # fmt: skip
        self.inputs = PartitionInputs(
            self.clients, self.reader, settings.group_id, self.topics.commands, self.topics.events
        )
        partition_count = declared_topic("jobs.definitions").partitions
        self.gate = RecordGate(partition_count, settings.max_payload_bytes, self.now_ms)
        self.restorer = PartitionRestorer(
            settings, self.topics, self.gate, self.inputs, self.now_ms, self.clients, self.reader
        )
        self.writer = TransactionWriter(self.topics, self.metrics, self.now_ms)
        # A partition is assigned paused until its restore (on the restore thread) is installed.
        # The restorer is looked up at each restore, not bound here: a test wraps it.
        self.restores: BackgroundRestores[tuple[PartitionRuntime, PartitionWrites]] = (
            BackgroundRestores(lambda partition: self.restorer.restore(partition), inline=inline)
        )
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
            self.consumer, self.inputs, self.partitions, self.gate, self.inbox, self.topics,
            self.now_ms,
        )  # fmt: skip
        self._next_tick_ms = 0  # when the wheels are due to turn again (the injected clock)

    def _calendar_rejected(self, record: ReadRecord, exc: Exception) -> None:
        # One instance writes it: the owner of partition 0 (every instance reads calendars).
        if 0 in self.partitions:
            self.partitions[0].pending_emission.dead_letters.append(
                self.gate.rejection(record, exc)
            )

    def now_ms(self) -> int:
        # Never backwards: a wall clock stepped back by NTP must not move the wheel back.
        self._last_now_ms = max(self._last_now_ms, int(self.clock.now() * 1000))
        return self._last_now_ms

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        self.adopt(verify_topology(bootstrap=self.settings.bootstrap))
        self.start()
        try:
            while self.running:
                self.step()
        finally:
            self.close()

    def adopt(self, specs: list[TopicSpec]) -> None:
        """The partition count of the jobs group as the cluster records it: the declared one,
        or a resize's (decision 0211)."""
        count = group_partitions(specs) or self.gate.partition_count
        resized = JOBS_GROUP in read_changes(self.settings.bootstrap)
        self.gate.adopt(count, resized=resized)

    def start(self) -> None:
        """Join the group and start reading the calendars; `step` then serves what it owns."""
        if self.inline:
            self.calendars.load()
        else:
            self.calendars.start()
        if self.settings.metrics_port:
            self.metrics.serve(
                self.settings.metrics_port, os.environ.get("TICKWHEEL_METRICS_ADDR", "127.0.0.1")
            )
        self.consumer.subscribe(
            [self.definitions],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
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
        self._install_restores()
        self.calendars.poll()
        self.calendars.follow(self.partitions, self.now_ms())
        self._tick_all()
        self._retry_restores()

    def close(self) -> None:
        # No transaction is ever open between polls: what a stop abandons, the broker
        # aborts, and the heir restores from what was committed.
        for runtime in self.partitions.values():
            runtime.producer.flush(self._flush_budget())
        self.partitions.clear()  # the revoke callback in close() has nothing to flush
        self.consumer.close()
        self.inputs.close()
        self.calendars.close()
        close_reader = getattr(self.reader, "close", None)  # the cluster's has a probe to close
        if close_reader is not None:
            close_reader()

    def stop(self, *_args: Any) -> None:
        self.running = False
        self.restores.stop()
        if self.deadline is not None:
            self.deadline.arm(KAFKA_BUDGET_S)

    def _flush_budget(self) -> float:
        remaining = self.deadline.remaining() if self.deadline is not None else 5.0
        return min(5.0, remaining)

    # -- rebalancing -----------------------------------------------------------------------
    def _on_assign(
        self, consumer: GroupConsumer[TopicPartition], partitions: list[TopicPartition]
    ) -> None:
        """Definitions partitions are assigned paused and restored on the restore thread; the
        live tail starts where the restore stopped reading (`_install_restores`)."""
        consumer.incremental_assign(partitions)
        ours = [TopicPartition(tp.topic, tp.partition) for tp in partitions
                if tp.topic == self.definitions]  # fmt: skip
        if ours:
            consumer.pause(ours)
        for tp in ours:
            self._begin_restore(tp.partition)

    def _on_revoke(
        self, consumer: GroupConsumer[TopicPartition], partitions: list[TopicPartition]
    ) -> None:
        for tp in partitions:
            if tp.topic == self.definitions:
                runtime = self.partitions.pop(tp.partition, None)
                self.restore_due.pop(tp.partition, None)
                self.restores.cancel(tp.partition)  # a restore under way is now stale
                self.inputs.unassign(tp.partition)
                if runtime is not None:
                    # No transaction is ever left open between polls: nothing to abort here.
                    runtime.producer.flush(self._flush_budget())
                    log.info(
                        "partition revoked",
                        extra={"action": "partition_revoked", "partition": tp.partition},
                    )
        # On a lost assignment the client may already have dropped them.
        with contextlib.suppress(KafkaException):
            consumer.incremental_unassign(partitions)

    def _begin_restore(self, partition: int) -> None:
        self.restores.begin(partition)

    def _install_restores(self) -> None:
        """Serve the partitions whose restore finished (or schedule another try)."""
        for result in self.restores.finished():
            if result.error is not None or result.value is None:
                self._restore_failed(result.partition, result.error or RuntimeError("no result"))
                continue
            try:
                self._serve(*result.value, result.started)
            except Exception as exc:
                self._restore_failed(result.partition, exc)

    def _serve(self, runtime: PartitionRuntime, emission: PartitionWrites, started: float) -> None:
        partition = runtime.partition
        self.partitions[partition] = runtime
        self.inputs.assign(partition, runtime.command_offset, runtime.events_offset)
        tp = TopicPartition(self.definitions, partition)
        end = runtime.definitions_end
        self.consumer.seek(TopicPartition(self.definitions, partition, end if end >= 0 else 0))
        self.consumer.resume([tp])
        # Catch-up after a long outage can be large: one transaction per bounded chunk of jobs.
        for chunk in emission.chunks(self.settings.max_batch):
            if not self._commit(runtime, chunk):
                break
        # What a restore loads (a million jobs) lives as long as the partition: out of the
        # cyclic collector's sight, a full collection no longer walks it (bursts ran ~7%
        # faster). Jobs hold no reference cycles, so refcounting still frees them when the
        # partition goes. Collected first, so no garbage of a dropped partition is pinned.
        gc.collect()
        gc.freeze()
        elapsed = time.monotonic() - started
        self.metrics.restore_seconds.observe(elapsed)
        self.metrics.wheel_size.labels(str(partition)).set(len(runtime.timer.wheel))
        log.info(
            "partition restored",
            extra={"action": "partition_restored", "partition": partition,
                   "jobs": len(runtime.timer.jobs), "seconds": round(elapsed, 3),
                   "caught_up": len(emission.requests)},
        )  # fmt: skip

    def _restore_failed(self, partition: int, exc: Exception) -> None:
        log.error(
            "restore failed; trying again",
            extra={"action": "restore_failed", "partition": partition, "error": repr(exc)},
        )
        self.partitions.pop(partition, None)
        self.inputs.unassign(partition)
        with contextlib.suppress(KafkaException):  # paused until a restore succeeds
            self.consumer.pause([TopicPartition(self.definitions, partition)])
        self.restore_due[partition] = self.now_ms() / 1000 + RESTORE_RETRY_S

    def _retry_restores(self) -> None:
        """Rebuild partitions we still own after a failed transaction. After a fence, wait past
        the session timeout first: by then a zombie has learnt it lost them, so a partition
        still assigned to us really is ours (and restoring cannot fence the rightful owner)."""
        if not self.restore_due:
            return
        owned = {tp.partition for tp in self.consumer.assignment() if tp.topic == self.definitions}
        for partition, due in list(self.restore_due.items()):
            if partition not in owned or partition in self.partitions:
                del self.restore_due[partition]
            elif self.now_ms() / 1000 >= due and not self.restores.under_way(partition):
                del self.restore_due[partition]
                with contextlib.suppress(KafkaException):  # paused until it is served again
                    self.consumer.pause([TopicPartition(self.definitions, partition)])
                self._begin_restore(partition)

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
                self._drop(runtime, retry_in_s=RESTORE_RETRY_S)
                continue
            runtime.add_states(
                emission, max_batch=self.settings.max_batch, lag_ms=self.settings.state_lag_ms,
                now_ms=now, burst_elsewhere=burst_elsewhere(self.partitions.values(), runtime),
            )  # fmt: skip
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
        if outcome == "fenced":
            # A newer owner has this partition. Stop emitting and wait for the group to tell us
            # what we own; restoring now would fence the rightful owner in turn. Should the
            # group still give it to us after the session timeout, restore then.
            self._drop(runtime, retry_in_s=FENCED_RECHECK_S)
        elif outcome == "failed":
            self._drop(runtime, retry_in_s=1.0)
        return outcome == "committed"

    def _drop(self, runtime: PartitionRuntime, retry_in_s: float) -> None:
        """Forget the partition's memory; it is restored from Kafka in `retry_in_s`."""
        self.partitions.pop(runtime.partition, None)
        self.inputs.unassign(runtime.partition)
        self.restore_due[runtime.partition] = self.now_ms() / 1000 + retry_in_s
