"""The worker's own `ExecutionRequest` reader (`services/worker/request_codec.py`) gives what
the generic decoder gives, for any request of the current version, and leaves everything
else to it: older versions, and damaged records (which the generic decoder refuses with its
reason, so they still reach the dead-letter topic). The current schema is the layout read."""

from __future__ import annotations

from typing import Any

import pytest
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
from tests.unit.sdk.test_worker_sdk import request
from tickwheel.adapters.avro import decode, default_registry, encode
from tickwheel.services.worker import request_codec
from tickwheel.services.worker.request_codec import (
    PRIORITIES,
    TRIGGERS,
    _fast,
    decode_request,
    fast_layout,
)

REQUESTS = st.fixed_dictionaries({
    "execution_id": TEXT, "job_id": TEXT, "job_version": LONGS, "job_type": TEXT,
    "tenant_id": TEXT, "priority": st.sampled_from(PRIORITIES), "attempt": INTS,
    "scheduled_time": LONGS, "fire_time": LONGS, "period_start": LONGS,
    "period_end": st.none() | LONGS, "payload": TEXT, "max_attempts": INTS,
    "trigger": st.sampled_from(TRIGGERS), "late": st.booleans(), "requested_at": LONGS,
    "lease_seconds": INTS, "heartbeat_seconds": INTS, "max_run_seconds": st.none() | INTS,
    "queue": OPTIONAL_TEXT, "workflow_id": OPTIONAL_TEXT, "step_id": OPTIONAL_TEXT,
})  # fmt: skip


def generic(data: bytes) -> dict[str, Any]:
    return decode(data, "ExecutionRequest")[1]


def test_the_current_execution_request_schema_is_the_layout_the_worker_reads() -> None:
    # A new ExecutionRequest version fails here first: teach request_codec.py its layout (or
    # the worker silently falls back to the slower generic decoder).
    assert fast_layout()


@settings(max_examples=300, deadline=None)  # never fail on speed: the machine is shared
@given(record=REQUESTS)
def test_the_fast_reader_gives_the_generic_decoders_record(record: dict[str, Any]) -> None:
    data = encode("ExecutionRequest", record)
    expected = generic(data)
    assert _fast(data) == expected == record  # the fast path itself, no fallback
    assert decode_request(data) == expected
    assert list(decode_request(data)) == list(expected)  # the same fields, in schema order
    # The second read of the same bytes comes from the memo of repeated fields.
    assert decode_request(data) == expected


@settings(max_examples=500, deadline=None)
@given(record=REQUESTS, **DAMAGE)
def test_a_damaged_request_is_decoded_or_refused_as_the_generic_decoder_does(
    record: dict[str, Any], cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    data = encode("ExecutionRequest", record)
    for candidate in damaged(data, cut, flip, extra):
        assert answer(decode_request, candidate) == answer(generic, candidate)


def test_an_older_version_is_left_to_the_generic_decoder_and_resolved() -> None:
    registry = default_registry()
    old = registry.versions("ExecutionRequest")[0]
    assert old.version < registry.current("ExecutionRequest").version
    fields = {f["name"] for f in old.schema["fields"]}
    full = request(queue="reports", workflow_id="w", step_id="s", max_run_seconds=5)
    data = encode("ExecutionRequest", {k: v for k, v in full.items() if k in fields},
                  version=old.version)  # fmt: skip
    assert decode_request(data) == generic(data)
    assert decode_request(data)["queue"] is None  # a v1 request names no queue


def test_the_memo_of_repeated_fields_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_codec, "_TAIL_MAX", 8)
    request_codec._TAILS.clear()
    base = request()
    for n in range(50):
        data = encode("ExecutionRequest", {**base, "job_version": n})
        assert decode_request(data)["job_version"] == n
        assert len(request_codec._TAILS) <= 8


@pytest.mark.parametrize(
    "varint",
    [
        "80808080808080808002",
        "ffffffffffffffffff01",
        "fefefefefefefefefe01",
        "8080808080808080807f",
    ],
)
def test_a_ten_byte_long_reads_as_the_generic_decoder_reads_it(varint: str) -> None:
    # A tenth byte's bits past the 64th are dropped by fastavro; a damaged request once read
    # a fire_time of 2**63 here against fastavro's 0 (found by the damaged-request property).
    import io

    import fastavro

    from tickwheel.services.worker.request_codec import _long

    data = bytes.fromhex(varint)
    schema = fastavro.parse_schema(
        {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    )
    assert _long(data, 0) == (fastavro.schemaless_reader(io.BytesIO(data), schema)["n"], 10)
