"""The timer's own encoding of its hot records (`services/timer/codec.py`) writes exactly the
bytes of the generic Avro encoder - requests with any field left to its default or set, states
with any pending entries (a request cached, not cached, already bytes, none) - takes the same
cached request bytes out of the writer's cache, refuses what the generic encoder refuses, and
falls back to the generic encoder when the schemas are not the layouts it was taught."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import UnencodableRecord, decode, encode
from tickwheel.services.timer import codec
from tickwheel.services.timer.codec import (
    PRIORITIES,
    TIMER_KINDS,
    TRIGGERS,
    encode_request,
    encode_timer_state,
    fast_layout,
)
from tickwheel.services.timer.records import decode_state, encode_state, request_key

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=40)
OPTIONAL_TEXT = st.none() | TEXT
DEFAULTED = ("period_end", "payload", "late", "lease_seconds", "heartbeat_seconds",
             "max_run_seconds", "queue", "workflow_id", "step_id")  # fmt: skip


def test_the_current_request_and_state_schemas_are_the_layouts_the_timer_writes() -> None:
    # A new ExecutionRequest or TimerState version fails here first: teach codec.py its
    # layout (or the timer silently falls back to the slower generic encoder).
    assert fast_layout()


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


@settings(max_examples=400, deadline=None)  # never fail on speed: the machine is shared
@given(request=requests())
def test_a_request_is_the_generic_encoders_bytes(request: dict[str, Any]) -> None:
    value = encode_request(request)
    assert value == encode("ExecutionRequest", request)
    decoded = decode(value, "ExecutionRequest")[1]
    assert {k: decoded[k] for k in request} == request


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
    reference_cache = dict(encoded)
    value = encode_timer_state(state, encoded, seq)
    assert value == encode_state(state, reference_cache, seq)
    assert encoded == reference_cache  # the same entries taken out, the others left
    assert decode_state(value)["seq"] == seq


SAMPLE = {
    "execution_id": "e-1", "job_id": "j", "job_version": 2, "job_type": "noop",
    "tenant_id": "t", "priority": "normal", "attempt": 1, "scheduled_time": 60_000,
    "fire_time": 60_000, "period_start": 0, "period_end": 60_000, "payload": "{}",
    "max_attempts": 3, "trigger": "scheduled", "late": False, "requested_at": 60_001,
    "lease_seconds": 30, "heartbeat_seconds": 10, "max_run_seconds": None, "queue": None,
}  # fmt: skip


def test_what_the_generic_encoder_refuses_is_refused() -> None:
    request = dict(SAMPLE)
    with pytest.raises(UnencodableRecord):
        encode_request({**request, "typo_field": 1})
    with pytest.raises(UnencodableRecord):
        encode_request({**request, "priority": "urgent"})
    with pytest.raises(UnencodableRecord):
        encode_request({k: v for k, v in request.items() if k != "job_id"})
    state = {"job_id": "j", "job_version": 1, "updated_at": 0, "pending": [
        {"timer_id": "t", "kind": "retry", "fire_at": 0, "extra": 1}]}  # fmt: skip
    with pytest.raises(UnencodableRecord):
        encode_timer_state(state, {}, 1)


def test_another_schema_layout_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if a new ExecutionRequest version had a field this module was not taught.
    request = dict(SAMPLE)
    state = {"job_id": "j", "job_version": 1, "updated_at": 0,
             "pending": [{"timer_id": "t", "kind": "retry", "fire_at": 0, "request": request}]}  # fmt: skip
    monkeypatch.setattr(codec, "REQUEST_LAYOUT", (*codec.REQUEST_LAYOUT, ("new", "long", 0)))
    calls: list[str] = []
    monkeypatch.setattr(codec, "_fast_request", lambda r: calls.append("request") or b"")
    monkeypatch.setattr(codec, "_fast_state", lambda *a: calls.append("state") or b"")
    codec.fast_layout.cache_clear()
    try:
        assert not fast_layout()
        assert encode_request(request) == encode("ExecutionRequest", request)
        assert encode_timer_state(state, {}, 3) == encode_state(state, {}, 3)
        assert calls == []  # every record went through the generic encoder
    finally:
        monkeypatch.undo()
        codec.fast_layout.cache_clear()
    assert fast_layout()
