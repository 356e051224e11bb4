"""The single-object Avro codec: round trips, defaults, and refusing bad bytes with a reason.

Invariants: `decode(encode(r, v)) == (r, v)` for every record; fields left out take their
schema defaults; instants stay `int` epoch milliseconds; a value that does not fit its
schema is refused at encode; and any byte string that is not a complete record of a known
kept version raises `UndecodableRecord` (a `ValueError`) with a reason, never anything else.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.adapters.avro.schema_samples import REPO_SCHEMAS, sample_value
from tickwheel.adapters import avro as codec
from tickwheel.adapters.avro import (
    HEADER_SIZE,
    SchemaRegistry,
    UndecodableRecord,
    UnencodableRecord,
    UnknownRecord,
    format_fingerprint,
    load_schemas,
    read_fingerprint,
)
from tickwheel.errors import TickwheelError

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in epoch milliseconds


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return load_schemas(REPO_SCHEMAS)


def _event(**changes: Any) -> dict[str, Any]:
    return {
        "event_id": "ev-1",
        "event_time": T0 + 5_000,
        "event_type": "succeeded",
        "job_id": "job-1",
        "job_type": "noop",
        "tenant_id": "acme",
        "execution_id": "exec-1",
        "attempt": 2,
        "scheduled_time": T0,
        "fire_time": T0 + 1_234,
        "worker_id": "w-1",
        "lease_deadline": None,
        "error": None,
        "error_kind": None,
        "reason": None,
        "details": '{"k": [1, 2]}',
        **changes,
    }


def test_every_record_round_trips(registry: SchemaRegistry) -> None:
    rnd = random.Random(11)
    for name in registry.record_names():
        for nulls in (0.0, 0.3, 1.0):
            for _ in range(20):
                value = sample_value(registry.current(name).schema, rnd, nulls=nulls)
                assert registry.decode(registry.encode(name, value)) == (name, value)


def test_instants_decode_as_int_epoch_millis(registry: SchemaRegistry) -> None:
    _, got = registry.decode(registry.encode("ExecutionEvent", _event()))
    assert type(got["event_time"]) is int and got["event_time"] == T0 + 5_000
    assert type(got["fire_time"]) is int and got["fire_time"] == T0 + 1_234


def test_left_out_fields_take_their_defaults(registry: SchemaRegistry) -> None:
    minimal = {
        "jobId": "nightly",
        "version": 1,
        "type": "noop",
        "cron": "0 2 * * *",
        "createdAt": T0,
        "updatedAt": T0,
    }
    _, got = registry.decode(registry.encode("JobDefinition", minimal), expected="JobDefinition")
    # Every field left out takes its schema default (fields added by later versions included),
    # and the defaults people rely on are the ones written here.
    latest = json.loads(max(REPO_SCHEMAS.joinpath("JobDefinition").glob("v*.avsc"),
                            key=lambda p: int(p.stem[1:])).read_text())  # fmt: skip
    assert got == {**{f["name"]: f["default"] for f in latest["fields"] if "default" in f},
                   **minimal}  # fmt: skip
    assert {k: got[k] for k in ("payload", "timezone", "priority", "maxAttempts", "misfirePolicy",
                                "maxCatchUp", "overlapPolicy", "tenantId", "enabled", "labels")} == {
        "payload": "{}", "timezone": "UTC", "priority": "normal", "maxAttempts": 3,
        "misfirePolicy": "catch_up", "maxCatchUp": 100, "overlapPolicy": "allow",
        "tenantId": "default", "enabled": True, "labels": {},
    }  # fmt: skip
    assert got["runAt"] is None and got["expectedMaxInterval"] is None and got["queue"] is None
    state = {"job_id": "nightly", "job_version": 1, "updated_at": T0}
    _, got = registry.decode(registry.encode("TimerState", state))
    assert got["pending"] == [] and got["last_scheduled_time"] is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"job_idd": "typo"}, "more fields than the schema"),
        ({"event_type": "exploded"}, "exploded"),
        ({"attempt": "two"}, None),
        ({"event_time": 2**70}, None),
        ({"job_id": None}, None),
    ],
)
def test_a_value_that_does_not_fit_is_refused(
    registry: SchemaRegistry, change: dict[str, Any], message: str | None
) -> None:
    with pytest.raises(UnencodableRecord, match=message) as caught:
        registry.encode("ExecutionEvent", _event(**change))
    assert isinstance(caught.value, TickwheelError) and isinstance(caught.value, ValueError)
    assert caught.value.record_name == "ExecutionEvent"


def test_a_missing_field_without_default_is_refused(registry: SchemaRegistry) -> None:
    value = _event()
    del value["execution_id"]
    with pytest.raises(UnencodableRecord, match="execution_id"):
        registry.encode("ExecutionEvent", value)


def test_an_unknown_record_name_is_a_lookup_error(registry: SchemaRegistry) -> None:
    with pytest.raises(UnknownRecord) as caught:
        registry.encode("ExecutionEvents", _event())
    assert isinstance(caught.value, LookupError) and "ExecutionEvent" in caught.value.known
    with pytest.raises(UnknownRecord):
        registry.encode("ExecutionEvent", _event(), version=99)


# --- refusing bytes -------------------------------------------------------------------


def _reason(registry: SchemaRegistry, data: bytes, expected: str | None = None) -> str:
    with pytest.raises(UndecodableRecord) as caught:
        registry.decode(data, expected)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TickwheelError)
    return caught.value.reason


@pytest.mark.parametrize(
    "data",
    [b"", b"\xc3", b"\xc3\x01\x00", b'{"jobId": "x"}', b"\x00" * 40, b"\xc3\x02" + b"\x00" * 20],
)
def test_bytes_without_the_header_are_not_single_object(
    registry: SchemaRegistry, data: bytes
) -> None:
    assert _reason(registry, data) == "not single-object encoded"
    assert read_fingerprint(data) is None


def test_an_unknown_fingerprint_is_named(registry: SchemaRegistry) -> None:
    good = registry.encode("ExecutionEvent", _event())
    known = read_fingerprint(good)
    assert known == registry.current("ExecutionEvent").fingerprint
    unknown = known ^ 0x1
    data = good[:2] + unknown.to_bytes(8, "little") + good[HEADER_SIZE:]
    assert _reason(registry, data) == f"unknown schema fingerprint {format_fingerprint(unknown)}"
    assert registry.by_fingerprint(unknown) is None
    assert registry.by_fingerprint(known) is registry.current("ExecutionEvent")


def test_every_truncation_of_a_body_is_refused(registry: SchemaRegistry) -> None:
    data = registry.encode("ExecutionEvent", _event())
    for cut in range(HEADER_SIZE, len(data)):
        assert _reason(registry, data[:cut]).startswith("truncated/corrupt body: "), cut


def test_trailing_bytes_are_corruption(registry: SchemaRegistry) -> None:
    data = registry.encode(
        "Alert", sample_value(registry.current("Alert").schema, random.Random(3))
    )
    assert _reason(registry, data + b"\x00") == (
        "truncated/corrupt body: 1 trailing bytes after the record"
    )


def test_a_corrupt_body_is_refused(registry: SchemaRegistry) -> None:
    data = bytearray(registry.encode("ExecutionEvent", _event(event_id="")))
    # Body layout: event_id (zig-zag length 0), event_time (varint), event_type (enum index).
    # A negative string length and an enum index past the symbols are both corruption.
    negative_length = bytes(data[:HEADER_SIZE]) + b"\x03" + bytes(data[HEADER_SIZE + 1 :])
    assert _reason(registry, negative_length).startswith("truncated/corrupt body: ")
    time_len = next(i for i, b in enumerate(data[HEADER_SIZE + 1 :]) if b < 0x80) + 1
    enum_at = HEADER_SIZE + 1 + time_len
    data[enum_at] = 0x7E  # zig-zag 63: no such symbol
    assert _reason(registry, bytes(data)).startswith("truncated/corrupt body: ")


def test_expected_refuses_another_record(registry: SchemaRegistry) -> None:
    data = registry.encode("ExecutionEvent", _event())
    assert _reason(registry, data, expected="Alert") == "expected Alert got ExecutionEvent"
    assert registry.decode(data, expected="ExecutionEvent")[0] == "ExecutionEvent"


@functools.cache
def _repo_registry() -> SchemaRegistry:
    return load_schemas(REPO_SCHEMAS)


@settings(max_examples=300, deadline=None)
@given(
    tail=st.binary(max_size=64),
    record=st.sampled_from(["ExecutionEvent", "TimerState", "DeadLetter"]),
)
def test_any_bytes_after_a_known_header_decode_or_are_refused(tail: bytes, record: str) -> None:
    registry = _repo_registry()
    data = registry.current(record).header + tail
    try:
        name, value = registry.decode(data)
    except UndecodableRecord as exc:
        assert exc.reason.startswith("truncated/corrupt body: ") and exc.record_name == record
    else:
        # The tail happened to be a valid body (Avro varints need not be minimal, so the
        # bytes may differ): the value must then survive its own round trip.
        assert name == record
        assert registry.decode(registry.encode(record, value)) == (record, value)


def test_module_level_functions_use_the_repository_schemas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(codec.SCHEMAS_DIR_ENV, raising=False)
    codec.default_registry.cache_clear()
    try:
        data = codec.encode("ExecutionEvent", _event())
        assert codec.decode(data, expected="ExecutionEvent") == ("ExecutionEvent", _event())
        assert Path(str(codec.default_registry().source)).resolve() == REPO_SCHEMAS
    finally:
        codec.default_registry.cache_clear()
