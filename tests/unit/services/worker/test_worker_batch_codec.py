"""An inline batch's events written a batch at a time (`codec.BatchEvents`) are the bytes the
per-attempt encoder (`AttemptEvents.encode`, the path before it) and the generic Avro encoder
give for the same request, event and unique; an inline attempt's context built at once
(`inline.inline_context`) equals `ExecutionContext.from_request`'s (decision 0162)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import decode, encode
from tickwheel.sdk.worker import ExecutionContext
from tickwheel.services.worker import codec, inline
from tickwheel.services.worker.codec import AttemptEvents, BatchEvents
from tickwheel.services.worker.events import Outcome, execution_event

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INSTANTS = st.integers(min_value=0, max_value=4_102_444_800_000)  # up to 2100
TEXT = st.text(max_size=80)
REQUESTS = st.builds(
    lambda ids, attempt, times, payload: request(
        execution_id=ids[0], job_id=ids[1], job_type=ids[2], tenant_id=ids[3], attempt=attempt,
        scheduled_time=times[0], fire_time=times[1], period_start=times[2],
        period_end=times[3], payload=payload,
    ),
    st.tuples(TEXT, TEXT, TEXT, TEXT),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.tuples(LONGS, st.none() | LONGS, INSTANTS, st.none() | INSTANTS),
    st.sampled_from(["{}", '{"a": 1}']),
)  # fmt: skip
OUTCOMES = st.none() | st.builds(
    lambda error, kind: Outcome.failed(error, kind),
    TEXT,
    st.sampled_from(["retryable", "permanent"]),
)
ENDS = st.tuples(OUTCOMES, INSTANTS, st.integers(min_value=0, max_value=5000))


def unique_of(value: bytes) -> str:
    """The unique an event was written with: its id's last part (none of it is a colon)."""
    return str(decode(value, "ExecutionEvent")[1]["event_id"]).rsplit(":", 1)[1]


def generic(req: dict[str, Any], event_type: str, worker_id: str, **fields: Any) -> bytes:
    return encode("ExecutionEvent", execution_event(req, event_type, worker_id=worker_id, **fields))


@settings(max_examples=200, deadline=None)  # never fail on speed: the machine is shared
@given(
    batch=st.lists(st.tuples(REQUESTS, st.none() | INSTANTS, ENDS), min_size=1, max_size=6),
    worker_id=TEXT,
    event_time=INSTANTS,
)
def test_a_batchs_events_are_the_attempt_encoders_and_the_generic_encoders_bytes(
    batch: list[tuple[dict[str, Any], int | None, tuple[Outcome | None, int, int]]],
    worker_id: str,
    event_time: int,
) -> None:
    requests = [req for req, _deadline, _end in batch]
    deadlines = [deadline for _req, deadline, _end in batch]
    ends = [(outcome, ended_ms / 1000, duration) for _r, _d, (outcome, ended_ms, duration) in batch]
    events = BatchEvents(requests, worker_id)  # type: ignore[arg-type]
    leases = events.leases(event_time, deadlines)  # type: ignore[arg-type]
    outcomes = events.outcomes(ends)
    assert len(leases) == len(outcomes) == len(batch)
    uniques = set()
    for req, deadline, (key, value) in zip(requests, deadlines, leases, strict=True):
        unique = unique_of(value)
        fields = dict(event_time_ms=event_time, unique=unique, lease_deadline_ms=deadline)
        assert key == req["job_id"]
        assert value == AttemptEvents(req, worker_id).encode("leased", **fields)  # type: ignore[arg-type]
        assert value == generic(req, "leased", worker_id, **fields)
        uniques.add(unique)
    for req, (outcome, ended, duration), (key, value) in zip(requests, ends, outcomes, strict=True):
        unique = unique_of(value)
        fields: dict[str, Any] = dict(event_time_ms=int(ended * 1000), unique=unique)
        if outcome is None:
            event_type, fields["details"] = "succeeded", {"duration_ms": duration}
        else:
            event_type = outcome.event_type
            fields.update(error=outcome.error, error_kind=outcome.error_kind,
                          reason=outcome.reason, details=outcome.details)  # fmt: skip
        assert key == req["job_id"]
        assert value == AttemptEvents(req, worker_id).encode(event_type, **fields)  # type: ignore[arg-type]
        assert value == generic(req, event_type, worker_id, **fields)
        uniques.add(unique)
    assert len(uniques) == 2 * len(batch)  # every event its own id


def test_a_layout_it_was_not_taught_writes_the_batch_through_the_generic_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = [request(execution_id=f"e{i}", job_id=f"j{i}") for i in range(3)]
    monkeypatch.setattr(codec, "fast_layout", lambda: False)  # as a new schema version would
    events = BatchEvents(requests, "w")  # type: ignore[arg-type]
    leases = events.leases(1_800_000_000_000, [1_800_000_030_000] * 3)
    outcomes = events.outcomes([(None, 1_800_000_000.001, 0)] * 3)
    for req, (_key, value) in zip(requests, leases, strict=True):
        assert value == generic(req, "leased", "w", event_time_ms=1_800_000_000_000,
                                unique=unique_of(value), lease_deadline_ms=1_800_000_030_000)  # fmt: skip
    for req, (_key, value) in zip(requests, outcomes, strict=True):
        assert value == generic(req, "succeeded", "w", event_time_ms=1_800_000_000_001,
                                unique=unique_of(value), details={"duration_ms": 0})  # fmt: skip


def test_the_sdks_context_has_the_fields_the_inline_context_writes() -> None:
    # A field added to ExecutionContext fails here first: teach `inline_context` (until then
    # every inline attempt takes `from_request`, slower and still right).
    assert inline._CONTEXT_KNOWN


@settings(max_examples=200, deadline=None)
@given(
    req=REQUESTS,
    extra=st.fixed_dictionaries(
        {},
        optional={
            "workflow_id": st.none() | TEXT,
            "step_id": st.none() | TEXT,
            "max_attempts": st.integers(min_value=1, max_value=100),
        },
    ),
    payload=st.dictionaries(TEXT, st.integers(), max_size=2),
)
def test_an_inline_context_equals_the_sdks_own(
    req: dict[str, Any], extra: dict[str, Any], payload: dict[str, Any]
) -> None:
    req = {**req, "scheduled_time": abs(req["scheduled_time"]) % 4_102_444_800_000,
           "fire_time": None if req["fire_time"] is None else abs(req["fire_time"]) % 10**12,
           **extra}  # fmt: skip
    ours = inline.inline_context(req, payload)  # type: ignore[arg-type]
    theirs = ExecutionContext.from_request(req, payload, cancel_event=inline._NEVER_CANCELLED)
    assert ours == theirs
    assert vars(ours) == vars(theirs)  # every attribute, the private heartbeat hook too
    assert ours.heartbeat() == theirs.heartbeat()
