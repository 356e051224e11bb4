"""What one turn of the timer's loop reads, and each record applied to the partition it is for.

The loop has two consumers: the group's (jobs.definitions) and the inputs' (timers.commands and
executions.events, assigned by partition). A turn waits for the first input and takes what came
with it, so a workflow step's command or a worker's outcome is decided and committed in the
turn it arrives, not after the rest of a tick (decision 0143). The client cannot wait on two
consumers at once, so the wait is on the consumer the hot hops arrive on: the inputs' while the
instance serves partitions, the group's otherwise (it then has nothing else to read). The other
is taken without waiting in the same turn: a definition waits at most until the next tick, as
every input did before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tickwheel.adapters.avro.fast.execution_event import decode as decode_event
from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.adapters.kafka.placement import Forward
from tickwheel.adapters.kafka.reader import record_of
from tickwheel.ports.kafka import GroupConsumer, KafkaMessage, ReadRecord
from tickwheel.records import ExecutionEvent
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.inbox import CommandInbox
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics

WORKER_EVENTS = frozenset(("leased", "heartbeat", "succeeded", "failed", "cancelled"))
# Records taken from a consumer per call.
CHUNK = 1000
# At most this many inputs a turn: enough that a turn reads what arrived during the last one
# under a steady pipeline (a worker's leased and succeeded events, two per execution), so the
# partition learns promptly which executions finished (its in-flight count gates the tenant
# caps, decision 0144); few enough that the tick is not held back by a long backlog.
INPUTS_PER_TURN = 20_000


class Intake:
    def __init__(
        self,
        consumer: GroupConsumer[TopicPartition],
        inputs: PartitionInputs,
        partitions: Mapping[int, PartitionRuntime],
        gate: RecordGate,
        inbox: CommandInbox,
        topics: TimerTopics,
        now_ms: Callable[[], int],
    ) -> None:
        """`partitions`: the service's own map of the partitions it serves (read, never
        changed here)."""
        self.consumer = consumer
        self.inputs = inputs
        self.partitions = partitions
        self.gate = gate
        self.inbox = inbox
        self.topics = topics
        self.now_ms = now_ms

    def read(self, timeout_s: float) -> list[KafkaMessage]:
        """What is fetched already, else the first input within `timeout_s` and what came with
        it. `consume(n, timeout)` waits out its whole timeout for a batch it cannot fill: every
        hop through the timer paid part of a tick for nothing (decision 0143)."""
        if not self.partitions:
            # Nothing served, so no inputs assigned: the group's consumer is the one to wait
            # on (its rebalance callbacks run inside it).
            messages = list(self.consumer.consume(CHUNK, 0))
            if messages:
                return messages
            first = self.consumer.poll(timeout_s)
            if first is None:
                return []
            return [first, *self.consumer.consume(CHUNK - 1, 0)]
        # The group's consumer first, without waiting: it also runs the rebalance callbacks,
        # which may take a partition away before its inputs are read.
        messages = list(self.consumer.consume(CHUNK, 0))
        inputs = self._drain([])
        if not messages and not inputs and self.partitions:
            first = self.inputs.poll(timeout_s)
            if first is not None:
                inputs = self._drain([first])
                messages = list(self.consumer.consume(CHUNK, 0))
        messages.extend(inputs)
        return messages

    def _drain(self, taken: list[KafkaMessage]) -> list[KafkaMessage]:
        """The inputs fetched already, after `taken`, up to INPUTS_PER_TURN."""
        while len(taken) < INPUTS_PER_TURN:
            chunk = self.inputs.consume(min(CHUNK, INPUTS_PER_TURN - len(taken)))
            taken.extend(chunk)
            if len(chunk) < CHUNK:
                break
        return taken

    def apply(self, messages: list[KafkaMessage]) -> None:
        """Each record to its partition's scheduler; what it produces waits in the partition's
        pending writes for the turn's transaction."""
        now = self.now_ms()
        events = self.topics.events
        for msg in messages:
            partition = msg.partition()
            if msg.error() or partition is None:
                continue
            runtime = self.partitions.get(partition)
            if runtime is None:
                continue
            offset = msg.offset()
            if self.gate.resized and msg.topic() == events and offset is not None:
                forward = self._foreign(msg, partition)
                if forward is not None:
                    runtime.events_offset = offset + 1
                    runtime.inputs_moved = True
                    runtime.forwards.append(forward)
                    continue
            if msg.topic() == events and offset is not None:
                # Whatever the event comes to (applied, passed over, dead-lettered), its offset
                # is committed with it: a restart does not dead-letter it a second time.
                runtime.events_offset = offset + 1
                runtime.inputs_moved = True
                event = _plain_event(msg)
                if event is not None:  # the common input, two per execution: no Record made
                    try:
                        self._decide_event(runtime, event, now)
                    except Exception as exc:  # as below: dead-lettered, the loop goes on
                        rejected = self.gate.rejection(record_of(msg), exc)
                        runtime.pending_emission.dead_letters.append(rejected)
                    continue
            record = record_of(msg)
            rejects = runtime.pending_emission.dead_letters
            try:
                if self.gate.usable_key(record, rejects):
                    self._apply_record(runtime, record, now)
            except Exception as exc:
                # Decodable but unacceptable (a bad cron published by another client, a
                # backfill without a range, ...): dead-lettered with the partition's next
                # transaction, and the loop goes on.
                rejects.append(self.gate.rejection(record, exc))

    def _apply_record(self, runtime: PartitionRuntime, record: ReadRecord, now: int) -> None:
        rejects = runtime.pending_emission.dead_letters
        if record.topic == self.topics.definitions:
            if record.key is None:
                return
            definition = None
            if record.value is not None:
                definition = self.gate.decode(record, "JobDefinition", rejects)
                if definition is None:
                    return
                self.gate.check_definition(record.key, definition, runtime.partition)
            emission = runtime.timer.apply_definition(record.key, definition, now)
            runtime.pending_emission.extend(emission)
        elif record.topic == self.topics.commands:
            self.inbox.receive(runtime, record, now)
        elif record.topic == self.topics.events:  # its offset moved in `apply`
            if record.value is None:
                return
            event = self.gate.decode(record, "ExecutionEvent", rejects)
            if event is not None:
                self._decide_event(runtime, event, now)

    def _foreign(self, msg: KafkaMessage, partition: int) -> Forward | None:
        """A worker event whose job another partition owns now (decision 0211), as the record
        to send on to it; None for one of this partition's (or a key nobody owns: the general
        path dead-letters it)."""
        raw = msg.key()
        if raw is None:
            return None
        try:
            key = raw.decode()
        except UnicodeDecodeError:
            return None
        owner = self.gate.foreign_owner(key, partition)
        if owner is None:
            return None
        # Workers' events carry no headers (their producer sets none).
        return Forward(self.topics.events, key, msg.value(), owner, msg.offset() or 0)

    @staticmethod
    def _decide_event(runtime: PartitionRuntime, event: ExecutionEvent, now: int) -> None:
        if event["event_id"].startswith("timer:"):
            return  # our own records come back to us: nothing to decide
        if event["event_type"] in WORKER_EVENTS:
            runtime.timer.on_execution_event(event, now, runtime.pending_emission)


def _plain_event(msg: KafkaMessage) -> ExecutionEvent | None:
    """A worker's event as the gate would decode it, read without making its `Record`, if it
    is plain: a value, an ASCII key (UTF-8 at once: job ids are), a body the decoder takes.
    None for anything else (a tombstone, another key, a body the decoder refuses): the general
    path reads it, judges it and dead-letters it with its reason."""
    value, key = msg.value(), msg.key()
    if value is None or key is None or not key.isascii():
        return None
    try:
        return decode_event(value)
    except Exception:
        return None  # decoded again on the general path, which says why
