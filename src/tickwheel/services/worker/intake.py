"""What a lane does with the records one poll returns, before any of them runs: decode each
request (an undecodable one goes to the dead-letter topic with its reason, and the lane keeps
going), leave another queue's requests to that queue's workers, and track every offset so
that none is committed before its request is safely recorded (`offsets.py`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import NamedTuple

from tickwheel.adapters.avro import UndecodableRecord
from tickwheel.adapters.avro.fast.execution_request import decode as decode_request
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.core.queues import DEFAULT_QUEUE
from tickwheel.ports.kafka import KafkaMessage
from tickwheel.records import ExecutionRequest
from tickwheel.services.worker.offsets import OffsetTracker

log = logging.getLogger("tickwheel.worker")


class Pending(NamedTuple):
    """A request waiting in the lane for a slot (or for the next inline batch). A tuple: a
    frozen dataclass cost a microsecond per request to build."""

    request: ExecutionRequest
    partition: int
    offset: int
    received: float  # monotonic seconds, for the wait a slot's start logs


class RequestIntake:
    """Turns consumed records into `Pending` requests for one queue."""

    def __init__(self, queue: str, offsets: OffsetTracker, dead_letters: DeadLetterWriter) -> None:
        self.queue = queue
        self.offsets = offsets
        self.dead_letters = dead_letters

    def accept(self, messages: Iterable[KafkaMessage], received: float) -> list[Pending]:
        """The requests among `messages` this lane is to run, in order. Every offset is
        tracked (under one lock for the poll) before any of them can be marked done."""
        accepted: list[Pending] = []
        positions: list[tuple[int, int]] = []
        settled: list[tuple[int, int]] = []  # dead-lettered, or another queue's
        queue = self.queue
        keep, seen, decode = accepted.append, positions.append, decode_request
        try:
            for msg in messages:
                if msg.error():
                    log.warning(
                        "consume error",
                        extra={"action": "consume_error", "error": str(msg.error())},
                    )
                    continue
                partition, offset = msg.partition(), msg.offset()
                assert partition is not None and offset is not None  # a consumed record has both
                seen((partition, offset))
                try:
                    request = decode(msg.value() or b"")
                except UndecodableRecord as exc:
                    key = msg.key()
                    self.dead_letters.undecodable(
                        msg.topic() or "",
                        partition,
                        offset,
                        key.decode(errors="replace") if key is not None else None,
                        msg.value(),
                        exc.reason,
                    )
                    settled.append((partition, offset))
                    continue
                if (request["queue"] or DEFAULT_QUEUE) != queue:
                    # Another queue's: its own workers (their own consumer group) take it.
                    settled.append((partition, offset))
                    continue
                keep(Pending(request, partition, offset, received))
        finally:  # even if a dead letter fails: what was seen is never committed past
            self.offsets.track_all(positions)
        if settled:
            self.offsets.done_all(settled)
        return accepted
