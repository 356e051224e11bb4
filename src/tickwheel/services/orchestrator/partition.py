"""What one orchestrator partition decides, without Kafka I/O: its instances' states, and for
each input read, the fold's events, the new snapshot and the commands, gathered into the
batch the service writes in one transaction (docs/decisions/0059, 0061).

Nothing one input does stops the partition: an input that cannot be read, names no instance
or no known definition, or makes the fold raise is dead-lettered with the reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.workflow import WorkflowState, effects, initial_state
from tickwheel.core.workflow.fold import decide_folded
from tickwheel.core.workflow.wire import input_of_record
from tickwheel.errors import TickwheelError
from tickwheel.services.orchestrator.definitions import DefinitionCatalog
from tickwheel.services.orchestrator.records import (
    Outgoing,
    command_records,
    event_record,
    snapshot_record,
    state_of_snapshot,
    step_key,
)

log = logging.getLogger("tickwheel.orchestrator")


class UnknownDefinition(TickwheelError, LookupError):
    """An input needs a definition version this orchestrator has not read (yet)."""

    def __init__(self, definition_id: str, version: int | None) -> None:
        which = "any version" if version is None else f"version {version}"
        super().__init__(f"no workflow definition {definition_id!r} ({which}) is published")
        self.definition_id, self.version = definition_id, version


@dataclass
class Batch:
    """What one transaction of a partition carries (besides its checkpoint)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    # Each instance's latest state and when: encoded once per batch (`snapshot_records`).
    states: dict[str, tuple[WorkflowState, int]] = field(default_factory=dict)
    outgoing: list[Outgoing] = field(default_factory=list)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    inputs: int = 0

    def __bool__(self) -> bool:
        return bool(self.events or self.states or self.outgoing or self.dead_letters)

    def snapshot_records(self) -> dict[str, dict[str, Any]]:
        return {wid: snapshot_record(state, at) for wid, (state, at) in self.states.items()}


class PartitionOrchestrator:
    def __init__(self, partition: int, partitions: int, catalog: DefinitionCatalog) -> None:
        self.partition = partition
        self.partitions = partitions
        self.catalog = catalog
        # An instance restored from its snapshot stays JSON text until an input comes for it:
        # most open instances sleep or wait, and a restore should not build their states.
        self.instances: dict[str, WorkflowState | str] = {}
        self.batch = Batch()

    def load(self, workflow_id: str, snapshot: dict[str, Any] | None) -> None:
        """During restore: an instance's latest snapshot (None: deleted)."""
        if snapshot is None or snapshot.get("state") is None:
            self.instances.pop(workflow_id, None)
        else:
            self.instances[workflow_id] = snapshot["state"]

    def state(self, workflow_id: str) -> WorkflowState | None:
        """The instance's state (built from its snapshot on first use)."""
        state = self.instances.get(workflow_id)
        if isinstance(state, str):
            state = state_of_snapshot({"state": state})
            self.instances[workflow_id] = state
        return state

    def take(self) -> Batch:
        batch, self.batch = self.batch, Batch()
        return batch

    def receive(self, record: Record, now_ms: int) -> None:
        """Fold one record of workflows.inputs into the batch. Raises `UnknownDefinition`
        (and changes nothing) when it needs a definition not read yet: the caller reads the
        definitions again and tries once more, or `refuse`s the record."""
        self.batch.inputs += 1
        if record.value is None:
            return
        try:
            value = decode(record.value, "WorkflowInput")[1]
        except UndecodableRecord as exc:
            self._dead_letter(record, exc.reason, "undecodable", now_ms)
            return
        try:
            self._fold(value)
        except UnknownDefinition:
            self.batch.inputs -= 1
            raise
        except Exception as exc:  # one input is its own problem, never its partition's
            self._dead_letter(record, str(exc) or repr(exc), "rejected", now_ms)

    def refuse(self, record: Record, reason: str, now_ms: int) -> None:
        """Dead-letter `record` (its definition never came)."""
        self.batch.inputs += 1
        self._dead_letter(record, reason, "rejected", now_ms)

    def _fold(self, value: dict[str, Any]) -> None:
        workflow_id = value["workflow_id"]
        item = input_of_record(value)
        state = self.state(workflow_id)
        if state is None:
            if item.kind != "start":
                raise ValueError(f"no workflow instance {workflow_id!r} (a {item.kind} for it)")
            if not value.get("definition_id"):
                raise ValueError("a start needs definition_id")
            definition = self.catalog.get(value["definition_id"], value["definition_version"])
            if definition is None:
                raise UnknownDefinition(value["definition_id"], value["definition_version"])
            state = initial_state(workflow_id, definition)
        else:
            definition = self.catalog.get(state.definition_id, state.definition_version)
            if definition is None:
                raise UnknownDefinition(state.definition_id, state.definition_version)
        state, events, statuses = decide_folded(state, definition, item)
        tenant = self.catalog.tenant_of(definition)
        key = step_key(workflow_id, self.partitions)
        batch = self.batch
        for event, status in zip(events, statuses, strict=True):
            batch.events.append(
                event_record(state, event, value["input_id"], tenant, status=status)
            )
            for command in effects(event):
                batch.outgoing.extend(
                    command_records(state, definition, command, event, key, tenant)
                )
        self.instances[workflow_id] = state
        batch.states[workflow_id] = (state, item.at_ms)

    def _dead_letter(self, record: Record, reason: str, kind: str, now_ms: int) -> None:
        log.error(
            f"{kind} workflow input sent to the dead-letter topic",
            extra={"action": "record_dead_lettered", "topic": record.topic,
                   "partition": record.partition, "offset": record.offset, "reason": reason},
        )  # fmt: skip
        letter = dead_letter_record(record.topic, record.partition, record.offset, record.key,
                                    record.value, reason, kind, now_ms)  # fmt: skip
        self.batch.dead_letters.append(letter)
