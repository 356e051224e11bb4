"""Trigger and backfill commands as they reach a partition, in order, never into nothing.

Definitions and commands come through two consumers, so "create, then trigger" can arrive
command first. A command for a job the partition does not know waits until the definitions
are read as far as they reached when it came (or COMMAND_WAIT_S), then is carried out or
dead-lettered with the reason. Commands behind a waiting one wait too, and the checkpoint stays
at the first waiting one: a crash reads them again, none lost, none applied twice (decision 0055).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from tickwheel.adapters.kafka.placement import Forward, canonical_key
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.timer.workflow_steps import is_workflow_command
from tickwheel.ports.kafka import ReadRecord
from tickwheel.records import TimerCommand
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.runtime import HeldCommand, PartitionRuntime

log = logging.getLogger("tickwheel.timer")

COMMAND_WAIT_S = 30.0


def _waits_for_its_job(runtime: PartitionRuntime, command: TimerCommand) -> bool:
    """A job's command waits for the job's definition; a workflow's has no definition here."""
    return not is_workflow_command(command) and command["job_id"] not in runtime.timer.jobs


class CommandInbox:
    def __init__(
        self,
        gate: RecordGate,
        commands_topic: str,
        definitions_end: Callable[[int], int],
        definitions_read: Callable[[int], int | None],
    ) -> None:
        """`definitions_end(p)` asks the broker where definitions partition p ends now;
        `definitions_read(p)` is how far this instance has read it (None when unknown)."""
        self.gate = gate
        self.commands_topic = commands_topic
        self.definitions_end = definitions_end
        self.definitions_read = definitions_read

    def receive(self, runtime: PartitionRuntime, record: ReadRecord, now: int) -> None:
        rejects = runtime.pending_emission.dead_letters
        command = None
        if record.value is not None:
            command = self.gate.decode(record, "TimerCommand", rejects)
        if command is None:
            self._done(runtime, record.offset)
            return
        if self.gate.resized:
            owner = self.gate.foreign_owner(command["job_id"], runtime.partition)
            if owner is not None:
                self._forward(runtime, record, command, owner)
                return
            # A workflow's step key placed by the count before a resize: its state goes by
            # the key the count places now (decision 0211).
            command["job_id"] = canonical_key(command["job_id"], self.gate.partition_count)
        unknown = _waits_for_its_job(runtime, command)
        if runtime.held_commands or unknown:
            end = 0  # behind another held command, its job may be known already
            if unknown:
                end = self.definitions_end(runtime.partition)
                log.info(
                    "command waits for its job's definition",
                    extra={
                        "action": "command_held",
                        "partition": runtime.partition,
                        "job_id": command["job_id"],
                        "command_id": command["command_id"],
                    },
                )
            held = HeldCommand(
                record.offset,
                record.key,
                record.value or b"",
                command,
                end,
                time.monotonic() + COMMAND_WAIT_S,
            )
            runtime.held_commands.append(held)
            self.release(runtime, now)
            return
        self._apply(runtime, record.offset, record.key, record.value, command, now)

    def release(self, runtime: PartitionRuntime, now: int) -> None:
        """Apply held commands whose job is known now; the head one is dead-lettered once the
        definitions are read past where they ended when it came, or it waited too long."""
        while runtime.held_commands:
            held = runtime.held_commands[0]
            waits = held.forward_to is None and _waits_for_its_job(runtime, held.command)
            if waits and not self._gave_up(runtime.partition, held):
                return
            runtime.held_commands.popleft()
            if held.forward_to is not None:
                self._send_on(runtime, held.key, held.raw, held.forward_to, held.offset)
                self._done(runtime, held.offset)
                continue
            self._apply(runtime, held.offset, held.key, held.raw, held.command, now)

    def _forward(
        self, runtime: PartitionRuntime, record: ReadRecord, command: TimerCommand, owner: int
    ) -> None:
        """A command for a key another partition owns: sent on in order, behind any command
        this partition holds (the checkpoint stays at the first one held)."""
        if runtime.held_commands:
            runtime.held_commands.append(
                HeldCommand(record.offset, record.key, record.value or b"", command, 0, 0.0, owner)
            )
            return
        self._send_on(runtime, record.key, record.value, owner, record.offset)
        self._done(runtime, record.offset)

    def _send_on(
        self,
        runtime: PartitionRuntime,
        key: str | None,
        raw: bytes | None,
        owner: int,
        offset: int,
    ) -> None:
        runtime.forwards.append(Forward(self.commands_topic, key, raw, owner, offset))

    def _gave_up(self, partition: int, held: HeldCommand) -> bool:
        if time.monotonic() >= held.give_up_at:
            return True
        position = self.definitions_read(partition)
        return position is not None and position >= held.definitions_end

    def _apply(
        self,
        runtime: PartitionRuntime,
        offset: int,
        key: str | None,
        raw: bytes | None,
        command: TimerCommand,
        now: int,
    ) -> None:
        self._done(runtime, offset)
        try:
            runtime.pending_emission.extend(runtime.timer.command(command, now))
        except Exception as exc:
            record = Record(self.commands_topic, runtime.partition, offset, key, raw, 0)
            runtime.pending_emission.dead_letters.append(self.gate.rejection(record, exc))

    @staticmethod
    def _done(runtime: PartitionRuntime, offset: int) -> None:
        runtime.command_offset = offset + 1
        runtime.inputs_moved = True
