"""What one orchestrator partition decides, without Kafka I/O: its instances' states, and for
each input read, the fold's events, the new snapshot and the commands, gathered into the
batch the service writes in one transaction (docs/decisions/0059, 0061).

Nothing one input does stops the partition: an input that cannot be read, names no instance
or no known definition, or makes the fold raise is dead-lettered with the reason.

A finished instance stays in memory (a late outcome or an operator's repair still folds into
it) until `retention` has passed since the last input it took; then `prune_due` drops it and
its snapshot is tombstoned in the partition's next transaction (decision 0095). Its id is
remembered for one more retention, so a late input for it is dead-lettered saying it was
pruned, never starts it afresh.

An input read on a partition that does not own its workflow (a producer still placing keys by
the partition count before a resize, or an input written before it: decision 0211) is not
folded here: `forward` puts it, unchanged, in the batch for its owner partition, so it leaves
in the transaction that moves this partition's checkpoint past it (exactly once).
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from dataclasses import dataclass, field

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.dead_letters import dead_letter_of
from tickwheel.adapters.kafka.placement import Forward, step_key
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.workflow import TERMINAL
from tickwheel.core.workflow.events import child_start_refused
from tickwheel.core.workflow.inputs import StartChild
from tickwheel.core.workflow.kinds import InstanceState, kind_of
from tickwheel.core.workflow.wire import input_of_record
from tickwheel.durations import format_duration_ms
from tickwheel.errors import TickwheelError
from tickwheel.records import DeadLetter, WorkflowEvent, WorkflowInput, WorkflowSnapshot
from tickwheel.services.orchestrator.definitions import DefinitionCatalog
from tickwheel.services.orchestrator.records import (
    Outgoing,
    command_records,
    event_record,
    input_outgoing,
    snapshot_record,
    state_of_snapshot,
)

log = logging.getLogger("tickwheel.orchestrator")


class UnknownDefinition(TickwheelError, LookupError):
    """An input needs a definition version this orchestrator has not read (yet)."""

    def __init__(self, definition_id: str, version: int | None) -> None:
        which = "any version" if version is None else f"version {version}"
        super().__init__(f"no workflow definition {definition_id!r} ({which}) is published")
        self.definition_id, self.version = definition_id, version


class InstancePruned(TickwheelError, LookupError):
    """An input came for an instance that finished and was pruned after the retention."""

    def __init__(self, workflow_id: str, kind: str, retention_ms: int) -> None:
        super().__init__(
            f"workflow instance {workflow_id!r} finished and was pruned after the retention "
            f"of {format_duration_ms(retention_ms)}; a {kind} for it is not applied (its "
            "history stays on workflows.events and in ClickHouse)"
        )
        self.workflow_id, self.kind = workflow_id, kind


# Events that change a step's status: what the metrics count as step transitions.
STEP_TRANSITIONS = frozenset(
    {
        "step_scheduled",
        "sleep_started",
        "approval_requested",
        "step_succeeded",
        "step_failed",
        "step_skipped",
        "step_cancelling",
        "step_cancelled",
        "step_output_rejected",
    }
)


@dataclass
class Batch:
    """What one transaction of a partition carries (besides its checkpoint)."""

    events: list[WorkflowEvent] = field(default_factory=list)
    # Each instance's latest state and when: encoded once per batch (`snapshot_records`).
    states: dict[str, tuple[InstanceState, int]] = field(default_factory=dict)
    outgoing: list[Outgoing] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # instances whose snapshot is tombstoned
    forwarded: list[Forward] = field(default_factory=list)  # in the order they were read
    inputs: int = 0

    def __bool__(self) -> bool:
        return bool(
            self.events
            or self.states
            or self.outgoing
            or self.dead_letters
            or self.pruned
            or self.forwarded
        )

    def step_transitions(self) -> int:
        return sum(1 for event in self.events if event["event_type"] in STEP_TRANSITIONS)

    def snapshot_records(self) -> dict[str, WorkflowSnapshot]:
        return {wid: snapshot_record(state, at) for wid, (state, at) in self.states.items()}


class PartitionOrchestrator:
    def __init__(
        self,
        partition: int,
        partitions: int,
        catalog: DefinitionCatalog,
        retention_ms: int = 7 * 86_400_000,
    ) -> None:
        self.partition = partition
        self.partitions = partitions
        self.catalog = catalog
        self.retention_ms = retention_ms
        # An instance restored from its snapshot stays JSON text until an input comes for it:
        # most open instances sleep or wait, and a restore should not build their states.
        self.instances: dict[str, InstanceState | str] = {}
        # Finished instances still held: when each took its last input (ms, its `at`), and
        # the same as a heap of (at, id) in prune order (stale entries are skipped).
        self.finished: dict[str, int] = {}
        self._prune_order: list[tuple[int, str]] = []
        # Pruned ids, remembered for one more retention: when each was pruned, in that order.
        self.pruned: dict[str, int] = {}
        self._forget_order: deque[tuple[int, str]] = deque()
        self.batch = Batch()

    @property
    def open_instances(self) -> int:
        return len(self.instances) - len(self.finished)

    def load(self, workflow_id: str, snapshot: WorkflowSnapshot | None, now_ms: int = 0) -> None:
        """During restore: an instance's latest snapshot (None: its tombstone, it was pruned)."""
        state_text = None if snapshot is None else snapshot["state"]
        if snapshot is None or state_text is None:
            self.instances.pop(workflow_id, None)
            self.finished.pop(workflow_id, None)
            if snapshot is None:
                self._remember_pruned(workflow_id, now_ms)
            return
        self.instances[workflow_id] = state_text
        self.pruned.pop(workflow_id, None)
        self._track(workflow_id, snapshot["status"], int(snapshot["updated_at"]))

    def _track(self, workflow_id: str, status: str, at_ms: int) -> None:
        if status in TERMINAL:
            if self.finished.get(workflow_id) != at_ms:
                self.finished[workflow_id] = at_ms
                heapq.heappush(self._prune_order, (at_ms, workflow_id))
        else:
            self.finished.pop(workflow_id, None)

    def _remember_pruned(self, workflow_id: str, now_ms: int) -> None:
        self.pruned[workflow_id] = now_ms
        self._forget_order.append((now_ms, workflow_id))

    def prune_due(self, now_ms: int) -> int:
        """Drop the instances finished for `retention` by `now_ms`, their snapshots to be
        tombstoned with this batch; forget ids pruned a retention ago. Returns how many."""
        order, pruned = self._prune_order, 0
        while order and order[0][0] + self.retention_ms <= now_ms:
            at_ms, workflow_id = heapq.heappop(order)
            if self.finished.get(workflow_id) != at_ms:
                continue  # it took another input since (or was reopened): a later entry
            del self.finished[workflow_id]
            self.instances.pop(workflow_id, None)
            self.batch.states.pop(workflow_id, None)
            self.batch.pruned.append(workflow_id)
            self._remember_pruned(workflow_id, now_ms)
            pruned += 1
        forget = self._forget_order
        while forget and forget[0][0] + self.retention_ms <= now_ms:
            at_ms, workflow_id = forget.popleft()
            if self.pruned.get(workflow_id) == at_ms:
                del self.pruned[workflow_id]
        return pruned

    def state(self, workflow_id: str) -> InstanceState | None:
        """The instance's state (built from its snapshot on first use)."""
        state = self.instances.get(workflow_id)
        if isinstance(state, str):
            state = state_of_snapshot(state)
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
            value = decode_as(WorkflowInput, record.value)
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
            self._tell_parent(record, str(exc) or repr(exc), now_ms)

    def forward(self, record: Record, owner: int) -> None:
        """Pass `record` on to partition `owner`, which owns its key: not folded here."""
        assert record.key is not None, "a record without a key has no owner partition"
        self.batch.inputs += 1
        self.batch.forwarded.append(
            Forward(
                record.topic, record.key, record.value, owner, record.offset, tuple(record.headers)
            )
        )

    def refuse(self, record: Record, reason: str, now_ms: int) -> None:
        """Dead-letter `record` (its definition never came)."""
        self.batch.inputs += 1
        self._dead_letter(record, reason, "rejected", now_ms)
        self._tell_parent(record, reason, now_ms)

    def _fold(self, value: WorkflowInput) -> None:
        workflow_id = value["workflow_id"]
        item = input_of_record(value)
        state = self.state(workflow_id)
        if state is None and workflow_id in self.pruned:
            raise InstancePruned(workflow_id, item.kind, self.retention_ms)
        if state is None:
            if item.kind not in ("start", "start_child"):
                raise ValueError(f"no workflow instance {workflow_id!r} (a {item.kind} for it)")
            definition_id = value["definition_id"]
            if not definition_id:
                raise ValueError("a start needs definition_id")
            definition = self.catalog.get(definition_id, value["definition_version"])
            if definition is None:
                raise UnknownDefinition(definition_id, value["definition_version"])
            kind = kind_of(definition)
            state = kind.initial(workflow_id, definition)
        else:
            definition = self.catalog.get(state.definition_id, state.definition_version)
            if definition is None:
                raise UnknownDefinition(state.definition_id, state.definition_version)
            kind = kind_of(definition)
        state, events, statuses = kind.decide(state, definition, item)
        tenant = self.catalog.tenant_of(definition)
        key = step_key(workflow_id, self.partitions)
        batch = self.batch
        for event, status in zip(events, statuses, strict=True):
            batch.events.append(
                event_record(state, event, value["input_id"], tenant, status=status)
            )
            for command in kind.effects(event):
                batch.outgoing.extend(
                    command_records(state, definition, command, event, key, tenant)
                )
        self.instances[workflow_id] = state
        batch.states[workflow_id] = (state, item.at_ms)
        self._track(workflow_id, state.status, item.at_ms)

    def _tell_parent(self, record: Record, reason: str, now_ms: int) -> None:
        """A child's start that cannot be folded (its definition never came, its id names a
        pruned instance, ...) fails the parent's wait at once, rather than leave the parent
        waiting for a child that will never run (decision 0218)."""
        try:
            value = decode_as(WorkflowInput, record.value or b"")
            item = input_of_record(value)
        except (UndecodableRecord, ValueError):
            return
        if not isinstance(item, StartChild):
            return
        error = f"the child {value['workflow_id']} could not be started: {reason}"
        told = child_start_refused(value["workflow_id"], item, now_ms, "refused", error)
        self.batch.outgoing.append(input_outgoing(told))

    def _dead_letter(self, record: Record, reason: str, kind: str, now_ms: int) -> None:
        log.error(
            f"{kind} workflow input sent to the dead-letter topic",
            extra={
                "action": "record_dead_lettered",
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "reason": reason,
            },
        )
        letter = dead_letter_of(record, reason, kind, now_ms)
        self.batch.dead_letters.append(letter)
