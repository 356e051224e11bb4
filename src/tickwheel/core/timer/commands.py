"""What a `TimerCommand` asks of a job, checked before anything is emitted.

A command that cannot be carried out is never consumed into nothing: it raises
`RejectedCommand` naming why, and the service dead-letters it (in the partition's transaction,
with the command's topic, partition and offset). A command for a job the timer does not know
(yet) is the service's to hold: its definition may still be on its way (service.py).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from tickwheel.core.definition import MAX_BACKFILL
from tickwheel.core.identity import EXECUTION_NAMESPACE, execution_name
from tickwheel.core.identity import execution_id as execution_id_of
from tickwheel.core.timer.firing import start_occurrence
from tickwheel.core.timer.jobs import JobEntry
from tickwheel.core.timer.occurrences import skipped_event
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.errors import TickwheelError
from tickwheel.records import ExecutionTrigger, TimerCommand

if TYPE_CHECKING:
    from tickwheel.core.timer.partition import PartitionScheduler

COMMAND_KINDS = ("trigger", "backfill")


class RejectedCommand(TickwheelError, ValueError):
    """A timer command that cannot be carried out; `reason` says why, for the dead letter."""

    def __init__(self, command: TimerCommand, reason: str) -> None:
        super().__init__(
            f"command {command.get('command_id')!r} ({command.get('kind')!r}): {reason}"
        )
        self.reason = reason


def command_slots(job: JobEntry, command: TimerCommand) -> tuple[ExecutionTrigger, list[int]]:
    """(trigger, slots) the command asks for: a trigger fires once at its request time, a
    backfill every slot of the job's schedule in (range_start, range_end], at most MAX_BACKFILL.
    Raises RejectedCommand for an unknown kind or an unusable range."""
    kind = command.get("kind")
    if kind == "trigger":
        return "manual", [command["requested_at"]]
    if kind == "backfill":
        start, end = command.get("range_start"), command.get("range_end")
        if start is None or end is None:
            raise RejectedCommand(command, "a backfill needs range_start and range_end")
        if end <= start:
            raise RejectedCommand(
                command, f"backfill range ends ({end}) at or before it starts ({start})"
            )
        slots = list(job.schedule.first(start, end, MAX_BACKFILL + 1))
        if len(slots) > MAX_BACKFILL:
            raise RejectedCommand(
                command,
                f"the range holds more than {MAX_BACKFILL} slots of the job's schedule; "
                "accepted: a range of at most that many slots (split it into several backfills)",
            )
        return "backfill", slots
    raise RejectedCommand(command, f"unknown kind {kind!r}; accepted: {', '.join(COMMAND_KINDS)}")


def backfill_execution_id(command_id: str, job_id: str, version: int, slot_ms: int) -> str:
    """The execution id of one slot of a backfill (decision 0121): a UUIDv5 in the executions'
    namespace over `backfill:v1:<len(command_id as UTF-8)>:<command_id>:<the slot's name>`
    (`execution_name`). A rerun of a slot that ran is a new execution — its events, retries
    and dead letter its own, not merged into the first run's — and the same command, read
    again after a restore, names the same executions."""
    size = len(command_id.encode("utf-8"))
    name = f"backfill:v1:{size}:{command_id}:{execution_name(job_id, version, slot_ms)}"
    return str(uuid.uuid5(EXECUTION_NAMESPACE, name))


def job_command(
    scheduler: PartitionScheduler, command: TimerCommand, now_ms: int
) -> PartitionWrites:
    """Carry out a trigger or backfill on `scheduler`'s partition. Raises RejectedCommand (for a dead letter) when it
    cannot be: an unknown job, kind or range."""
    job = scheduler.jobs.get(command["job_id"])
    if job is None:
        raise RejectedCommand(
            command, f"no job {command['job_id']!r} on partition {scheduler.partition}"
        )
    trigger, slots = command_slots(job, command)
    emission = PartitionWrites()
    in_flight = scheduler.executions.in_flight
    for slot in slots:
        # A trigger is fired at once; a backfill slot too (its period is the slot's own), as
        # an execution of its own (decision 0121).
        fire_ms = now_ms
        run_id = None
        if trigger == "backfill":
            run_id = backfill_execution_id(
                str(command.get("command_id") or ""), job.job_id, job.version, slot
            )
        if execution_id_of(job.job_id, job.version, slot) in in_flight or run_id in in_flight:
            # That occurrence (or this very backfill of it) is still running: it stands.
            skipped = skipped_event(job, slot, now_ms, f"{trigger}:in_flight", run_id)
            emission.events.append(skipped)
            continue
        start_occurrence(scheduler, job, slot, fire_ms, now_ms, trigger, None, emission, run_id)
    emission.states[job.job_id] = scheduler.state_of_entry(job, now_ms)
    return emission
