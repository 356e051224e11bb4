"""`ExecutionRequest`s of the current schema version read from Avro binary directly.

The generic decoder (fastavro's schema-driven reader behind `adapters.avro.decode`) cost
about 14 CPU µs a request on this machine, the largest single share of a no-op execution
once the events were written by hand (bench/reports/worker.md). Here the fields of the
current version are read in schema order with the varint and string reads inlined.

The result is the generic decoder's, always: the fast path takes only a record whose header
names the current version, and whose body it reads to the last byte without meeting anything
unusual (a union branch or enum index out of range, a boolean byte other than 0 or 1, text
that is not UTF-8, a record that ends early or runs on). Anything else goes to the generic
decoder, which decodes it (an older version, through schema resolution) or refuses it with
its reason (`UndecodableRecord`). The layout is checked against the registry's current
schema when first used: a new version with other fields turns the fast path off until this
module is taught it (`tests/unit/services/worker/test_worker_request_codec.py` fails first; decision 0117).
"""

from __future__ import annotations

import functools
from typing import Any, cast

from tickwheel.adapters.avro import HEADER_SIZE, decode_as
from tickwheel.adapters.avro.binary import (
    REQUIRED,
    layout_header,
)
from tickwheel.adapters.avro.binary import Unusual as _Unusual
from tickwheel.adapters.avro.binary import read_long as _long
from tickwheel.adapters.avro.binary import read_opt_long as _opt_long
from tickwheel.adapters.avro.binary import read_opt_string as _opt_string
from tickwheel.adapters.avro.binary import read_string as _string
from tickwheel.records import ExecutionRequest

_REQUIRED = REQUIRED
PRIORITIES = ("high", "normal", "low")
TRIGGERS = ("scheduled", "manual", "backfill", "retry", "lease_expired", "catch_up")
# (field, declared type, default) of ExecutionRequest v4, in schema order.
REQUEST_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("execution_id", "string", _REQUIRED),
    ("job_id", "string", _REQUIRED),
    ("job_version", "long", _REQUIRED),
    ("job_type", "string", _REQUIRED),
    ("tenant_id", "string", _REQUIRED),
    ("priority", ("enum", PRIORITIES), _REQUIRED),
    ("attempt", "int", _REQUIRED),
    ("scheduled_time", "long", _REQUIRED),
    ("fire_time", "long", _REQUIRED),
    ("period_start", "long", _REQUIRED),
    ("period_end", ("null", "long"), None),
    ("payload", "string", "{}"),
    ("max_attempts", "int", _REQUIRED),
    ("trigger", ("enum", TRIGGERS), _REQUIRED),
    ("late", "boolean", False),
    ("requested_at", "long", _REQUIRED),
    ("lease_seconds", "int", 30),
    ("heartbeat_seconds", "int", 10),
    ("max_run_seconds", ("null", "int"), None),
    ("queue", ("null", "string"), None),
    ("workflow_id", ("null", "string"), None),
    ("step_id", ("null", "string"), None),
)


@functools.cache  # `layout_header`'s own cache hashed the 22-field layout on every request
def _current_header() -> bytes | None:
    """The current version's header when its layout is the one read here, else None."""
    return layout_header("ExecutionRequest", REQUEST_LAYOUT)


def fast_layout() -> bool:
    """True when the registry's current `ExecutionRequest` is the layout read here."""
    return _current_header() is not None


# The fields after the two ids repeat across a burst (the same version, type, tenant, slot,
# fire time, payload and terms for a whole schedule's jobs): their bytes, once read, map to
# their values (bounded; cleared when full), so most requests cost two strings and a lookup.
_TAIL_MAX = 4096
_TAILS: dict[bytes, dict[str, object]] = {}


def _tail(data: bytes, pos: int) -> dict[str, object]:
    job_version, pos = _long(data, pos)
    job_type, pos = _string(data, pos)
    tenant_id, pos = _string(data, pos)
    priority, pos = _long(data, pos)
    attempt, pos = _long(data, pos)
    scheduled_time, pos = _long(data, pos)
    fire_time, pos = _long(data, pos)
    period_start, pos = _long(data, pos)
    period_end, pos = _opt_long(data, pos)
    payload, pos = _string(data, pos)
    max_attempts, pos = _long(data, pos)
    trigger, pos = _long(data, pos)
    late = data[pos]
    pos += 1
    requested_at, pos = _long(data, pos)
    lease_seconds, pos = _long(data, pos)
    heartbeat_seconds, pos = _long(data, pos)
    max_run_seconds, pos = _opt_long(data, pos)
    queue, pos = _opt_string(data, pos)
    workflow_id, pos = _opt_string(data, pos)
    step_id, pos = _opt_string(data, pos)
    if pos != len(data) or late > 1 or not 0 <= priority < 3 or not 0 <= trigger < 6:
        raise _Unusual
    return {
        "execution_id": "", "job_id": "",  # placeholders: each request's copy sets its own
        "job_version": job_version, "job_type": job_type, "tenant_id": tenant_id,
        "priority": PRIORITIES[priority], "attempt": attempt, "scheduled_time": scheduled_time,
        "fire_time": fire_time, "period_start": period_start, "period_end": period_end,
        "payload": payload, "max_attempts": max_attempts, "trigger": TRIGGERS[trigger],
        "late": late == 1, "requested_at": requested_at, "lease_seconds": lease_seconds,
        "heartbeat_seconds": heartbeat_seconds, "max_run_seconds": max_run_seconds,
        "queue": queue, "workflow_id": workflow_id, "step_id": step_id,
    }  # fmt: skip


def _fast(data: bytes) -> ExecutionRequest:
    size = data[HEADER_SIZE]
    if size < 0x80:  # an id under 64 bytes: a one-byte length, read here without a call
        start = HEADER_SIZE + 1
        pos = start + (size >> 1)
        if size & 1 or pos > len(data):
            raise _Unusual
        execution_id = data[start:pos].decode()
    else:
        execution_id, pos = _string(data, HEADER_SIZE)
    job_id, pos = _string(data, pos)
    key = data[pos:]
    tail = _TAILS.get(key)
    if tail is None:
        tail = _tail(data, pos)
        if len(_TAILS) >= _TAIL_MAX:
            _TAILS.clear()
        _TAILS[key] = tail
    # Every field of the current version, read in schema order and checked as the generic
    # decoder checks it (the hypothesis test holds the two equal): the decode boundary. A
    # copy of the remembered dict (its ids placeholders, in schema order) then the ids.
    request = tail.copy()
    request["execution_id"] = execution_id
    request["job_id"] = job_id
    return cast(ExecutionRequest, request)


def decode_request(data: bytes) -> ExecutionRequest:
    """An `ExecutionRequest` record, as `decode(data, "ExecutionRequest")[1]` gives it (and
    `UndecodableRecord` where that raises it)."""
    header = _current_header()
    if header is not None and data[:HEADER_SIZE] == header:
        try:
            return _fast(data)
        except (_Unusual, IndexError, UnicodeDecodeError):
            pass  # the generic decoder reads it or says why it cannot
    return decode_as(ExecutionRequest, data)
