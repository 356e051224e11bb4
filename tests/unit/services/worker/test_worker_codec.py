"""The worker's own `ExecutionEvent` encoding (`services/worker/codec.py`) writes exactly the
bytes of the generic Avro encoder, for every event type and every optional field set or not,
and follows the schema: the current `ExecutionEvent` is the layout it was written for."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import UnencodableRecord, decode, encode
from tickwheel.services.worker.codec import EVENT_TYPES, AttemptEvents, _long, fast_layout
from tickwheel.services.worker.events import execution_event

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INSTANTS = st.integers(min_value=0, max_value=4_102_444_800_000)  # up to 2100
TEXT = st.text(max_size=80)
OPTIONAL_TEXT = st.none() | TEXT


def test_the_current_execution_event_schema_is_the_layout_the_worker_writes() -> None:
    # A new ExecutionEvent version fails here first: teach codec.py its layout (or the
    # worker silently falls back to the slower generic encoder).
    assert fast_layout()


def generic(req: dict[str, Any], event_type: str, worker_id: str, **fields: Any) -> bytes:
    return encode("ExecutionEvent", execution_event(req, event_type, worker_id=worker_id, **fields))


@settings(max_examples=300, deadline=None)  # never fail on speed: the machine is shared
@given(
    event_type=st.sampled_from(EVENT_TYPES),
    ids=st.tuples(TEXT, TEXT, TEXT, TEXT, TEXT),
    attempt=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    times=st.tuples(LONGS, LONGS, st.none() | LONGS, INSTANTS, st.none() | INSTANTS),
    texts=st.tuples(OPTIONAL_TEXT, OPTIONAL_TEXT, OPTIONAL_TEXT),
    details=st.none()
    | st.dictionaries(TEXT, st.integers() | TEXT, max_size=3)
    | st.builds(lambda n: {"duration_ms": n}, st.integers()),
)
def test_an_attempts_events_are_the_generic_encoders_bytes(
    event_type: str,
    ids: tuple[str, str, str, str, str],
    attempt: int,
    times: tuple[int, int, int | None, int, int | None],
    texts: tuple[str | None, str | None, str | None],
    details: dict[str, Any] | None,
) -> None:
    job_id, job_type, tenant_id, execution_id, worker_id = ids
    scheduled, event_time, fire, unique_n, deadline = times
    req = request(
        execution_id=execution_id,
        job_id=job_id,
        job_type=job_type,
        tenant_id=tenant_id,
        attempt=attempt,
        scheduled_time=scheduled,
        fire_time=fire,
    )
    error, error_kind, reason = texts
    fields = dict(
        event_time_ms=event_time,
        unique=str(unique_n),
        lease_deadline_ms=deadline,
        error=error,
        error_kind=error_kind,
        reason=reason,
        details=details,
    )
    events = AttemptEvents(req, worker_id)
    value = events.encode(event_type, **fields)
    assert value == generic(req, event_type, worker_id, **fields)
    assert decode(value, "ExecutionEvent")[1] == execution_event(
        req, event_type, worker_id=worker_id, **fields
    )


def test_every_long_boundary_encodes_as_avro_does() -> None:
    import io

    import fastavro

    def reference(n: int) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, {"type": "long"}, n)
        return out.getvalue()

    edges = [0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, -8193, 2**62, 2**63 - 1, -(2**63)]
    near_now = [1_800_000_000_000 + step for step in range(0, 100_000, 997)]
    for n in edges + near_now:
        assert _long(n) == reference(n), n


def test_a_long_that_does_not_fit_is_refused_like_the_generic_encoder() -> None:
    for too_big in (2**63, -(2**63) - 1):
        with pytest.raises(OverflowError):
            _long(too_big)
        with pytest.raises(UnencodableRecord):
            generic(request(), "leased", "w", event_time_ms=too_big, unique="u")


def test_a_layout_it_was_not_taught_falls_back_to_the_generic_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tickwheel.services.worker import codec

    monkeypatch.setattr(codec, "fast_layout", lambda: False)  # as a new schema version would
    fields: dict[str, Any] = dict(
        event_time_ms=1_800_000_000_000, unique="u1", details={"duration_ms": 3}
    )
    value = AttemptEvents(request(), "w1").encode("succeeded", **fields)
    assert value == generic(request(), "succeeded", "w1", **fields)
