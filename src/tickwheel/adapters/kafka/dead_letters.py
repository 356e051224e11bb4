"""Records that cannot be decoded go to the dead-letter topic with a reason and their
topic/partition/offset; the consumer that met them keeps running."""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer, ProduceFailed
from tickwheel.clock import Clock, SystemClock
from tickwheel.ports.kafka import ReadRecord
from tickwheel.records import DeadLetter
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.dead_letters")

MAX_RAW_BYTES = 64 * 1024


MAX_KEY_CHARS = 1_000
# A dead letter that cannot be delivered in this long (no broker) is logged, not waited for.
FLUSH_TIMEOUT_S = 10.0
MAX_REASON_CHARS = 2_000


def dead_letter_record(
    topic: str,
    partition: int,
    offset: int,
    key: str | None,
    raw: bytes | None,
    reason: str,
    kind: str,
    now_ms: int,
) -> DeadLetter:
    """The `DeadLetter` of the record at topic/partition/offset. `kind` is `undecodable` (not a
    record of its schema) or `rejected` (decoded, but not acceptable). Bounded in size whatever
    the bad record carries, so writing it inside a transaction can never fail that transaction."""
    if key is not None and len(key) > MAX_KEY_CHARS:
        key = key[:MAX_KEY_CHARS]
    record: DeadLetter = {
        # Deterministic: a record met again (a restore re-reads a compacted topic) is the
        # same dead letter, which the history sink de-duplicates.
        "dead_letter_id": f"{kind}:{topic}:{partition}:{offset}",
        "event_time": now_ms,
        "reason": f"{kind}: {reason}"[:MAX_REASON_CHARS],
        "source_topic": topic,
        "source_partition": partition,
        "source_offset": offset,
        "execution_id": None,
        "job_id": key,
        "attempt": None,
        "error": reason[:MAX_REASON_CHARS],
        "payload": None,
        # A dead letter must fit in a Kafka record whatever it carries: keep the head.
        "raw_value": raw[:MAX_RAW_BYTES] if raw is not None else None,
    }
    if raw is not None and len(raw) > MAX_RAW_BYTES:
        record["reason"] += f" (raw value truncated to {MAX_RAW_BYTES} of {len(raw)} bytes)"
    return record


def dead_letter_of(record: ReadRecord, reason: str, kind: str, now_ms: int) -> DeadLetter:
    """`dead_letter_record` of a record read (its topic, partition, offset, key and bytes)."""
    return dead_letter_record(
        record.topic,
        record.partition,
        record.offset,
        record.key,
        record.value,
        reason,
        kind,
        now_ms,
    )


class DeadLetterWriter:
    def __init__(self, bootstrap: str | None = None, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._producer: EventProducer | None = None
        self._bootstrap = bootstrap
        self.topic = topic_name("executions.dlq")

    def undecodable(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: str | None,
        raw: bytes | None,
        reason: str,
        kind: str = "undecodable",
    ) -> None:
        """Dead-letter the record at topic/partition/offset. `kind` is `undecodable` (not a
        record of its schema) or `rejected` (decoded, but not acceptable)."""
        log.error(
            f"{kind} record sent to the dead-letter topic",
            extra={
                "action": "record_dead_lettered",
                "topic": topic,
                "partition": partition,
                "offset": offset,
                "reason": reason,
            },
        )
        if self._producer is None:
            self._producer = EventProducer(self._bootstrap)
        now_ms = int(self._clock.now() * 1000)
        record = dead_letter_record(topic, partition, offset, key, raw, reason, kind, now_ms)
        try:
            self._producer.send(self.topic, key, encode("DeadLetter", record))
            self._producer.flush(FLUSH_TIMEOUT_S)
        except (KafkaException, ProduceFailed):
            # Still too large (e.g. a huge key): the position and reason are what matter.
            record["raw_value"] = None
            try:
                self._producer.send(self.topic, None, encode("DeadLetter", record))
                self._producer.flush(FLUSH_TIMEOUT_S)
            except (KafkaException, ProduceFailed) as exc:
                # The log line above keeps the position and reason; the consumer goes on.
                log.error(
                    "dead letter not delivered",
                    extra={
                        "action": "dead_letter_undelivered",
                        "topic": topic,
                        "partition": partition,
                        "offset": offset,
                        "error": str(exc),
                    },
                )
