"""The orchestrator folds every instance through its workflow kind (decision 0212): a second
kind, registered beside the DAG, is folded, snapshotted and read back by the orchestrator's
own partition code, unchanged — what workflows written as code (issue 33) will need."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.placement import step_key
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.workflow import Start, TimerFired, parse_definition
from tickwheel.core.workflow.deciding import Decided
from tickwheel.core.workflow.events import Command, Event, StartTimer
from tickwheel.core.workflow.inputs import Input
from tickwheel.core.workflow.kinds import (
    DAG,
    KINDS,
    kind_named,
    kind_of,
    kind_of_state,
    state_from_snapshot,
    state_to_snapshot,
)
from tickwheel.core.workflow.wire import input_record
from tickwheel.services.orchestrator.partition import PartitionOrchestrator
from tickwheel.services.orchestrator.records import state_of_snapshot


@dataclass(frozen=True)
class Nap:
    """A definition of the test kind: sleep once, then succeed."""

    definition_id: str
    version: int
    nap_ms: int


@dataclass(frozen=True)
class NapState:
    workflow_id: str
    definition_id: str
    definition_version: int
    status: str = "new"
    seq: int = 0


class NapKind:
    name = "nap"

    def owns(self, definition: object) -> bool:
        return isinstance(definition, Nap)

    def owns_state(self, state: object) -> bool:
        return isinstance(state, NapState)

    def initial(self, workflow_id: str, definition: Nap) -> NapState:
        return NapState(workflow_id, definition.definition_id, definition.version)

    def decide(self, state: NapState, definition: Nap, item: Input) -> Decided:
        seq = state.seq + 1
        if isinstance(item, Start):
            event = Event(
                seq,
                "sleep_started",
                item.at_ms,
                "nap",
                data={"fire_at_ms": item.at_ms + definition.nap_ms},
            )
            return Decided(replace(state, status="running", seq=seq), [event], ["running"])
        assert isinstance(item, TimerFired)
        event = Event(seq, "workflow_succeeded", item.at_ms)
        return Decided(replace(state, status="succeeded", seq=seq), [event], ["succeeded"])

    def effects(self, event: Event) -> list[Command]:
        if event.type == "sleep_started":
            return [StartTimer("nap", int(event.data["fire_at_ms"]))]
        return []

    def max_attempts(self, definition: Nap, step: str, compensation: bool) -> int:
        return 1

    def to_json(self, state: NapState) -> dict[str, Any]:
        return {
            "workflow_id": state.workflow_id,
            "definition_id": state.definition_id,
            "definition_version": state.definition_version,
            "status": state.status,
            "seq": state.seq,
        }

    def from_json(self, data: dict[str, Any]) -> NapState:
        return NapState(
            data["workflow_id"],
            data["definition_id"],
            int(data["definition_version"]),
            data["status"],
            int(data["seq"]),
        )


class Catalogue:
    """What the orchestrator asks of its definition catalogue, holding one definition."""

    def __init__(self, definition: Nap) -> None:
        self.definition = definition

    def get(self, definition_id: str, version: int | None) -> Nap | None:
        return self.definition if definition_id == self.definition.definition_id else None

    def tenant_of(self, definition: object) -> str | None:
        return None


def _record(workflow_id: str, item: Input, offset: int, **start: Any) -> Record:
    value = encode("WorkflowInput", input_record(workflow_id, item, f"in-{offset}", **start))
    return Record("workflows.inputs", 0, offset, workflow_id, value, 0)


def test_a_second_kind_is_folded_snapshotted_and_read_back_by_the_orchestrator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(KINDS, "nap", NapKind())
    nap = Nap("napper", 1, 60_000)
    orchestrator = PartitionOrchestrator(0, 6, Catalogue(nap))  # type: ignore[arg-type]
    start = {"definition_id": "napper", "definition_version": 1}
    orchestrator.receive(_record("n-1", Start(1_000, {"x": 1}), 0, **start), 1_000)
    batch = orchestrator.take()
    assert [(e["event_type"], e["status"]) for e in batch.events] == [("sleep_started", "running")]
    [command] = [o for o in batch.outgoing if o.topic == "timers.commands"]
    assert command.key == step_key("n-1", 6)
    assert command.value["kind"] == "start_timer" and command.value["fire_at"] == 61_000
    snapshot = batch.snapshot_records()["n-1"]["state"]
    assert json.loads(snapshot)["kind"] == "nap"
    assert state_of_snapshot(snapshot) == NapState("n-1", "napper", 1, "running", 1)

    # The timer fires: the kind decides from the state the orchestrator holds (or restored).
    orchestrator.receive(_record("n-1", TimerFired(61_000, "nap"), 1), 61_000)
    assert [e["event_type"] for e in orchestrator.take().events] == ["workflow_succeeded"]


def test_the_dag_kind_is_the_default_of_snapshots_that_name_none() -> None:
    document = {"definitionId": "d", "version": 1, "steps": [{"id": "a", "type": "noop"}]}
    definition = parse_definition(document)
    assert kind_of(definition) is DAG
    state = DAG.initial("w", definition)
    assert kind_of_state(state) is DAG
    data = state_to_snapshot(state)
    assert "kind" not in data  # as every snapshot written before kinds
    assert state_from_snapshot(data) == state
    assert kind_named(None) is DAG
    with pytest.raises(ValueError, match="workflow kind 'python' is unknown; accepted: dag"):
        kind_named("python")
