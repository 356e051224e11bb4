"""The API's workflow memory (decision 0140), in memory: records are kept as they arrived and
decoded when first read; a tombstone removes an instance; what cannot be decoded is skipped,
as the SDK's topic reads skip it."""

from __future__ import annotations

import json
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.services.api.workflow_view import WorkflowMemory


def event(seq: int, kind: str, data: Any = None) -> bytes:
    return encode("WorkflowEvent", {
        "event_id": f"wf:w:{seq}", "event_time": seq, "workflow_id": "w", "definition_id": "d",
        "definition_version": 1, "event_type": kind, "seq": seq,
        "data": None if data is None else json.dumps(data),
    })  # fmt: skip


def snapshot(seq: int, status: str) -> bytes:
    return encode("WorkflowSnapshot", {
        "workflow_id": "w", "definition_id": "d", "definition_version": 1, "status": status,
        "seq": seq, "state": "{}", "updated_at": seq, "input_offsets": {},
    })  # fmt: skip


def test_events_are_decoded_once_in_topic_order_and_garbage_is_skipped() -> None:
    memory = WorkflowMemory()
    memory.event("w", 0, event(1, "workflow_started"))
    memory.event("w", 0, b"not avro")
    memory.event("other", 0, event(1, "workflow_started"))
    first = memory.events_of("w")
    assert [e["event_type"] for e in first] == ["workflow_started"]
    memory.event("w", 0, event(2, "step_started", {"step": "probe"}))
    second = memory.events_of("w")
    assert [e["seq"] for e in second] == [1, 2] and second[1]["data"] == {"step": "probe"}
    assert second[0] is first[0]  # decoded when first read, not again
    assert memory.events_of("nobody") == []


def test_the_latest_snapshot_answers_and_a_tombstone_removes_it() -> None:
    memory = WorkflowMemory()
    memory.snapshot("w", 3, snapshot(1, "running"))
    memory.snapshot("__partition__/3", 3, b"the orchestrator's own")
    assert memory.snapshot_of(3, "w")["status"] == "running"  # type: ignore[index]
    memory.snapshot("w", 3, snapshot(2, "succeeded"))
    assert memory.snapshots_in([3]) == {"w": memory.snapshot_of(3, "w")}
    assert memory.snapshot_of(3, "w")["status"] == "succeeded"  # type: ignore[index]
    memory.snapshot("w", 3, b"garbage")
    assert memory.snapshot_of(3, "w") is None and memory.snapshots_in([3]) == {}
    memory.snapshot("w", 3, None)
    assert memory.snapshots_in([0, 3]) == {}
