"""The worker's `ExecutionEvent`s, read from Avro binary directly by the timer.

In a steady pipeline the timer reads two events per execution (leased, succeeded), and the
generic decoder (fastavro's schema-driven reader behind `adapters.avro.decode`) was the
largest single share of its main thread, about an eighth (decision 0144). Here the fields of
the current version are read in schema order with the worker's request reader's primitives
(`services/worker/request_codec.py`, decision 0117), imported, not copied.

The result is the generic decoder's, always: the fast path takes only a record whose header
names the current version and whose body it reads to the last byte without meeting anything
unusual (a union branch or enum index out of range, text that is not UTF-8, a record that ends
early or runs on); anything else goes to the generic decoder, which decodes it or refuses it
with its reason (`UndecodableRecord`). The layout is checked against the registry's current
schema on first use: another layout turns the fast path off until this module is taught it
(`tests/unit/services/timer/test_timer_event_codec.py` fails first).
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
from tickwheel.adapters.avro.binary import read_opt_string as _opt_string
from tickwheel.adapters.avro.binary import read_string as _string
from tickwheel.records import ExecutionEvent

_REQUIRED = REQUIRED
EVENT_TYPES = ("requested", "skipped", "leased", "heartbeat", "succeeded", "failed",
               "retry_scheduled", "dead_lettered", "fenced", "cancelled")  # fmt: skip
# (field, declared type, default) of ExecutionEvent v1, in schema order.
EVENT_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("event_id", "string", _REQUIRED),
    ("event_time", "long", _REQUIRED),
    ("event_type", ("enum", EVENT_TYPES), _REQUIRED),
    ("job_id", "string", _REQUIRED),
    ("job_type", "string", _REQUIRED),
    ("tenant_id", "string", _REQUIRED),
    ("execution_id", "string", _REQUIRED),
    ("attempt", "int", _REQUIRED),
    ("scheduled_time", "long", _REQUIRED),
    ("fire_time", ("null", "long"), None),
    ("worker_id", ("null", "string"), None),
    ("lease_deadline", ("null", "long"), None),
    ("error", ("null", "string"), None),
    ("error_kind", ("null", "string"), None),
    ("reason", ("null", "string"), None),
    ("details", ("null", "string"), None),
)


_QUIET = b"\x00" * 4  # no error, error kind, reason or details: four null branches
_QUIET_DETAILS = b"\x00" * 3  # no error, error kind or reason (details follow)


@functools.cache
def _current_header() -> bytes | None:
    """The current version's header when its layout is the one read here, else None. Cached
    here too: `layout_header`'s own cache hashes the whole layout, twice an execution."""
    return layout_header("ExecutionEvent", EVENT_LAYOUT)


def fast_layout() -> bool:
    """True when the registry's current `ExecutionEvent` is the layout read here."""
    return _current_header() is not None


# Epoch milliseconds are six-byte varints whose last four bytes (bits 14 and up) an event's
# instants share for 16 s: those four bytes -> the bits they carry (bounded; cleared when full).
_TIME_HIGH: dict[bytes, int] = {}
_TIME_HIGH_MAX = 4096


def _time(data: bytes, pos: int) -> tuple[int, int]:
    """`read_long`, with the high bytes of a six-byte varint (an instant) looked up rather than
    walked: a key is only ever stored for four bytes that end a six-byte varint, and they
    determine every bit above the first 14."""
    high = _TIME_HIGH.get(data[pos + 2 : pos + 6])
    first, second = data[pos], data[pos + 1]
    if high is None or first < 0x80 or second < 0x80:
        value, end = _long(data, pos)
        if end - pos == 6:
            if len(_TIME_HIGH) >= _TIME_HIGH_MAX:
                _TIME_HIGH.clear()
            z = (value << 1) ^ (value >> 63)  # zig-zag again: the varint's bits
            _TIME_HIGH[data[pos + 2 : end]] = z >> 14 << 14
        return value, end
    z = (first & 0x7F) | ((second & 0x7F) << 7) | high
    return (z >> 1) ^ -(z & 1), pos + 6


def _opt_time(data: bytes, pos: int) -> tuple[int | None, int]:
    branch = data[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise _Unusual
    return _time(data, pos + 1)


def _fast(data: bytes) -> ExecutionEvent:
    event_id, pos = _string(data, HEADER_SIZE)
    event_time, pos = _time(data, pos)
    event_type, pos = _long(data, pos)
    job_id, pos = _string(data, pos)
    job_type, pos = _string(data, pos)
    tenant_id, pos = _string(data, pos)
    execution_id, pos = _string(data, pos)
    attempt, pos = _long(data, pos)
    scheduled_time, pos = _time(data, pos)
    fire_time, pos = _opt_time(data, pos)
    worker_id, pos = _opt_string(data, pos)
    lease_deadline, pos = _opt_time(data, pos)
    # The worker's leases and successes end in null branches (its codec writes them as one
    # run): what is all nulls is read as one comparison, not a call a field.
    error = error_kind = reason = details = None
    if data[pos:] == _QUIET:
        pos += len(_QUIET)
    else:
        if data[pos : pos + len(_QUIET_DETAILS)] == _QUIET_DETAILS:
            pos += len(_QUIET_DETAILS)
        else:
            error, pos = _opt_string(data, pos)
            error_kind, pos = _opt_string(data, pos)
            reason, pos = _opt_string(data, pos)
        details, pos = _opt_string(data, pos)
    if pos != len(data) or not 0 <= event_type < len(EVENT_TYPES):
        raise _Unusual
    # Every field of the current version, read in schema order and checked as the generic
    # decoder checks it (the hypothesis test holds the two equal): the decode boundary.
    return cast(ExecutionEvent, {
        "event_id": event_id, "event_time": event_time, "event_type": EVENT_TYPES[event_type],
        "job_id": job_id, "job_type": job_type, "tenant_id": tenant_id,
        "execution_id": execution_id, "attempt": attempt, "scheduled_time": scheduled_time,
        "fire_time": fire_time, "worker_id": worker_id, "lease_deadline": lease_deadline,
        "error": error, "error_kind": error_kind, "reason": reason, "details": details,
    })  # fmt: skip


def decode_event(data: bytes) -> ExecutionEvent:
    """An `ExecutionEvent` record, as `decode(data, "ExecutionEvent")[1]` gives it (and
    `UndecodableRecord` where that raises it)."""
    header = _current_header()
    if header is not None and data[:HEADER_SIZE] == header:
        try:
            return _fast(data)
        except (_Unusual, IndexError, UnicodeDecodeError):
            pass  # the generic decoder reads it or says why it cannot
    return decode_as(ExecutionEvent, data)
