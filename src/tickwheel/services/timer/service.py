"""The timer service: owns partitions of jobs.definitions (and of every co-partitioned topic),
keeps a wheel per partition, and emits due occurrences exactly once.

Exactly-once trigger (docs/decisions/0004-timer-fencing.md):
- one transactional producer per owned partition, `transactional.id = <prefix>tickwheel-timer-p<N>`.
  A new owner's `init_transactions()` fences the previous owner of that partition and waits
  until its open transaction is aborted or committed; only then is the partition's timer state
  read (read_committed). A zombie's later writes are rejected by the broker.
- each tick, for each partition: the execution requests, skipped-occurrence events, timer-state
  updates and the consumed command offsets go in one transaction.
- any transaction failure drops the partition's in-memory state and restores it from Kafka.
"""

from __future__ import annotations

import contextlib
import gc
import ipaddress
import logging
import os
import random
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode, encode
from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    TopicPartition,
)
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.producer import TransactionalProducer, is_fatal
from tickwheel.adapters.kafka.reader import Record, decode_key, read_to_end
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.definition import check_definition_record
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.logs import configure_logging
from tickwheel.services.shutdown import (
    KAFKA_BUDGET_S,
    ShutdownDeadline,
    exit_now,
    stop_on_signals,
)
from tickwheel.services.timer.commands import RejectedCommand
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.model import Emission
from tickwheel.services.timer.records import (
    RequestKey,
    checkpoint_key,
    decode_state,
    encode_checkpoint,
    encode_state,
    request_key,
)
from tickwheel.services.timer.request_log import SEQ_HEADER, RequestLog, first_offset_recorder
from tickwheel.services.timer.scheduler import PartitionTimer
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic as declared_topic
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.timer")

WORKER_EVENTS = ("leased", "heartbeat", "succeeded", "failed", "cancelled")
ANY_NETWORK = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
# A command for a job this partition does not know waits this long for the definition (read
# by another consumer, so it may come second) before it is dead-lettered.
COMMAND_WAIT_S = 30.0


@dataclass
class HeldCommand:
    """A command waiting for its job's definition; `definitions_end` is where the definitions
    partition ended when it came: read that far, an unknown job is really unknown."""

    offset: int
    key: str | None
    raw: bytes
    command: dict[str, Any]
    definitions_end: int
    give_up_at: float


# Longer than the group session timeout (10 s): by then a zombie has been told it lost its
# partitions, so a partition still assigned to us after a fence really is ours.
FENCED_RECHECK_S = 30.0
MAX_ENCODED_REQUESTS = 1_000_000


class PartitionRuntime:
    def __init__(
        self,
        partition: int,
        timer: PartitionTimer,
        producer: TransactionalProducer,
        definitions_end: int,
        log: RequestLog,
    ) -> None:
        self.partition = partition
        self.log = log  # jobs that fired without their state, and where their requests are
        # Per job, requests encoded but not yet written into its state: the state reuses the
        # bytes, and any state of the job (it covers all its requests) drops them.
        self.encoded_requests: dict[str, dict[RequestKey, bytes]] = {}
        self.timer = timer
        self.producer = producer
        self.definitions_end = definitions_end  # where the restore stopped reading definitions
        self.command_offset: int | None = None  # next offset to read of timers.commands
        self.events_offset: int | None = None  # next offset to read of executions.events
        self.inputs_moved = False  # the checkpoint must be written in the next transaction
        self.pending_emission = Emission()  # from definition changes and commands since the tick
        # Commands waiting (in order) for a definition; the checkpoint stays at the first, so a
        # crash meanwhile reads them again and nothing is lost or applied twice.
        self.held_commands: deque[HeldCommand] = deque()


