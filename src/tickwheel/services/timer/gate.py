"""What the timer accepts from its topics: records decoded, checked by the core's rules, or
dead-lettered with their reason (bounded, written in the partition's next transaction)."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any, Literal, cast, overload

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.avro.fast.execution_event import decode as decode_event
from tickwheel.adapters.avro.fast.job_definition import decode as decode_definition
from tickwheel.adapters.kafka.dead_letters import dead_letter_of
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import foreign_owner
from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.timer.commands import RejectedCommand
from tickwheel.errors import InvalidInput
from tickwheel.ports.kafka import ReadRecord
from tickwheel.records import (
    DeadLetter,
    ExecutionEvent,
    ExecutionRequest,
    JobDefinition,
    TimerCommand,
)
from tickwheel.services.timer.records import decode_state

log = logging.getLogger("tickwheel.timer")

# Network targets are the worker's to judge (its allow-list, its network): to the timer every
# network counts as allowed.
ANY_NETWORK = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
DeadLetters = list[DeadLetter]


class RecordGate:
    def __init__(
        self, partition_count: int, max_payload_bytes: int, now_ms: Callable[[], int]
    ) -> None:
        self.partition_count = partition_count
        self.max_payload_bytes = max_payload_bytes
        self.now_ms = now_ms
        # Whether the group was ever resized (decision 0211): only then can an input sit on a
        # partition that does not own its key, and only then is each input's owner computed.
        self.resized = False

    def adopt(self, partition_count: int, *, resized: bool) -> None:
        """The group's count as the cluster records it (`verify_topology`, at start)."""
        self.partition_count = partition_count
        self.resized = resized

    def foreign_owner(self, key: str | None, partition: int) -> int | None:
        """Where an input of `partition` with `key` is to be forwarded, if another partition
        owns it now; never before a resize was recorded (decision 0211)."""
        return foreign_owner(key, partition, self.partition_count) if self.resized else None

    @overload
    def decode(
        self, record: ReadRecord, expected: Literal["JobDefinition"], rejects: DeadLetters
    ) -> JobDefinition | None: ...
    @overload
    def decode(
        self, record: ReadRecord, expected: Literal["ExecutionEvent"], rejects: DeadLetters
    ) -> ExecutionEvent | None: ...
    @overload
    def decode(
        self, record: ReadRecord, expected: Literal["ExecutionRequest"], rejects: DeadLetters
    ) -> ExecutionRequest | None: ...
    @overload
    def decode(
        self, record: ReadRecord, expected: Literal["TimerCommand"], rejects: DeadLetters
    ) -> TimerCommand | None: ...
    @overload
    def decode(
        self, record: ReadRecord, expected: Literal["TimerState"], rejects: DeadLetters
    ) -> dict[str, Any] | None: ...
    def decode(
        self, record: ReadRecord, expected: str, rejects: DeadLetters
    ) -> JobDefinition | ExecutionEvent | ExecutionRequest | TimerCommand | dict[str, Any] | None:
        """A record decoded, or dead-lettered into `rejects`. The decode boundary: the one place
        a record read becomes its generated type (the decoder fills every field, defaults
        included, so the record has them all). A TimerState comes with its pending requests as
        dicts (`records.decode_state`), which is not the record's shape: it stays a dict."""
        try:
            if expected == "TimerState":
                return decode_state(record.value or b"")
            if expected == "ExecutionEvent":  # two per execution: read by hand (decision 0144)
                return decode_event(record.value or b"")
            if expected == "JobDefinition":  # a million at a restore: read by hand too
                return decode_definition(record.value or b"")
            value = decode(record.value or b"", expected)[1]
        except UndecodableRecord as exc:
            rejects.append(self.dead_letter(record, exc.reason, "undecodable"))
            return None
        return cast(JobDefinition | ExecutionEvent | ExecutionRequest | TimerCommand, value)

    def usable_key(self, record: ReadRecord, rejects: DeadLetters) -> bool:
        """Keys are job ids, so one that is not UTF-8 belongs to no job: dead-lettered, live and
        at restore alike (it used to pass live and stop the next restore)."""
        if record.key_is_text:
            return True
        rejects.append(self.dead_letter(record, "the record key is not UTF-8", "rejected"))
        return False

    def check_definition(self, key: str, definition: JobDefinition, partition: int) -> None:
        """Refuse what the SDK would have refused (the core's one validator: a key that is not
        the job's id, a reserved id, a template that does not render, ...), and a job published
        to a partition its key does not hash to (its requests and its workers' events would
        meet on no partition)."""
        check_definition_record(
            definition, key, max_payload_bytes=self.max_payload_bytes, allowed_networks=ANY_NETWORK
        )
        expected = partition_for(key, self.partition_count)
        if expected != partition:
            raise InvalidInput(
                "jobId",
                f"{key!r} belongs to partition {expected}, not {partition}: published with a "
                "partitioner other than Kafka's default (murmur2)",
            )

    def rejection(self, record: ReadRecord, exc: Exception) -> DeadLetter:
        """The dead letter of a decodable but unacceptable record."""
        reason = exc.reason if isinstance(exc, RejectedCommand) else str(exc) or repr(exc)
        return self.dead_letter(record, reason, "rejected")

    def dead_letter(self, record: ReadRecord, reason: str, kind: str) -> DeadLetter:
        log.error(
            f"{kind} record sent to the dead-letter topic",
            extra={
                "action": "record_dead_lettered",
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "reason": reason,
            },
        )
        letter = dead_letter_of(record, reason, kind, self.now_ms())
        return letter
