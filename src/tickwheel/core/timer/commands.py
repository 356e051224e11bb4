"""What a `TimerCommand` asks of a job, checked before anything is emitted.

A command that cannot be carried out is never consumed into nothing: it raises
`RejectedCommand` naming why, and the service dead-letters it (in the partition's transaction,
with the command's topic, partition and offset). A command for a job the timer does not know
(yet) is the service's to hold: its definition may still be on its way (service.py).
"""

from __future__ import annotations

import uuid

from tickwheel.core.definition import MAX_BACKFILL
from tickwheel.core.identity import EXECUTION_NAMESPACE, execution_name
from tickwheel.core.timer.jobs import JobEntry
from tickwheel.errors import TickwheelError
from tickwheel.records import ExecutionTrigger, TimerCommand

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
