"""Rebuild one partition from Kafka (decision 0004): fence the previous owner, then read the
partition's timer states, its definitions and the requests its states do not cover yet.

Nothing a restore reads can stop it: a record nobody can use is dead-lettered (in the
partition's first transaction) and the restore goes on.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.core.timer.request_log import SEQ_HEADER, RequestLog
from tickwheel.ports.kafka import KafkaClients, PartitionReader, ReadRecord
from tickwheel.services.timer.gate import DeadLetters, RecordGate
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.records import checkpoint_key
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics
from tickwheel.services.timer.scheduler import PartitionTimer
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.timer")


def transactional_id(partition: int) -> str:
    """The transactional id of partition p's owner: whoever takes it next fences the last."""
    return f"{topic_name('tickwheel-timer')}-p{partition}"


@dataclass
class Rebuilt:
    """A partition read back (`PartitionRestorer.rebuild`): its scheduler before the restore
    is finished, the checkpoint's input offsets, where its definitions end, the request log
    (which jobs the replayed requests changed) and the records nobody can use."""

    timer: PartitionTimer
    input_offsets: dict[str, int]
    end: int
    request_log: RequestLog
    rejects: DeadLetters


class PartitionRestorer:
    def __init__(
        self,
        settings: TimerSettings,
        topics: TimerTopics,
        gate: RecordGate,
        inputs: PartitionInputs,
        now_ms: Callable[[], int],
        clients: KafkaClients[TopicPartition],
        reader: PartitionReader,
    ) -> None:
        self.settings = settings
        self.topics = topics
        self.gate = gate
        self.inputs = inputs
        self.now_ms = now_ms
        self.clients = clients
        self.reader = reader

    def restore(self, partition: int) -> PartitionRuntime:
        """The partition rebuilt and serving, with what its restore must write first (catch-up,
        skips, dead letters) in `runtime.catch_up`. `runtime.definitions_end` is where the live
        tail starts (-1 for an empty partition)."""
        producer = self.clients.transactional(transactional_id(partition))
        # Fences the previous owner and waits out its open transaction (if any) before we read.
        producer.init()
        rebuilt = self.rebuild(partition)
        timer, input_offsets, rejects = rebuilt.timer, rebuilt.input_offsets, rebuilt.rejects
        runtime = PartitionRuntime(partition, timer, producer, rebuilt.end, rebuilt.request_log)
        runtime.command_offset = input_offsets.get(self.topics.commands)
        runtime.events_offset = input_offsets.get(self.topics.events)
        if runtime.events_offset is None:
            # First owner ever: nothing in flight can predate it, so start at the end.
            runtime.events_offset = self.inputs.watermarks(self.topics.events, partition)[1]
            runtime.inputs_moved = True
        runtime.catch_up = timer.finish_restore(self.now_ms())
        runtime.catch_up.dead_letters.extend(rejects)
        return runtime

    def rebuild(self, partition: int) -> Rebuilt:
        """The partition as its committed records leave it, before its misfire policy is
        applied: every job's state (with the requests no state covered yet replayed into it),
        its definitions and its checkpoint. `restore` serves from it; a resize moves it
        (decision 0211). The caller fences the previous owner first."""
        # Retry jitter is seeded from the OS here, and injected into the core.
        timer = self.settings.partition_timer(partition, self.now_ms(), random.Random())
        rejects: DeadLetters = []
        input_offsets, seq = self._load_states(timer, partition, rejects)
        end = self._load_definitions(timer, partition, rejects)
        request_log = self._replay_unsaved_requests(timer, partition, input_offsets, seq, rejects)
        return Rebuilt(timer, input_offsets, end, request_log, rejects)

    def _load_states(
        self, timer: PartitionTimer, partition: int, rejects: DeadLetters
    ) -> tuple[dict[str, int], int]:
        """Every job's state into `timer`; returns the checkpoint's input offsets and the
        highest timer transaction number seen (ours continue from it)."""
        input_offsets: dict[str, int] = {}
        seq = 0
        for record in self.reader.read_to_end(self.topics.state, [partition]):
            if record.key is None or not self.gate.usable_key(record, rejects):
                continue
            state = None
            if record.value is not None:
                state = self.gate.decode(record, "TimerState", rejects)
                if state is None:
                    continue
                seq = max(seq, state["seq"])
            if record.key == checkpoint_key(partition):
                input_offsets = dict(state["input_offsets"]) if state else {}
                continue
            timer.load_state(record.key, state)
        return input_offsets, seq

    def _load_definitions(self, timer: PartitionTimer, partition: int, rejects: DeadLetters) -> int:
        end = -1
        for record in self.reader.read_to_end(self.topics.definitions, [partition]):
            end = record.offset + 1
            if record.key is None or not self.gate.usable_key(record, rejects):
                continue
            definition = None
            if record.value is not None:
                definition = self.gate.decode(record, "JobDefinition", rejects)
                if definition is None:
                    continue
            try:
                if definition is not None:
                    self.gate.check_definition(record.key, definition, partition)
                timer.load_definition(record.key, definition)
            except Exception as exc:  # one bad definition is its own problem
                rejects.append(self.gate.rejection(record, exc))
        return end

    def _replay_unsaved_requests(
        self,
        timer: PartitionTimer,
        partition: int,
        input_offsets: dict[str, int],
        seq: int,
        rejects: DeadLetters,
    ) -> RequestLog:
        """Requests of jobs whose states were not written yet (decision 0008): read from the
        checkpointed offsets to the end. The jobs they rebuild stay unsaved in the returned
        log until their states are written, so a restore would read them again till then."""
        ends = {}
        replayed_from: dict[str, int] = {}
        replayed: dict[str, None] = {}
        for topic in self.topics.requests.values():
            low, ends[topic] = self.inputs.watermarks(topic, partition)
            start = input_offsets.get(topic)
            if start is None:
                continue  # nothing was left unsaved
            if start < low:
                # Retention deleted requests no state covers yet: their slots will fire again.
                log.warning(
                    "request log truncated before the checkpoint",
                    extra={
                        "action": "request_log_truncated",
                        "partition": partition,
                        "topic": topic,
                        "checkpoint": start,
                        "low": low,
                    },
                )
            for record in self.reader.read_to_end(topic, [partition], {partition: start}):
                if record.value is None or record.offset >= ends[topic]:
                    continue
                if not self.gate.usable_key(record, rejects):
                    continue
                request = self.gate.decode(record, "ExecutionRequest", rejects)
                written_by = _header(record, SEQ_HEADER)
                if request is None or written_by is None:
                    continue
                try:
                    seq = max(seq, int(written_by))
                    if timer.load_request(request, int(written_by)):
                        replayed[request["job_id"]] = None
                        replayed_from.setdefault(topic, start)
                except Exception as exc:
                    rejects.append(self.gate.rejection(record, exc))
        return RequestLog(
            seq, ends, replayed_from=replayed_from, replayed=replayed, now_ms=self.now_ms()
        )


def _header(record: ReadRecord, name: str) -> bytes | None:
    for key, value in record.headers:
        if key == name:
            return value
    return None
