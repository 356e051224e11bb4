"""The fast path's framing (decision 0123) without ClickHouse: a frame is an Avro container
that any Avro reader decodes into the records as published, each followed by where it was
read and the check value; and the dedup token names the records' places and bytes. What
ClickHouse makes of a frame is tested against real chDB in
`tests/integration/test_history_columnar.py`."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import MemoryMessage
from tickwheel.services.history.batch import Batch
from tickwheel.services.history.columnar import (
    CHECK_VALUE,
    dedup_token,
    encoded_kinds,
    read_offset,
)

T0 = 4_076_000_000_000


def consumed(topic: str, partition: int, offset: int, value: bytes) -> MemoryMessage:
    """A consumed message as the fast path reads it, in the in-memory Kafka's own shape."""
    return MemoryMessage(topic, partition, offset, None, value, None, 0)


texts = st.text(max_size=30)
optional_texts = st.none() | texts
events = st.fixed_dictionaries({
    "event_id": texts, "event_time": st.integers(0, 2**50), "event_type": st.sampled_from(
        ["requested", "leased", "succeeded", "failed", "fenced"]),
    "job_id": texts, "job_type": texts, "tenant_id": texts, "execution_id": texts,
    "attempt": st.integers(-(2**31), 2**31 - 1), "scheduled_time": st.integers(-(2**62), 2**62),
    "fire_time": st.none() | st.integers(0, 2**50), "worker_id": optional_texts,
    "lease_deadline": st.none() | st.integers(0, 2**50), "error": optional_texts,
    "error_kind": optional_texts, "reason": optional_texts, "details": optional_texts,
})  # fmt: skip
places = st.tuples(st.sampled_from(["t.events", "other.events"]), st.integers(0, 63),
                   st.integers(0, 2**62))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(events, places), min_size=1, max_size=20))
def test_a_frame_reads_back_as_the_records_with_their_places(
    records: list[tuple[dict[str, Any], tuple[str, int, int]]],
) -> None:
    kind = encoded_kinds()["ExecutionEvent"]
    messages = [consumed(*where, encode("ExecutionEvent", event)) for event, where in records]
    read = [r for r in fastavro.reader(io.BytesIO(kind.frame(messages))) if isinstance(r, dict)]
    assert len(read) == len(records)
    for got, message in zip(read, messages, strict=True):
        extra = {k: got.pop(k) for k in list(got) if k.startswith("tw_")}
        assert got == decode(message.value())[1]
        # The whole value is in the frame: its single-object header is a leading field.
        assert extra.pop("tw_header") == kind.header
        extra["tw_source_offset"] = read_offset(extra["tw_source_offset"])
        assert extra == {
            "tw_source_topic": message.topic(), "tw_source_partition": message.partition(),
            "tw_source_offset": message.offset(), "tw_check": CHECK_VALUE,
        }  # fmt: skip


def test_only_the_current_version_of_each_kind_takes_the_fast_path() -> None:
    kinds = encoded_kinds()
    assert set(kinds) == {"ExecutionEvent", "ExecutionRequest"}
    for schema, kind in kinds.items():
        current = encode(schema, _minimal(schema))
        assert current.startswith(kind.header)
        older = {"ExecutionRequest": 1}.get(schema)
        if older is not None:
            assert not encode(schema, _minimal(schema), version=older).startswith(kind.header)
    tables = {t.table for kind in kinds.values() for t in kind.tables}
    assert tables == {"execution_events", "execution_requests"}


def test_the_token_changes_with_any_record_or_place_and_not_otherwise() -> None:
    kind = encoded_kinds()["ExecutionEvent"]
    value = encode("ExecutionEvent", _minimal("ExecutionEvent"))
    base = kind.frame([consumed("t", 0, 7, value)])
    assert dedup_token("execution_events", base) == dedup_token(
        "execution_events", kind.frame([consumed("t", 0, 7, value)])
    )
    other_place = kind.frame([consumed("t", 0, 8, value)])
    renamed = {**_minimal("ExecutionEvent"), "event_id": "e-2"}
    other_bytes = kind.frame([consumed("t", 0, 7, encode("ExecutionEvent", renamed))])
    tokens = {dedup_token("execution_events", f) for f in (base, other_place, other_bytes)}
    assert len(tokens) == 3
    assert dedup_token("execution_requests", base) not in tokens


def _minimal(schema: str) -> dict[str, Any]:
    if schema == "ExecutionEvent":
        return {
            "event_id": "e-1", "event_time": T0, "event_type": "succeeded", "job_id": "j",
            "job_type": "noop", "tenant_id": "t", "execution_id": "x", "attempt": 1,
            "scheduled_time": T0,
        }  # fmt: skip
    return {
        "execution_id": "x", "job_id": "j", "job_version": 1, "job_type": "noop",
        "tenant_id": "t", "priority": "normal", "attempt": 1, "scheduled_time": T0,
        "fire_time": T0, "period_start": T0, "max_attempts": 3, "trigger": "scheduled",
        "requested_at": T0,
    }  # fmt: skip


def test_a_frame_built_as_read_and_cut_by_a_revocation_is_the_frame_of_what_is_left() -> None:
    kind = encoded_kinds()["ExecutionEvent"]
    value = encode("ExecutionEvent", _minimal("ExecutionEvent"))
    messages = [consumed("t", n % 3, 100 + n, value) for n in range(9)]
    batch = Batch()
    for m in messages:
        batch.note(m.topic(), m.partition(), m.offset())
        batch.add_encoded(kind, m, m.value(), m.topic(), m.partition(), m.offset())
    assert batch.frames["ExecutionEvent"].data() == kind.frame(messages)
    # Partition 1 is revoked: its records leave the frame, and its bytes, the rest stay.
    batch.drop([("t", 1)])
    kept = [m for m in messages if m.partition() != 1]
    assert batch.frames["ExecutionEvent"].messages == kept
    assert batch.frames["ExecutionEvent"].data() == kind.frame(kept)
    batch.drop([("t", 0), ("t", 2)])
    assert "ExecutionEvent" not in batch.frames
