"""The timer's own `ExecutionEvent` reader (`services/timer/event_codec.py`) gives what the
generic decoder gives, for any event of the current version, and leaves everything else to
it: damaged records, which the generic decoder refuses with its reason (so they still reach
the dead-letter topic). The current schema is the layout read."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import UndecodableRecord, decode, encode
from tickwheel.services.timer.event_codec import EVENT_TYPES, _fast, decode_event, fast_layout

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=80)
OPTIONAL_TEXT = st.none() | TEXT

EVENTS = st.fixed_dictionaries({
    "event_id": TEXT, "event_time": LONGS, "event_type": st.sampled_from(EVENT_TYPES),
    "job_id": TEXT, "job_type": TEXT, "tenant_id": TEXT, "execution_id": TEXT,
    "attempt": INTS, "scheduled_time": LONGS, "fire_time": st.none() | LONGS,
    "worker_id": OPTIONAL_TEXT, "lease_deadline": st.none() | LONGS, "error": OPTIONAL_TEXT,
    "error_kind": OPTIONAL_TEXT, "reason": OPTIONAL_TEXT, "details": OPTIONAL_TEXT,
})  # fmt: skip


def _reason(exc: UndecodableRecord) -> str:
    """The refusal's reason, without the object addresses some of fastavro's errors name."""
    return re.sub(r" at 0x[0-9a-f]+", "", exc.reason)


def generic(data: bytes) -> dict[str, Any]:
    return decode(data, "ExecutionEvent")[1]


def test_the_current_execution_event_schema_is_the_layout_the_timer_reads() -> None:
    # A new ExecutionEvent version fails here first: teach event_codec.py its layout (or the
    # timer silently falls back to the slower generic decoder).
    assert fast_layout()


@settings(max_examples=300, deadline=None)  # never fail on speed: the machine is shared
@given(record=EVENTS)
def test_the_fast_reader_gives_the_generic_decoders_record(record: dict[str, Any]) -> None:
    data = encode("ExecutionEvent", record)
    expected = generic(data)
    assert _fast(data) == expected == record  # the fast path itself, no fallback
    assert list(decode_event(data)) == list(expected)  # the same fields, in schema order


@settings(max_examples=500, deadline=None)
@given(
    record=EVENTS,
    cut=st.integers(min_value=0, max_value=200),
    flip=st.tuples(st.integers(min_value=0, max_value=200), st.integers(0, 255)),
    extra=st.binary(max_size=3),
)
def test_a_damaged_event_is_decoded_or_refused_as_the_generic_decoder_does(
    record: dict[str, Any], cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    data = encode("ExecutionEvent", record)
    position, value = flip
    damaged = [data[: cut % (len(data) + 1)], data + extra]
    if position < len(data):
        damaged.append(data[:position] + bytes([value]) + data[position + 1 :])
    for candidate in damaged:
        try:
            expected: dict[str, Any] | str = generic(candidate)
        except UndecodableRecord as exc:
            expected = _reason(exc)
        try:
            got: dict[str, Any] | str = dict(decode_event(candidate))
        except UndecodableRecord as exc:
            got = _reason(exc)
        assert got == expected
