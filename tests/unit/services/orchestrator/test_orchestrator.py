"""The orchestrator's pure parts: snapshots round-trip every state the golden histories
reach, a partition folds records exactly as the core folds inputs (and dead-letters what it
cannot fold, going on), step keys land on the workflow's own partition, approval tokens are
signed, expiring and rotatable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import step_key
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.workflow import initial_state, input_from_json, parse_definition, step
from tickwheel.core.workflow.approval import ApprovalClaim, sign_approval, verify_approval
from tickwheel.core.workflow.inputs import ChildEnded, StartChild
from tickwheel.core.workflow.snapshot import state_from_json, state_to_json
from tickwheel.core.workflow.wire import input_of_record, input_record
from tickwheel.errors import InvalidInput
from tickwheel.services.orchestrator.definitions import DefinitionCatalog
from tickwheel.services.orchestrator.partition import PartitionOrchestrator, UnknownDefinition
from tickwheel.services.orchestrator.records import state_of_snapshot

GOLDEN = Path(__file__).resolve().parents[2] / "core" / "workflow" / "workflow_golden"
FIXTURES = sorted(GOLDEN.glob("*.json"))


def _fixture(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _catalog(*documents: dict[str, Any]) -> DefinitionCatalog:
    catalog = DefinitionCatalog("127.0.0.1:1")  # never connects: definitions are added here
    for document in documents:
        catalog.add({"definition_id": document["definitionId"], "version": document["version"],
                     "body": json.dumps(document), "published_at": 0, "published_by": None})  # fmt: skip
    return catalog


def _records(workflow_id: str, inputs: list[dict[str, Any]], definition: dict[str, Any]
             ) -> list[Record]:  # fmt: skip
    records = []
    for offset, raw in enumerate(inputs):
        item = input_from_json(raw)
        start = {"definition_id": definition["definitionId"],
                 "definition_version": definition["version"]} if item.kind == "start" else {}  # fmt: skip
        value = encode("WorkflowInput", input_record(workflow_id, item, f"in-{offset}", **start))
        records.append(Record("workflows.inputs", 0, offset, workflow_id, value, 0))
    return records


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_snapshot_round_trips_every_state_a_golden_history_passes_through(path: Path) -> None:
    fixture = _fixture(path)
    definition = parse_definition(fixture["definition"])
    state = initial_state(fixture["workflow_id"], definition)
    for raw in fixture["inputs"]:
        state, _events, _commands = step(state, definition, input_from_json(raw))
        wire = json.loads(json.dumps(state_to_json(state)))
        assert state_from_json(wire) == state


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_partition_folds_records_as_the_core_folds_inputs(path: Path) -> None:
    fixture = _fixture(path)
    definition = parse_definition(fixture["definition"])
    # Before its start an instance does not exist: what comes first is dead-lettered (below).
    kinds = [raw["kind"] for raw in fixture["inputs"]]
    inputs = fixture["inputs"][kinds.index("start") :]
    orchestrator = PartitionOrchestrator(0, 6, _catalog(fixture["definition"]))
    for record in _records(fixture["workflow_id"], inputs, fixture["definition"]):
        orchestrator.receive(record, 0)
    batch = orchestrator.take()
    state = initial_state(fixture["workflow_id"], definition)
    expected = []
    for raw in inputs:
        state, events, _ = step(state, definition, input_from_json(raw))
        expected.extend((e.seq, e.type, e.step) for e in events)
    got = [(e["seq"], e["event_type"], e["step_id"]) for e in batch.events]
    assert got == expected and batch.dead_letters == []
    assert {e["event_id"] for e in batch.events} == {f"wf:{fixture['workflow_id']}:{s}"
                                                     for s, _, _ in expected}  # fmt: skip
    assert state_of_snapshot(batch.snapshot_records()[fixture["workflow_id"]]["state"]) == state
    keys = {out.key for out in batch.outgoing if out.topic == "timers.commands"}
    assert keys <= {step_key(fixture["workflow_id"], 6)}


def test_what_a_partition_cannot_fold_is_dead_lettered_and_the_next_input_still_applies() -> None:
    fixture = _fixture(FIXTURES[0])
    orchestrator = PartitionOrchestrator(0, 6, _catalog(fixture["definition"]))
    good = _records("wf-ok", fixture["inputs"][:1], fixture["definition"])[0]
    orphan = _records("wf-nobody", [{"kind": "cancel", "at_ms": 1, "actor": "ops"}],
                      fixture["definition"])[0]  # fmt: skip
    garbage = Record("workflows.inputs", 0, 7, "wf-x", b"not avro", 0)
    for record in (garbage, orphan, good):
        orchestrator.receive(record, 5)
    batch = orchestrator.take()
    reasons = [d["reason"] for d in batch.dead_letters]
    assert reasons[0].startswith("undecodable") and "no workflow instance 'wf-nobody'" in reasons[1]
    assert [e["event_type"] for e in batch.events][:1] == ["workflow_started"]
    assert batch.inputs == 3


def test_a_start_for_a_definition_not_read_yet_raises_and_can_be_refused() -> None:
    orchestrator = PartitionOrchestrator(0, 6, _catalog())
    fixture = _fixture(FIXTURES[0])
    [start] = _records("wf-1", fixture["inputs"][:1], fixture["definition"])
    with pytest.raises(UnknownDefinition):
        orchestrator.receive(start, 0)
    assert orchestrator.batch.inputs == 0 and not orchestrator.batch
    orchestrator.refuse(start, "no workflow definition 'golden'", 0)
    assert len(orchestrator.take().dead_letters) == 1


def test_a_childs_start_that_is_refused_fails_its_parents_wait_at_once() -> None:
    """Decision 0218: a child whose definition never came (a typo in `ctx.child("...")`)
    is dead-lettered, and its parent is told, rather than left waiting for nobody."""
    orchestrator = PartitionOrchestrator(0, 6, _catalog())
    item = StartChild(7, "parent-1", 3, {"n": 1}, run=2)
    value = encode(
        "WorkflowInput", input_record("parent-1:typo:1", item, "in-0", definition_id="typo")
    )
    start = Record("workflows.inputs", 0, 0, "parent-1:typo:1", value, 0)
    with pytest.raises(UnknownDefinition):
        orchestrator.receive(start, 9)
    orchestrator.refuse(start, "no workflow definition 'typo'", 9)
    batch = orchestrator.take()
    assert len(batch.dead_letters) == 1
    [told] = batch.outgoing
    assert (told.topic, told.key, told.record) == ("workflows.inputs", "parent-1", "WorkflowInput")
    ended = input_of_record(told.value)  # type: ignore[arg-type]
    assert isinstance(ended, ChildEnded)
    assert (ended.child_id, ended.position, ended.run, ended.status) == (
        "parent-1:typo:1",
        3,
        2,
        "failed",
    )
    assert "no workflow definition 'typo'" in (ended.error or "")


def test_a_step_key_is_reserved_and_lands_on_the_workflows_own_partition() -> None:
    for i in range(300):
        workflow_id = f"order-{i}"
        key = step_key(workflow_id, 6)
        assert key.startswith("__wf/") and partition_for(key, 6) == partition_for(workflow_id, 6)
        assert step_key(workflow_id, 6) == key  # deterministic


KEYS = {"old": b"s3cret-old", "new": b"s3cret-new"}
CLAIM = ApprovalClaim("wf-1", "approve", 2, expires_at_ms=10_000)


def test_an_approval_token_names_its_round_and_verifies_with_rotated_keys() -> None:
    token = sign_approval(CLAIM, "old", KEYS["old"])
    assert verify_approval(token, KEYS, now_ms=9_999) == CLAIM
    assert verify_approval(sign_approval(CLAIM, "new", KEYS["new"]), KEYS, 0) == CLAIM


@pytest.mark.parametrize(
    ("token_of", "keys", "now", "says"),
    [
        (lambda t: t, KEYS, 10_000, "expired"),
        (lambda t: t, {"new": KEYS["new"]}, 0, "no longer"),
        (lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1], KEYS, 0, "does not match"),
        (lambda t: t.replace("v1.", "v9.", 1), KEYS, 0, "not an approval token"),
    ],
    ids=["expired", "retired-key", "altered", "not-a-token"],
)
def test_a_token_that_is_not_good_is_refused_saying_why(
    token_of: Any, keys: dict[str, bytes], now: int, says: str
) -> None:
    token = token_of(sign_approval(CLAIM, "old", KEYS["old"]))
    with pytest.raises(InvalidInput, match=says):
        verify_approval(token, keys, now)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_an_heir_restored_from_the_snapshots_mid_history_decides_what_the_first_would(
    path: Path,
) -> None:
    fixture = _fixture(path)
    kinds = [raw["kind"] for raw in fixture["inputs"]]
    records = _records(fixture["workflow_id"], fixture["inputs"][kinds.index("start"):],
                       fixture["definition"])  # fmt: skip
    half = len(records) // 2
    catalog = _catalog(fixture["definition"])
    first = PartitionOrchestrator(0, 6, catalog)
    for record in records:
        first.receive(record, 0)
    straight = first.take().events[-1]["seq"]
    before = PartitionOrchestrator(0, 6, catalog)
    for record in records[:half]:
        before.receive(record, 0)
    heir = PartitionOrchestrator(0, 6, catalog)
    for workflow_id, snapshot in before.take().snapshot_records().items():
        heir.load(workflow_id, snapshot)
    for record in records[half:]:
        heir.receive(record, 0)
    after = heir.take()
    assert after.events[-1]["seq"] == straight
    assert heir.state(fixture["workflow_id"]) == first.state(fixture["workflow_id"])


def test_a_reassigned_approval_opens_a_new_round_and_the_old_rounds_links_are_fenced() -> None:
    from tickwheel.core.workflow import Approve, Reassign, Start

    definition = parse_definition({"definitionId": "r", "version": 1, "steps": [
        {"id": "ask", "kind": "approval", "timeout": "1h", "assignees": ["ann@example.com"]}]})  # fmt: skip
    state = initial_state("wf-r", definition)
    state, _, _ = step(state, definition, Start(0, None))
    assert state.steps["ask"].round == 1 and "approval:ask:1" in state.timers
    state, events, _ = step(state, definition, Reassign(10, "ask", "lead", ("bob@example.com",)))
    assert [e.type for e in events] == ["approval_reassigned", "approval_requested"]
    assert events[0].actor == "lead" and events[1].data["assignees"] == ["bob@example.com"]
    assert state.steps["ask"].round == 2
    assert state.timers == {"approval:ask:2"}  # the old round's timeout went with it
    state, events, _ = step(state, definition, Approve(20, "ask", 1, "ann@example.com"))
    assert [(e.type, e.data.get("reason")) for e in events] == [("approval_fenced", "stale_round")]
    state, events, _ = step(state, definition, Approve(30, "ask", 2, "bob@example.com"))
    assert state.status == "succeeded"
    state, events, _ = step(state, definition, Reassign(40, "ask", "lead", ("eve@example.com",)))
    assert [e.type for e in events] == ["reassign_ignored"]