class TimerService:
    def __init__(
        self,
        settings: TimerSettings,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
    ) -> None:
        self.settings = settings
        self.deadline = deadline  # armed by stop(): past it the process exits (decision 0050)
        self.clock = clock or SystemClock()
        self.definitions = topic_name("jobs.definitions")
        self.state_topic = topic_name("timers.state")
        self.commands = topic_name("timers.commands")
        self.events_topic = topic_name("executions.events")
        self.dlq_topic = topic_name("executions.dlq")
        self.request_topics = {p: topic_name(f"executions.{p}") for p in ("high", "normal", "low")}
        self.partition_count = declared_topic("jobs.definitions").partitions
        self.partitions: dict[int, PartitionRuntime] = {}
        # Partitions we still own but must rebuild (after a failed transaction), and when.
        self.restore_due: dict[int, float] = {}
        self._last_now_ms = 0
        self.metrics = TimerMetrics()
        self.running = True
        # The group decides which definitions partitions we own. Static membership: a restarted
        # instance with the same name gets its partitions back without waiting for a rebalance.
        self.consumer = Consumer(
            consumer_config(
                settings.group_id,
                settings.bootstrap,
                **{"max.poll.interval.ms": 600000, "session.timeout.ms": 10000,
                   "heartbeat.interval.ms": 1000,
                   "group.instance.id": f"{settings.group_id}-{settings.instance}"},
            )
        )  # fmt: skip
        self.inputs = PartitionInputs(
            settings.group_id, settings.bootstrap, self.commands, self.events_topic
        )

    def now_ms(self) -> int:
        # Never backwards: a wall clock stepped back by NTP must not move the wheel back.
        self._last_now_ms = max(self._last_now_ms, int(self.clock.now() * 1000))
        return self._last_now_ms

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        verify_topology(bootstrap=self.settings.bootstrap)
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
        try:
            while self.running:
                self._poll(self.settings.tick_ms / 1000)
                self._tick_all()
                self._retry_restores()
        finally:
            # No transaction is ever open between polls: what a stop abandons, the broker
            # aborts, and the heir restores from what was committed.
            for runtime in self.partitions.values():
                runtime.producer.flush(self._flush_budget())
            self.partitions.clear()  # the revoke callback in close() has nothing to flush
            self.consumer.close()
            self.inputs.close()

    def stop(self, *_args: Any) -> None:
        self.running = False
        if self.deadline is not None:
            self.deadline.arm(KAFKA_BUDGET_S)

    def _flush_budget(self) -> float:
        remaining = self.deadline.remaining() if self.deadline is not None else 5.0
        return min(5.0, remaining)

    # -- rebalancing -----------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assign: list[TopicPartition] = []
        unrestored: list[TopicPartition] = []
        for tp in partitions:
            if tp.topic == self.definitions:
                try:
                    # The restore read definitions to an end offset; the live tail starts there.
                    end = self._restore(tp.partition)
                    tp.offset = end if end >= 0 else OFFSET_BEGINNING
                except Exception as exc:
                    # A broker hiccup (or a bug) must not end the timer: the partition stays
                    # ours, paused, and its restore is tried again (_retry_restores).
                    self._restore_failed(tp.partition, exc)
                    unrestored.append(TopicPartition(tp.topic, tp.partition))
            assign.append(tp)
        consumer.incremental_assign(assign)
        if unrestored:
            consumer.pause(unrestored)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp.topic == self.definitions:
                runtime = self.partitions.pop(tp.partition, None)
                self.restore_due.pop(tp.partition, None)
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

    def _restore(self, partition: int) -> int:
        """Rebuild partition `partition` from Kafka and start serving it; returns the offset
        where it stopped reading definitions (-1 for an empty partition)."""
        started = time.monotonic()
        producer = TransactionalProducer(
            f"{topic_name('tickwheel-timer')}-p{partition}", self.settings.bootstrap
        )
        # Fences the previous owner and waits out its open transaction (if any) before we read.
        producer.init()
        now = self.now_ms()
        # Retry jitter is seeded from the OS here, and injected into the core.
        timer = self.settings.partition_timer(partition, now, random.Random())
        # What the restore meets that nobody can use is dead-lettered in its first transaction.
        rejects: list[dict[str, Any]] = []
        input_offsets: dict[str, int] = {}
        seq = 0  # the highest timer transaction number seen: ours continue from it
        for record in read_to_end(self.state_topic, [partition], self.settings.bootstrap):
            if record.key is None or not self._usable_key(record, rejects):
                continue
            state = None
            if record.value is not None:
                state = self._decode(record, "TimerState", rejects)
                if state is None:
                    continue
                seq = max(seq, state["seq"])
            if record.key == checkpoint_key(partition):
                input_offsets = dict(state["input_offsets"]) if state else {}
                continue
            timer.load_state(record.key, state)
        end = -1
        for record in read_to_end(self.definitions, [partition], self.settings.bootstrap):
            end = record.offset + 1
            if record.key is None or not self._usable_key(record, rejects):
                continue
            definition = None
            if record.value is not None:
                definition = self._decode(record, "JobDefinition", rejects)
                if definition is None:
                    continue
            try:
                if definition is not None:
                    self._check_definition(record.key, definition, partition)
                timer.load_definition(record.key, definition)
            except Exception as exc:  # one bad definition is its own problem
                rejects.append(self._rejection(record, exc))
        request_log = self._replay_unsaved_requests(timer, partition, input_offsets, seq, rejects)
        runtime = PartitionRuntime(partition, timer, producer, end, request_log)
        runtime.command_offset = input_offsets.get(self.commands)
        runtime.events_offset = input_offsets.get(self.events_topic)
        if runtime.events_offset is None:
            # First owner ever: nothing in flight can predate it, so start at the end.
            runtime.events_offset = self.inputs.watermarks(self.events_topic, partition)[1]
            runtime.inputs_moved = True
        self.partitions[partition] = runtime
        self.inputs.assign(partition, runtime.command_offset, runtime.events_offset)
        emission = timer.finish_restore(self.now_ms())
        emission.dead_letters.extend(rejects)
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
        self.metrics.wheel_size.labels(str(partition)).set(len(timer.wheel))
        log.info(
            "partition restored",
            extra={"action": "partition_restored", "partition": partition, "jobs": len(timer.jobs),
                   "seconds": round(elapsed, 3), "caught_up": len(emission.requests)},
        )  # fmt: skip
        return end

    def _replay_unsaved_requests(
        self,
        timer: PartitionTimer,
        partition: int,
        input_offsets: dict[str, int],
        seq: int,
        rejects: list[dict[str, Any]],
    ) -> RequestLog:
        """Requests of jobs whose states were not written yet (decision 0008): read from the
        checkpointed offsets to the end. The jobs they rebuild stay unsaved in the returned
        log until their states are written, so a restore would read them again till then."""
        ends = {}
        replayed_from: dict[str, int] = {}
        replayed: dict[str, None] = {}
        for topic in self.request_topics.values():
            low, ends[topic] = self.inputs.watermarks(topic, partition)
            start = input_offsets.get(topic)
            if start is None:
                continue  # nothing was left unsaved
            if start < low:
                # Retention deleted requests no state covers yet: their slots will fire again.
                log.warning(
                    "request log truncated before the checkpoint",
                    extra={"action": "request_log_truncated", "partition": partition,
                           "topic": topic, "checkpoint": start, "low": low},
                )  # fmt: skip
            for record in read_to_end(
                topic, [partition], self.settings.bootstrap, from_offsets={partition: start}
            ):
                if record.value is None or record.offset >= ends[topic]:
                    continue
                if not self._usable_key(record, rejects):
                    continue
                request = self._decode(record, "ExecutionRequest", rejects)
                written_by = record.header(SEQ_HEADER)
                if request is None or written_by is None:
                    continue
                try:
                    seq = max(seq, int(written_by))
                    if timer.load_request(request, int(written_by)):
                        replayed[request["job_id"]] = None
                        replayed_from.setdefault(topic, start)
                except Exception as exc:
                    rejects.append(self._rejection(record, exc))
        return RequestLog(
            seq, ends, replayed_from=replayed_from, replayed=replayed, now_ms=self.now_ms()
        )

    # -- the loop --------------------------------------------------------------------------
    def _poll(self, timeout: float) -> None:
        messages = self.consumer.consume(1000, timeout)
        if self.partitions:
            messages = messages + self.inputs.consume(1000)
        now = self.now_ms()
        for msg in messages:
            if msg.error():
                continue
            runtime = self.partitions.get(msg.partition())
            if runtime is None:
                continue
            key, key_is_text = decode_key(msg.key())
            record = Record(msg.topic(), msg.partition(), msg.offset(), key, msg.value(), 0,
                            tuple(msg.headers() or ()), key_is_text)  # fmt: skip
            rejects = runtime.pending_emission.dead_letters
            try:
                if self._usable_key(record, rejects):
                    self._apply_record(runtime, record, now)
            except Exception as exc:
                # Decodable but unacceptable (a bad cron published by another client, a
                # backfill without a range, ...): dead-lettered with the partition's next
                # transaction, and the loop goes on.
                rejects.append(self._rejection(record, exc))

    def _apply_record(self, runtime: PartitionRuntime, record: Record, now: int) -> None:
        rejects = runtime.pending_emission.dead_letters
        if record.topic == self.definitions:
            if record.key is None:
                return
            definition = None
            if record.value is not None:
                definition = self._decode(record, "JobDefinition", rejects)
                if definition is None:
                    return
                self._check_definition(record.key, definition, runtime.partition)
            emission = runtime.timer.apply_definition(record.key, definition, now)
            runtime.pending_emission.extend(emission)
        elif record.topic == self.commands:
            self._on_command(runtime, record, now)
        elif record.topic == self.events_topic:
            runtime.events_offset = record.offset + 1
            runtime.inputs_moved = True
            if record.value is None:
                return
            event = self._decode(record, "ExecutionEvent", rejects)
            if event is None or event["event_id"].startswith("timer:"):
                return  # our own records come back to us: nothing to decide
            if event["event_type"] in WORKER_EVENTS:
                runtime.pending_emission.extend(runtime.timer.on_execution_event(event, now))

    # -- commands --------------------------------------------------------------------------
    def _on_command(self, runtime: PartitionRuntime, record: Record, now: int) -> None:
        """A trigger or backfill. One for a job not known yet waits for its definition (the
        two are read by different consumers, so "create, then trigger" may arrive command
        first); the ones after it wait behind it, so they keep their order."""
        rejects = runtime.pending_emission.dead_letters
        command = None
        if record.value is not None:
            command = self._decode(record, "TimerCommand", rejects)
        if command is None:
            self._command_done(runtime, record.offset)
            return
        if runtime.held_commands or command["job_id"] not in runtime.timer.jobs:
            definitions_end = 0  # behind another held command, its job may be known already
            if command["job_id"] not in runtime.timer.jobs:
                definitions_end = self.inputs.watermarks(self.definitions, runtime.partition)[1]
                log.info(
                    "command waits for its job's definition",
                    extra={"action": "command_held", "partition": runtime.partition,
                           "job_id": command["job_id"], "command_id": command["command_id"]},
                )  # fmt: skip
            held = HeldCommand(record.offset, record.key, record.value or b"", command,
                               definitions_end, time.monotonic() + COMMAND_WAIT_S)  # fmt: skip
            runtime.held_commands.append(held)
            self._release_commands(runtime, now)
            return
        self._apply_command(runtime, record.offset, record.key, record.value, command, now)

    def _apply_command(
        self, runtime: PartitionRuntime, offset: int, key: str | None, raw: bytes | None,
        command: dict[str, Any], now: int,
    ) -> None:  # fmt: skip
        self._command_done(runtime, offset)
        try:
            runtime.pending_emission.extend(runtime.timer.command(command, now))
        except Exception as exc:
            record = Record(self.commands, runtime.partition, offset, key, raw, 0)
            runtime.pending_emission.dead_letters.append(self._rejection(record, exc))

    @staticmethod
    def _command_done(runtime: PartitionRuntime, offset: int) -> None:
        runtime.command_offset = offset + 1
        runtime.inputs_moved = True

    def _release_commands(self, runtime: PartitionRuntime, now: int) -> None:
        """Apply held commands whose job is known now; dead-letter the head one once the
        definitions are read past where they ended when it came, or it waited too long."""
        while runtime.held_commands:
            held = runtime.held_commands[0]
            known = held.command["job_id"] in runtime.timer.jobs
            if not known and not self._definitions_read_to(runtime.partition, held):
                return
            runtime.held_commands.popleft()
            self._apply_command(runtime, held.offset, held.key, held.raw, held.command, now)

    def _definitions_read_to(self, partition: int, held: HeldCommand) -> bool:
        if time.monotonic() >= held.give_up_at:
            return True
        try:
            [tp] = self.consumer.position([TopicPartition(self.definitions, partition)])
        except KafkaException:
            return False
        return bool(tp.offset >= held.definitions_end)

    def _tick_all(self) -> None:
        now = self.now_ms()
        for partition, runtime in list(self.partitions.items()):
            if runtime.held_commands:
                self._release_commands(runtime, now)
            emission = runtime.pending_emission
            runtime.pending_emission = Emission()
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
                self._drop(runtime, retry_in_s=5.0)
                continue
            due = runtime.log.states_due(
                fired=len(emission.requests),
                backlog=runtime.timer.backlog,
                max_batch=self.settings.max_batch,
                lag_ms=self.settings.state_lag_ms,
                now_ms=now,
            )
            if due:
                emission.extend(runtime.timer.snapshot(due, now))
            runtime.timer.settle(emission, now)
            if emission or runtime.inputs_moved:
                self._commit(runtime, emission)
            self.metrics.wheel_size.labels(str(partition)).set(len(runtime.timer.wheel))

    def _check_definition(self, key: str, definition: dict[str, Any], partition: int) -> None:
        """Refuse what the SDK would have refused (the core's one validator: a key that is not
        the job's id, a reserved id, a template that does not render, ...), and a job published
        to a partition its key does not hash to. Network targets are the worker's to judge (its
        allow-list, its network): here every network counts as allowed."""
        check_definition_record(
            definition,
            key,
            max_payload_bytes=self.settings.max_payload_bytes,
            allowed_networks=ANY_NETWORK,
        )
        self._check_partition(key, partition)

    def _check_partition(self, job_id: str, partition: int) -> None:
        """Refuse a job published to a partition its key does not hash to: its requests and
        its workers' events would meet on no partition."""
        expected = partition_for(job_id, self.partition_count)
        if expected != partition:
            raise InvalidInput(
                "jobId",
                f"{job_id!r} belongs to partition {expected}, not {partition}: published with a "
                "partitioner other than Kafka's default (murmur2)",
            )

    def _commit(self, runtime: PartitionRuntime, emission: Emission) -> bool:
        """Write `emission` (and the input checkpoint) in one transaction. On failure the
        partition's memory is dropped and a restore is scheduled; returns whether it committed."""
        if not emission and not runtime.inputs_moved:
            return True
        producer = runtime.producer
        try:
            producer.begin()
            seq = runtime.log.seq + 1
            headers = [(SEQ_HEADER, str(seq).encode())]
            # Where this transaction's first request lands on each topic: the request log's
            # marks (known once the commit has flushed them).
            first_offsets: dict[str, int] = {}
            # Each request is encoded once: its job's state below carries the same bytes.
            encoded = runtime.encoded_requests
            partition = runtime.partition
            for request in emission.requests:
                raw = encode("ExecutionRequest", request)
                encoded.setdefault(request["job_id"], {})[request_key(request)] = raw
                topic = self.request_topics[request["priority"]]
                on_delivery = None
                if topic not in first_offsets:
                    first_offsets[topic] = -1
                    on_delivery = first_offset_recorder(first_offsets, topic, partition)
                # On the job's own partition, as the checkpoint's offsets assume (co-partitioned).
                producer.send(
                    topic, request["job_id"], raw, partition, headers, on_delivery=on_delivery
                )
            for event in emission.events:
                producer.send(self.events_topic, event["job_id"], encode("ExecutionEvent", event))
            for dead_letter in emission.dead_letters:
                producer.send(
                    self.dlq_topic, dead_letter["job_id"], encode("DeadLetter", dead_letter)
                )
            for job_id, state in emission.states.items():
                if state is None:
                    encoded.pop(job_id, None)
                producer.send(
                    self.state_topic,
                    job_id,
                    # Any state of a job covers every request it was sent: its cached bytes go.
                    None if state is None else encode_state(state, encoded.pop(job_id, {}), seq),
                )
            producer.send(
                self.state_topic,
                checkpoint_key(runtime.partition),
                self._checkpoint(runtime, emission, seq),
                partition=runtime.partition,
            )
            producer.commit()
            self.metrics.transactions.inc()
        except KafkaException as exc:
            self.metrics.aborts.inc()
            if is_fatal(exc):
                # Fenced: a newer owner has this partition. Stop emitting and wait for the group
                # to tell us what we own; restoring now would fence the rightful owner in turn.
                # Should the group still give it to us after the session timeout, restore then.
                self._drop(runtime, retry_in_s=FENCED_RECHECK_S)
                log.warning(
                    "fenced; dropping the partition until it is assigned again",
                    extra={
                        "action": "producer_fenced",
                        "partition": runtime.partition,
                        "error": str(exc),
                    },
                )
                return False
            log.warning(
                "transaction failed; restoring the partition from Kafka",
                extra={
                    "action": "transaction_failed",
                    "partition": runtime.partition,
                    "error": str(exc),
                },
            )
            with contextlib.suppress(KafkaException):
                producer.abort()
            self._drop(runtime, retry_in_s=1.0)
            return False
        runtime.inputs_moved = False
        if len(encoded) > MAX_ENCODED_REQUESTS:
            encoded.clear()  # a safety net only: each job's go with its next state
        emitted_at = self.now_ms()
        runtime.log.committed(
            seq,
            emission.unsaved,
            emission.states,
            {topic: offset for topic, offset in first_offsets.items() if offset >= 0},
            emitted_at,
        )
        self.metrics.fire_lag.observe_many(
            max(0, emitted_at - request["fire_time"]) / 1000 for request in emission.requests
        )
        self.metrics.emitted.inc(len(emission.requests))
        self.metrics.skipped.inc(len(emission.events))
        return True

    def _checkpoint(self, runtime: PartitionRuntime, emission: Emission, seq: int) -> bytes:
        """Where the partition's inputs stand and, on the request topics, where the requests
        of jobs still unsaved after this transaction begin."""
        offsets = runtime.log.checkpoint_offsets(emission.states, emission.unsaved)
        if runtime.command_offset is not None:
            offsets[self.commands] = runtime.command_offset
        if runtime.events_offset is not None:
            offsets[self.events_topic] = runtime.events_offset
        return encode_checkpoint(runtime.partition, offsets, seq, self.now_ms())

    def _drop(self, runtime: PartitionRuntime, retry_in_s: float) -> None:
        """Forget the partition's memory; it is restored from Kafka in `retry_in_s`."""
        self.partitions.pop(runtime.partition, None)
        self.inputs.unassign(runtime.partition)
        self.restore_due[runtime.partition] = time.monotonic() + retry_in_s

    def _restore_failed(self, partition: int, exc: Exception) -> None:
        log.error(
            "restore failed; trying again",
            extra={"action": "restore_failed", "partition": partition, "error": repr(exc)},
        )
        self.partitions.pop(partition, None)
        self.inputs.unassign(partition)
        self.restore_due[partition] = time.monotonic() + 5.0

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
            elif time.monotonic() >= due:
                del self.restore_due[partition]
                try:
                    end = self._restore(partition)
                except Exception as exc:  # a broker hiccup, or worse: never the process's end
                    self._restore_failed(partition, exc)
                    continue
                tp = TopicPartition(self.definitions, partition, end if end >= 0 else 0)
                # The live tail resumes where the restore stopped reading (and a partition
                # paused after a failed first restore starts reading).
                if end >= 0:
                    self.consumer.seek(tp)
                self.consumer.resume([TopicPartition(self.definitions, partition)])

    def _rejection(self, record: Record, exc: Exception) -> dict[str, Any]:
        """The dead letter of a decodable but unacceptable record (written with the partition's
        next transaction)."""
        reason = exc.reason if isinstance(exc, RejectedCommand) else str(exc) or repr(exc)
        return self._dead_letter(record, reason, "rejected")

    def _dead_letter(self, record: Record, reason: str, kind: str) -> dict[str, Any]:
        log.error(
            f"{kind} record sent to the dead-letter topic",
            extra={"action": "record_dead_lettered", "topic": record.topic,
                   "partition": record.partition, "offset": record.offset, "reason": reason},
        )  # fmt: skip
        return dead_letter_record(
            record.topic, record.partition, record.offset, record.key, record.value, reason,
            kind, self.now_ms(),
        )  # fmt: skip

    def _usable_key(self, record: Record, rejects: list[dict[str, Any]]) -> bool:
        """Keys are job ids, so one that is not UTF-8 belongs to no job: dead-lettered, live and
        at restore alike (it used to pass live and stop the next restore)."""
        if record.key_is_text:
            return True
        rejects.append(self._dead_letter(record, "the record key is not UTF-8", "rejected"))
        return False

    # -- decoding --------------------------------------------------------------------------
    def _decode(
        self, record: Record, expected: str, rejects: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """A record decoded (a TimerState with its requests), or dead-lettered into `rejects`."""
        try:
            if expected == "TimerState":
                return decode_state(record.value or b"")
            return decode(record.value or b"", expected)[1]
        except UndecodableRecord as exc:
            rejects.append(self._dead_letter(record, exc.reason, "undecodable"))
            return None


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tickwheel.services.timer")
    parser.add_argument("--instance", default=os.environ.get("TICKWHEEL_INSTANCE", "timer"))
    args = parser.parse_args(argv)
    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))
    # A burst allocates a few dicts per occurrence, nearly all acyclic: young collections every
    # 700 allocations (the default) cost a 300,000-job burst a seventh of its speed.
    gc.set_threshold(100_000, 50, 100)
    deadline = ShutdownDeadline(log, "timer")
    stopping: list[TimerService] = []
    # Before any Kafka client exists: their threads inherit the blocked signals.
    stop_on_signals(lambda: stopping[0].stop() if stopping else exit_now(0))
    code = 0
    try:
        service = TimerService(TimerSettings(instance=args.instance), deadline=deadline)
        stopping.append(service)
        service.run()
    except TickwheelError as exc:
        print(f"tickwheel timer: error: {exc}", file=sys.stderr)
        code = 2
    except Exception:
        log.exception("timer crashed", extra={"action": "timer_crashed"})
        code = 1
    # Nothing left (a client's destructor, the interpreter's teardown) may hold the process up.
    exit_now(code)
