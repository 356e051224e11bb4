"""The orchestrator's own encoding of its hot records (`services/orchestrator/codec.py`)
writes exactly the bytes of the generic Avro encoder — events, snapshots and checkpoints, timer
commands, with any defaulted field left out or set — refuses what the generic encoder refuses,
and falls back to the generic encoder when a schema is not the layout it was taught
(decision 0131)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import UnencodableRecord, decode, encode
from tickwheel.services.orchestrator import codec
from tickwheel.services.orchestrator.codec import (
    COMMAND_KINDS,
    LAYOUTS,
    encode_record,
    fast_layouts,
)

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=40)
OPTIONAL_TEXT = st.none() | TEXT
# A few instances' identities, so the identity memo is hit as well as missed.
IDENTITIES = st.sampled_from(["wf-1", "wf-2", "ünïcode-wf"]) | TEXT


def test_the_current_schemas_are_the_layouts_the_orchestrator_writes() -> None:
    # A new WorkflowEvent, WorkflowSnapshot or TimerCommand version fails here first: teach
    # codec.py its layout (or the orchestrator silently falls back to the generic encoder).
    assert fast_layouts() == {"WorkflowEvent": True, "WorkflowSnapshot": True,
                              "TimerCommand": True}  # fmt: skip


def _defaulted(record: str) -> list[str]:
    return [name for name, _, default in LAYOUTS[record] if default != "<required>"]


@st.composite
def records(draw: st.DrawFn, record: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A record with every field drawn, then any defaulted ones left out."""
    value = draw(st.fixed_dictionaries(fields))
    for name in draw(st.lists(st.sampled_from(_defaulted(record)), unique=True)):
        del value[name]
    return value


EVENT_FIELDS = {
    "event_id": TEXT, "event_time": LONGS, "workflow_id": IDENTITIES,
    "definition_id": st.sampled_from(["d", "orders"]) | TEXT,
    "definition_version": st.sampled_from([1, 2]) | INTS, "event_type": TEXT,
    "step_id": OPTIONAL_TEXT, "attempt": INTS, "data": OPTIONAL_TEXT, "seq": LONGS,
    "actor": OPTIONAL_TEXT, "tenant_id": OPTIONAL_TEXT, "execution_id": OPTIONAL_TEXT,
    "error": OPTIONAL_TEXT, "cause_input_id": OPTIONAL_TEXT, "status": OPTIONAL_TEXT,
}  # fmt: skip
SNAPSHOT_FIELDS = {
    "workflow_id": IDENTITIES, "definition_id": st.sampled_from(["d", ""]) | TEXT,
    "definition_version": st.sampled_from([0, 1]) | INTS, "status": TEXT, "seq": LONGS,
    "state": OPTIONAL_TEXT, "updated_at": LONGS,
    "input_offsets": st.dictionaries(TEXT, LONGS, max_size=3),
}  # fmt: skip
COMMAND_FIELDS = {
    "command_id": TEXT, "job_id": TEXT, "kind": st.sampled_from(COMMAND_KINDS),
    "requested_at": LONGS, "range_start": st.none() | LONGS, "range_end": st.none() | LONGS,
    "execution_id": OPTIONAL_TEXT, "data": OPTIONAL_TEXT, "workflow_id": OPTIONAL_TEXT,
    "step_id": OPTIONAL_TEXT, "attempt": INTS, "compensation": st.booleans(),
    "job_type": OPTIONAL_TEXT, "payload": OPTIONAL_TEXT, "tenant_id": OPTIONAL_TEXT,
    "max_attempts": INTS, "timer_id": OPTIONAL_TEXT, "fire_at": st.none() | LONGS,
}  # fmt: skip


def _same_as_generic(record: str, value: dict[str, Any]) -> None:
    written = encode_record(record, value)
    assert written == encode(record, value)
    decoded = decode(written, record)[1]
    assert {k: decoded[k] for k in value} == value


@settings(max_examples=400, deadline=None)  # never fail on speed: the machine is shared
@given(value=records("WorkflowEvent", EVENT_FIELDS))
def test_an_event_is_the_generic_encoders_bytes(value: dict[str, Any]) -> None:
    _same_as_generic("WorkflowEvent", value)


