"""What one partition's next transaction carries (the glossary's "writes"; the service's code
called it an emission).

The scheduler decides, the service writes: every decision of `PartitionScheduler` returns a
`PartitionWrites`, and `services/timer/writer.py` commits it, with the partition's checkpoint,
in one Kafka transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tickwheel.records import DeadLetter, ExecutionEvent, ExecutionRequest


@dataclass
class PartitionWrites:
    """What one tick (or one command, or a restore) asks the service to write in the
    partition's next transaction: requests, skipped-occurrence events, job states (None: a
    tombstone), dead letters, and the jobs that fired without their state ("unsaved")."""

    requests: list[ExecutionRequest] = field(default_factory=list)
    events: list[ExecutionEvent] = field(default_factory=list)
    states: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    # Jobs that fired without their state: their requests stand for it until it is written
    # (core/timer/request_log.py, decision 0008).
    unsaved: list[str] = field(default_factory=list)
    # Jobs whose state an event changed: built once, as it stands when the transaction is
    # sent (`PartitionScheduler.refresh_fired_states`), not once per event.
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.requests or self.events or self.states or self.dead_letters or self.changed
        )

    def chunks(self, limit: int) -> list[PartitionWrites]:
        """Split into emissions of about `limit` records each, never splitting one job's
        records (its requests, events and state must commit together)."""
        by_job: dict[str, PartitionWrites] = {}
        for request in self.requests:
            by_job.setdefault(request["job_id"], PartitionWrites()).requests.append(request)
        for event in self.events:
            by_job.setdefault(event["job_id"], PartitionWrites()).events.append(event)
        for letter in self.dead_letters:
            by_job.setdefault(letter["job_id"] or "", PartitionWrites()).dead_letters.append(letter)
        for job_id, state in self.states.items():
            by_job.setdefault(job_id, PartitionWrites()).states[job_id] = state
        for job_id in self.unsaved:
            by_job.setdefault(job_id, PartitionWrites()).unsaved.append(job_id)
        for job_id in self.changed:
            by_job.setdefault(job_id, PartitionWrites()).changed.append(job_id)
        chunks: list[PartitionWrites] = []
        current, size = PartitionWrites(), 0
        for part in by_job.values():
            if size and size + len(part.requests) + len(part.events) > limit:
                chunks.append(current)
                current, size = PartitionWrites(), 0
            current.extend(part)
            size += len(part.requests) + len(part.events)
        if current or not chunks:
            chunks.append(current)
        return chunks

    def extend(self, other: PartitionWrites) -> None:
        self.requests.extend(other.requests)
        self.events.extend(other.events)
        self.states.update(other.states)
        self.dead_letters.extend(other.dead_letters)
        self.unsaved.extend(other.unsaved)
        self.changed.extend(other.changed)
