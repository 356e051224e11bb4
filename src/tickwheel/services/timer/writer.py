"""One partition's transaction: the requests, skipped events, dead letters and timer states an
emission holds, and the partition's checkpoint (its input offsets), committed together."""

from __future__ import annotations

import logging
import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tickwheel.adapters.avro import encode
from tickwheel.adapters.avro.fast.execution_request import encode as encode_request
from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.adapters.kafka.placement import Forward, log_forwards
from tickwheel.core.timer.request_log import SEQ_HEADER, first_offset_recorder
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.runtime.transactions import Outcome, failure
from tickwheel.services.timer.codec import encode_timer_state
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.records import checkpoint_key, encode_checkpoint, request_key
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics

log = logging.getLogger("tickwheel.timer")

MAX_ENCODED_REQUESTS = 1_000_000
_FIRE_TIME = operator.itemgetter("fire_time")


@dataclass(frozen=True, slots=True)
class Sent:
    """A partition's transaction sent, not committed yet (`TransactionWriter.finish`)."""

    runtime: PartitionRuntime
    emission: PartitionWrites
    seq: int
    first_offsets: dict[str, int]
    forwards: list[Forward]


class TransactionWriter:
    def __init__(
        self, topics: TimerTopics, metrics: TimerMetrics, now_ms: Callable[[], int]
    ) -> None:
        self.topics = topics
        self.metrics = metrics
        self.now_ms = now_ms

    def commit(self, runtime: PartitionRuntime, emission: PartitionWrites) -> Outcome:
        """Write `emission` and the checkpoint in one transaction. `fenced`: a newer owner has
        the partition; `failed`: aborted (the caller drops the partition and restores it)."""
        sent = self.send(runtime, emission)
        return sent if isinstance(sent, str) else self.finish(sent)

    def send(self, runtime: PartitionRuntime, emission: PartitionWrites) -> Sent | Outcome:
        """The first half of `commit`: begin the partition's transaction and send everything in
        it, the checkpoint last. `finish` commits it. A loop with several partitions sends
        them all before committing any, so each commit's wait for the broker overlaps the
        next partitions' sends (their producers are independent: one transaction each, as
        before). An outcome instead of `Sent`: nothing to write, or the send failed."""
        workflows = runtime.timer.workflows
        if emission.changed:  # the states of the jobs events changed, as they stand now
            runtime.timer.refresh_fired_states(emission, self.now_ms())
        if not emission and not runtime.inputs_moved and not workflows.owed():
            return "committed"
        producer = runtime.producer
        encoded = runtime.encoded_requests
        # Sent with the checkpoint past them; a failed transaction rebuilds the partition,
        # which reads and forwards them again (decision 0211).
        forwards, runtime.forwards = runtime.forwards, []
        try:
            producer.begin()
            for forward in forwards:
                producer.send(
                    forward.topic,
                    forward.key,
                    forward.value,
                    forward.partition,
                    list(forward.headers),
                )
            seq = runtime.log.seq + 1
            headers = [(SEQ_HEADER, str(seq).encode())]
            # Where this transaction's first request lands on each topic: the request log's
            # marks (known once the commit has flushed them).
            first_offsets: dict[str, int] = {}
            partition = runtime.partition
            topics, send = self.topics.requests, producer.send  # once, not once a request
            for request in emission.requests:
                # Each request is encoded once: its job's state below carries the same bytes.
                raw = encode_request(request)  # the generic encoder's bytes (decision 0116)
                job_id = request["job_id"]
                cache = encoded.get(job_id)
                if cache is None:  # the usual: the job's one request since its last state
                    encoded[job_id] = {request_key(request): raw}
                else:
                    cache[request_key(request)] = raw
                topic = topics[request["priority"]]
                if topic in first_offsets:
                    # On the job's own partition, as the checkpoint's offsets assume.
                    send(topic, job_id, raw, partition, headers)
                    continue
                first_offsets[topic] = -1
                recorder = first_offset_recorder(first_offsets, topic, partition)
                send(topic, job_id, raw, partition, headers, on_delivery=recorder)
            for event in emission.events:
                producer.send(self.topics.events, event["job_id"], encode("ExecutionEvent", event))
            for letter in emission.dead_letters:
                producer.send(self.topics.dlq, letter["job_id"], encode("DeadLetter", letter))
            # Workflows are told what this transaction accepted, in it (decision 0061); a
            # failed transaction drops the partition, and the restore owes them again.
            owed_inputs, owed_controls = workflows.take()
            for item in owed_inputs:
                raw = encode("WorkflowInput", item)
                producer.send(self.topics.workflow_inputs, item["workflow_id"], raw)
            for control in owed_controls:
                raw = encode("ExecutionControl", control)
                producer.send(self.topics.control, control["execution_id"], raw)
            for job_id, state in emission.states.items():
                if state is None:
                    encoded.pop(job_id, None)
                producer.send(
                    self.topics.state,
                    job_id,
                    # Any state of a job covers every request it was sent: its cached bytes go.
                    None
                    if state is None
                    else encode_timer_state(state, encoded.pop(job_id, {}), seq),
                )
            producer.send(
                self.topics.state,
                checkpoint_key(partition),
                self._checkpoint(runtime, emission, seq),
                partition=partition,
            )
        except KafkaException as exc:
            return self._failed(runtime, exc)
        return Sent(runtime, emission, seq, first_offsets, forwards)

    def finish(self, sent: Sent) -> Outcome:
        """The second half of `commit`: commit the transaction `send` filled, then record what
        it wrote (the request log's marks, the metrics)."""
        runtime, emission = sent.runtime, sent.emission
        try:
            runtime.producer.commit()
            self.metrics.transactions.inc()
        except KafkaException as exc:
            return self._failed(runtime, exc)
        runtime.inputs_moved = False
        log_forwards(log, runtime.partition, sent.forwards)
        encoded = runtime.encoded_requests
        if len(encoded) > MAX_ENCODED_REQUESTS:
            encoded.clear()  # a safety net only: each job's go with its next state
        emitted_at = self.now_ms()
        runtime.log.committed(
            sent.seq,
            emission.unsaved,
            emission.states,
            {topic: offset for topic, offset in sent.first_offsets.items() if offset >= 0},
            emitted_at,
        )
        # Counted by fire time first (in C): a transaction's requests share a few of them.
        lags: Counter[float] = Counter()
        for fire_ms, n in Counter(map(_FIRE_TIME, emission.requests)).items():
            lags[max(0, emitted_at - fire_ms) / 1000] += n  # fired early: a lag of 0
        self.metrics.fire_lag.observe_counted(lags)
        self.metrics.emitted.inc(len(emission.requests))
        self.metrics.skipped.inc(len(emission.events))
        return "committed"

    def _failed(self, runtime: PartitionRuntime, exc: KafkaException) -> Outcome:
        self.metrics.aborts.inc()
        return failure(runtime.producer, exc, runtime.partition, log)

    def _checkpoint(self, runtime: PartitionRuntime, emission: PartitionWrites, seq: int) -> bytes:
        """Where the partition's inputs stand and, on the request topics, where the requests
        of jobs still unsaved after this transaction begin."""
        offsets = runtime.log.checkpoint_offsets(emission.states, emission.unsaved)
        if runtime.command_offset is not None:
            offsets[self.topics.commands] = runtime.command_offset
        if runtime.events_offset is not None:
            offsets[self.topics.events] = runtime.events_offset
        return encode_checkpoint(runtime.partition, offsets, seq, self.now_ms())
