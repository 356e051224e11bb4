"""The timer's `TimerState` writer (`services/timer/codec.py`: the generated codec and the
timer's pending requests) writes exactly the bytes of the generic path
(`records.encode_state`) - states with any pending entries (a request cached, not cached,
already bytes, none) -, takes the same cached request bytes out of the writer's cache, refuses
what the generic encoder refuses, and falls back to the generic path when the schemas are not
the version the codec was generated for. The generated codecs themselves are held to fastavro
in `tests/unit/adapters/avro/test_fast_codecs.py`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import UnencodableRecord, encode
from tickwheel.adapters.avro.fast import timer_state
from tickwheel.adapters.avro.fast.execution_request import EXECUTION_TRIGGER as TRIGGERS
from tickwheel.adapters.avro.fast.execution_request import PRIORITY as PRIORITIES
from tickwheel.adapters.avro.fast.execution_request import encode as encode_request
from tickwheel.adapters.avro.fast.timer_state import TIMER_KIND as TIMER_KINDS
from tickwheel.services.timer.codec import encode_timer_state
from tickwheel.services.timer.records import decode_state, encode_state, request_key

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=40)
OPTIONAL_TEXT = st.none() | TEXT
DEFAULTED = (
    "period_end",
    "payload",
    "late",
    "lease_seconds",
    "heartbeat_seconds",
    "max_run_seconds",
    "queue",
    "workflow_id",
    "step_id",
)


REQUESTS = st.fixed_dictionaries(
    {
        "execution_id": TEXT,
        "job_id": TEXT,
        "job_version": LONGS,
        "job_type": TEXT,
        "tenant_id": TEXT,
        "priority": st.sampled_from(PRIORITIES),
        "attempt": INTS,
        "scheduled_time": LONGS,
        "fire_time": LONGS,
        "period_start": LONGS,
        "period_end": st.none() | LONGS,
        "payload": TEXT,
        "max_attempts": INTS,
        "trigger": st.sampled_from(TRIGGERS),
        "late": st.booleans(),
        "requested_at": LONGS,
        "lease_seconds": INTS,
        "heartbeat_seconds": INTS,
        "max_run_seconds": st.none() | INTS,
        "queue": OPTIONAL_TEXT,
        "workflow_id": OPTIONAL_TEXT,
        "step_id": OPTIONAL_TEXT,
    }
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request as the core builds one: any defaulted field may be left out."""
    request = draw(REQUESTS)
    for name in draw(st.lists(st.sampled_from(DEFAULTED), unique=True)):
        del request[name]
    return request


@st.composite
def pending_entries(draw: st.DrawFn) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "timer_id": draw(TEXT),
        "kind": draw(st.sampled_from(TIMER_KINDS)),
        "fire_at": draw(LONGS),
        "execution_id": draw(OPTIONAL_TEXT),
        "attempt": draw(INTS),
        "data": draw(OPTIONAL_TEXT),
    }
    request = draw(st.sampled_from(["dict", "bytes", "none", "absent"]))
    if request == "dict":
        entry["request"] = draw(requests())
    elif request == "bytes":
        entry["request"] = encode_request(draw(requests()))
    elif request == "none":
        entry["request"] = None
    for name in draw(st.lists(st.sampled_from(["execution_id", "attempt", "data"]), unique=True)):
        del entry[name]
    return entry


STATES = st.fixed_dictionaries(
    {
        "job_id": TEXT,
        "job_version": LONGS,
        "updated_at": LONGS,
        "pending": st.lists(pending_entries(), max_size=4),
    },
    optional={
        "last_scheduled_time": st.none() | LONGS,
        "last_fire_time": st.none() | LONGS,
        "next_scheduled_time": st.none() | LONGS,
        "seq": LONGS,
        "input_offsets": st.dictionaries(TEXT, LONGS, max_size=3),
    },
)


@settings(max_examples=300, deadline=None)
@given(state=STATES, seq=LONGS, cached=st.lists(st.booleans(), min_size=4, max_size=4))
def test_a_state_is_the_generic_encoders_bytes_and_takes_the_same_cached_requests(
    state: dict[str, Any], seq: int, cached: list[bool]
) -> None:
    # The writer's cache: some of the state's dict requests were encoded for their topic.
    encoded: dict[Any, bytes] = {("someone-else", 1): b"other"}
    for entry, keep in zip(state["pending"], cached, strict=False):
        request = entry.get("request")
        if keep and isinstance(request, dict):
            encoded[request_key(request)] = encode("ExecutionRequest", request)
    reference_cache, original = dict(encoded), dict(encoded)
    value = encode_timer_state(state, encoded, seq)
    assert value == encode_state(state, reference_cache, seq)
    assert encoded == reference_cache  # the same entries taken out, the others left
    assert decode_state(value)["seq"] == seq
    # Again from the same cache: the memos of repeated fields hit.
    assert encode_timer_state(state, original, seq) == value


SAMPLE = {
    "execution_id": "e-1",
    "job_id": "j",
    "job_version": 2,
    "job_type": "noop",
    "tenant_id": "t",
    "priority": "normal",
    "attempt": 1,
    "scheduled_time": 60_000,
    "fire_time": 60_000,
    "period_start": 0,
    "period_end": 60_000,
    "payload": "{}",
    "max_attempts": 3,
    "trigger": "scheduled",
    "late": False,
    "requested_at": 60_001,
    "lease_seconds": 30,
    "heartbeat_seconds": 10,
    "max_run_seconds": None,
    "queue": None,
}


def test_what_the_generic_encoder_refuses_is_refused() -> None:
    state = {
        "job_id": "j",
        "job_version": 1,
        "updated_at": 0,
        "pending": [{"timer_id": "t", "kind": "retry", "fire_at": 0, "extra": 1}],
    }
    with pytest.raises(UnencodableRecord):
        encode_timer_state(state, {}, 1)


def test_another_schema_version_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if the registry's current TimerState were not the version the codec was generated for.
    request = dict(SAMPLE)
    state = {
        "job_id": "j",
        "job_version": 1,
        "updated_at": 0,
        "pending": [{"timer_id": "t", "kind": "retry", "fire_at": 0, "request": request}],
    }
    monkeypatch.setattr(timer_state, "fast_layout", lambda: False)
    monkeypatch.setattr(timer_state, "write", lambda *a: pytest.fail("the fast path ran"))
    assert encode_timer_state(state, {}, 3) == encode_state(state, {}, 3)
