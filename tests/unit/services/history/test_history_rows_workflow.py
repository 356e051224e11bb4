"""The pure mapping of a `WorkflowEvent` record to a `workflow_events` row."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.services.history.rows import Source, UnstorableRecord, workflow_event_row

SOURCE = Source("p.workflows.events", 3, 41, 1_700_000_000_123)


def _v2(**fields: Any) -> dict[str, Any]:
    record = {
        "event_id": "wf:w1:7", "event_time": 1_700_000_000_000, "workflow_id": "w1",
        "definition_id": "orders", "definition_version": 2, "event_type": "approval_approved",
        "step_id": "sign_off", "attempt": 0,
        "data": json.dumps({"round": 1, "note": "ship it", "actor": "ignored@x"}),
        "seq": 7, "actor": "lead@example.com", "tenant_id": "acme", "execution_id": None,
        "error": None, "cause_input_id": "in-9", "status": "running",
    }  # fmt: skip
    return {**record, **fields}


def test_a_v2_event_keeps_every_field_and_its_source() -> None:
    # Through the real codec, so the row is what the sink gets from the topic.
    record = decode(encode("WorkflowEvent", _v2()), expected="WorkflowEvent")[1]
    row = workflow_event_row(record, SOURCE)
    assert row["event_id"] == "wf:w1:7" and row["seq"] == 7
    assert row["event_time"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
    assert (row["workflow_id"], row["definition_id"], row["definition_version"]) == (
        "w1", "orders", 2)  # fmt: skip
    assert (row["step_id"], row["attempt"], row["event_type"]) == (
        "sign_off", 0, "approval_approved")  # fmt: skip
    # The record's own field wins over a same-named key in data.
    assert row["actor"] == "lead@example.com" and row["tenant_id"] == "acme"
    assert row["cause_input_id"] == "in-9" and row["status"] == "running"
    assert json.loads(row["details"])["note"] == "ship it"
    assert (row["source_topic"], row["source_partition"], row["source_offset"]) == (
        "p.workflows.events", 3, 41)  # fmt: skip


def test_a_v1_shaped_event_takes_actor_tenant_execution_and_error_from_data() -> None:
    data = {"actor": "ops", "tenant_id": "t9", "execution_id": "ex-1", "error": "boom"}
    row = workflow_event_row(
        _v2(seq=0, actor=None, tenant_id=None, cause_input_id=None, status=None,
            data=json.dumps(data)),
        SOURCE,
    )  # fmt: skip
    assert (row["actor"], row["tenant_id"], row["execution_id"], row["error"]) == (
        "ops", "t9", "ex-1", "boom")  # fmt: skip
    assert row["seq"] == 0 and row["status"] is None and row["cause_input_id"] is None


def test_absent_or_non_object_data_is_stored_as_an_empty_object() -> None:
    assert workflow_event_row(_v2(data=None), SOURCE)["details"] == "{}"
    row = workflow_event_row(_v2(data="[1, 2]", actor=None, tenant_id=None), SOURCE)
    assert row["actor"] is None and row["tenant_id"] == ""


def test_an_instant_clickhouse_cannot_hold_is_refused_naming_the_field() -> None:
    with pytest.raises(UnstorableRecord, match="event_time"):
        workflow_event_row(_v2(event_time=13_000_000_000_000), SOURCE)


def test_every_row_has_the_same_columns_whatever_the_event() -> None:
    # The store refuses a batch whose rows differ in columns.
    first = workflow_event_row(_v2(), SOURCE)
    other = workflow_event_row(_v2(event_type="step_failed", data=None, error="x"), SOURCE)
    assert set(first) == set(other)