@settings(max_examples=300, deadline=None)
@given(value=records("WorkflowSnapshot", SNAPSHOT_FIELDS))
def test_a_snapshot_or_checkpoint_is_the_generic_encoders_bytes(value: dict[str, Any]) -> None:
    _same_as_generic("WorkflowSnapshot", value)


@settings(max_examples=400, deadline=None)
@given(value=records("TimerCommand", COMMAND_FIELDS))
def test_a_timer_command_is_the_generic_encoders_bytes(value: dict[str, Any]) -> None:
    _same_as_generic("TimerCommand", value)


EVENT = {"event_id": "wf:w:1", "event_time": 1, "workflow_id": "w", "definition_id": "d",
         "definition_version": 1, "event_type": "workflow_started"}  # fmt: skip
COMMAND = {"command_id": "c", "job_id": "__wf/w/0", "kind": "run_step", "requested_at": 5,
           "attempt": 1, "compensation": False}  # fmt: skip


@pytest.mark.parametrize(
    ("record", "value"),
    [
        ("WorkflowEvent", {**EVENT, "typo_field": 1}),  # a field the schema does not have
        ("WorkflowEvent", {k: v for k, v in EVENT.items() if k != "event_type"}),  # required
        ("WorkflowEvent", {**EVENT, "seq": 2**63}),  # out of a long's range
        ("WorkflowEvent", {**EVENT, "step_id": 7}),  # not a string
        ("TimerCommand", {**COMMAND, "kind": "explode"}),  # not a symbol
        ("WorkflowSnapshot", {"workflow_id": "w", "definition_id": "d", "definition_version": 1,
                              "status": "running", "seq": 1, "updated_at": 0,
                              "input_offsets": {"t": "x"}}),  # a map of longs
    ],
)  # fmt: skip
def test_what_the_generic_encoder_refuses_is_refused(record: str, value: dict[str, Any]) -> None:
    with pytest.raises(UnencodableRecord):
        encode(record, value)
    with pytest.raises(UnencodableRecord):
        encode_record(record, value)


def test_values_the_fast_path_does_not_take_are_written_as_the_generic_encoder_writes_them() -> (
    None
):
    # A non-bool boolean and a bool as a version go to the generic encoder, whatever it does.
    for record, value in [("TimerCommand", {**COMMAND, "compensation": 1}),
                          ("WorkflowEvent", {**EVENT, "definition_version": True})]:  # fmt: skip
        try:
            expected: bytes | type[UnencodableRecord] = encode(record, value)
        except UnencodableRecord:
            expected = UnencodableRecord
        if expected is UnencodableRecord:
            with pytest.raises(UnencodableRecord):
                encode_record(record, value)
        else:
            assert encode_record(record, value) == expected


def test_other_records_go_through_the_generic_encoder() -> None:
    letter_like = {"alert_id": "a", "event_time": 1, "kind": "k", "severity": "warning",
                   "job_id": None, "tenant_id": None, "message": "m", "details": "{}"}  # fmt: skip
    assert encode_record("Alert", letter_like) == encode("Alert", letter_like)


def test_another_schema_layout_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if a new WorkflowEvent version had a field this module was not taught.
    taught = dict(LAYOUTS)
    taught["WorkflowEvent"] = (*LAYOUTS["WorkflowEvent"], ("new", "long", 0))
    monkeypatch.setattr(codec, "LAYOUTS", taught)
    calls: list[str] = []
    monkeypatch.setitem(codec._WRITERS, "WorkflowEvent", lambda *a: calls.append("e") or b"")
    codec._header.cache_clear()
    try:
        assert fast_layouts()["WorkflowEvent"] is False
        assert fast_layouts()["TimerCommand"] is True
        assert encode_record("WorkflowEvent", EVENT) == encode("WorkflowEvent", EVENT)
        assert calls == []  # it went through the generic encoder
    finally:
        monkeypatch.undo()
        codec._header.cache_clear()
    assert fast_layouts()["WorkflowEvent"] is True
