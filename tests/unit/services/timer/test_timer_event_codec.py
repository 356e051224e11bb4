"""The timer's own `ExecutionEvent` reader (`services/timer/event_codec.py`) gives what the
generic decoder gives, for any event of the current version, and leaves everything else to
it: damaged records, which the generic decoder refuses with its reason (so they still reach
the dead-letter topic). The current schema is the layout read."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.adapters.avro.reader_properties import (
    DAMAGE,
    INTS,
    LONGS,
    OPTIONAL_TEXT,
    TEXT,
    answer,
    damaged,
)
from tickwheel.adapters.avro import decode, encode
from tickwheel.services.timer.event_codec import EVENT_TYPES, _fast, decode_event, fast_layout

EVENTS = st.fixed_dictionaries({
    "event_id": TEXT, "event_time": LONGS, "event_type": st.sampled_from(EVENT_TYPES),
    "job_id": TEXT, "job_type": TEXT, "tenant_id": TEXT, "execution_id": TEXT,
    "attempt": INTS, "scheduled_time": LONGS, "fire_time": st.none() | LONGS,
    "worker_id": OPTIONAL_TEXT, "lease_deadline": st.none() | LONGS, "error": OPTIONAL_TEXT,
    "error_kind": OPTIONAL_TEXT, "reason": OPTIONAL_TEXT, "details": OPTIONAL_TEXT,
})  # fmt: skip


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
@given(record=EVENTS, **DAMAGE)
def test_a_damaged_event_is_decoded_or_refused_as_the_generic_decoder_does(
    record: dict[str, Any], cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    data = encode("ExecutionEvent", record)
    for candidate in damaged(data, cut, flip, extra):
        assert answer(decode_event, candidate) == answer(generic, candidate)


# The worker's leases and successes: no error, kind or reason, and details or none (the
# tails the reader takes as one comparison), as often as not.
# Instants as a worker writes them (six-byte varints sharing their high bytes: the reader looks
# those up), and any long around them (other lengths, whose next bytes must never pass for them).
INSTANTS = st.integers(1_800_000_000_000, 1_800_000_100_000) | LONGS
WORKER_EVENTS = st.tuples(EVENTS, OPTIONAL_TEXT, INSTANTS, INSTANTS, INSTANTS).map(
    lambda drawn: {**drawn[0], "error": None, "error_kind": None, "reason": None,
                   "details": drawn[1], "event_time": drawn[2], "scheduled_time": drawn[3],
                   "lease_deadline": drawn[4]}
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(record=WORKER_EVENTS, **DAMAGE)
def test_a_worker_s_null_tailed_event_reads_as_the_generic_decoder_reads_it(
    record: dict[str, Any], cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    data = encode("ExecutionEvent", record)
    assert _fast(data) == generic(data) == record
    for candidate in damaged(data, cut, flip, extra):
        assert answer(decode_event, candidate) == answer(generic, candidate)
