"""The timer's hot records (`ExecutionRequest`, `TimerState`) written as Avro binary directly.

A burst emits one request per occurrence and a state per job, each of which went through the
generic codec (fastavro's schema-driven writer, with its field lookups and union resolution per
value): about half of the writer's CPU in a burst (bench/reports/timer.md). Here each record is
the concatenation of its fields' encodings in schema order, with the Avro primitives of the
worker's codec (`services/worker/codec.py`, decision 0114) - shared, not copied.

The bytes are identical to `encode("ExecutionRequest", ...)` / `records.encode_state(...)`
(`tests/unit/services/timer/test_timer_codec.py`, hypothesis). The layouts are checked against the registry's
current schemas when first used: a new version whose fields differ turns the fast path off and
every record goes through the generic encoder (slower, still correct) until this module is
taught it (the layout test fails first). A record the fast path cannot write as written (an
unknown field, a value of the wrong type) goes through the generic encoder too, which refuses
it as before (decision 0116).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, MutableMapping
from typing import Any

from tickwheel.adapters.avro import default_registry, encode
from tickwheel.adapters.avro.binary import NULL as _NULL
from tickwheel.adapters.avro.binary import SOME as _SOME
from tickwheel.adapters.avro.binary import write_long as _long
from tickwheel.adapters.avro.binary import write_opt_long as _opt_long
from tickwheel.adapters.avro.binary import write_opt_string as _opt_string
from tickwheel.adapters.avro.binary import write_string as _string
from tickwheel.services.timer.records import RequestKey, encode_state, request_key

_NO_DEFAULT = "<required>"
_NULL_LONG = ("null", "long")
_NULL_INT = ("null", "int")
_NULL_STRING = ("null", "string")

PRIORITIES = ("high", "normal", "low")
TRIGGERS = ("scheduled", "manual", "backfill", "retry", "lease_expired", "catch_up")
TIMER_KINDS = ("retry", "lease_deadline", "workflow_sleep", "approval_timeout", "manual")

# (field, declared type, default) of ExecutionRequest v4 and TimerState v3, in schema order.
REQUEST_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("execution_id", "string", _NO_DEFAULT),
    ("job_id", "string", _NO_DEFAULT),
    ("job_version", "long", _NO_DEFAULT),
    ("job_type", "string", _NO_DEFAULT),
    ("tenant_id", "string", _NO_DEFAULT),
    ("priority", ("enum", PRIORITIES), _NO_DEFAULT),
    ("attempt", "int", _NO_DEFAULT),
    ("scheduled_time", "long", _NO_DEFAULT),
    ("fire_time", "long", _NO_DEFAULT),
    ("period_start", "long", _NO_DEFAULT),
    ("period_end", _NULL_LONG, None),
    ("payload", "string", "{}"),
    ("max_attempts", "int", _NO_DEFAULT),
    ("trigger", ("enum", TRIGGERS), _NO_DEFAULT),
    ("late", "boolean", False),
    ("requested_at", "long", _NO_DEFAULT),
    ("lease_seconds", "int", 30),
    ("heartbeat_seconds", "int", 10),
    ("max_run_seconds", _NULL_INT, None),
    ("queue", _NULL_STRING, None),
    ("workflow_id", _NULL_STRING, None),
    ("step_id", _NULL_STRING, None),
)
PENDING_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("timer_id", "string", _NO_DEFAULT),
    ("kind", ("enum", TIMER_KINDS), _NO_DEFAULT),
    ("fire_at", "long", _NO_DEFAULT),
    ("execution_id", _NULL_STRING, None),
    ("attempt", "int", 0),
    ("data", _NULL_STRING, None),
    ("request", ("null", "bytes"), None),
)
STATE_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("job_id", "string", _NO_DEFAULT),
    ("job_version", "long", _NO_DEFAULT),
    ("last_scheduled_time", _NULL_LONG, None),
    ("last_fire_time", _NULL_LONG, None),
    ("next_scheduled_time", _NULL_LONG, None),
    ("updated_at", "long", _NO_DEFAULT),
    ("pending", ("array", ("record", PENDING_LAYOUT)), []),
    ("input_offsets", ("map", "long"), {}),
    ("seq", "long", 0),
)

_REQUEST_FIELDS = frozenset(name for name, _, _ in REQUEST_LAYOUT)
_PENDING_FIELDS = frozenset(name for name, _, _ in PENDING_LAYOUT)
_STATE_FIELDS = frozenset(name for name, _, _ in STATE_LAYOUT)
_PRIORITY = {name: _long(i) for i, name in enumerate(PRIORITIES)}
_TRIGGER = {name: _long(i) for i, name in enumerate(TRIGGERS)}
_KIND = {name: _long(i) for i, name in enumerate(TIMER_KINDS)}
_FALSE, _TRUE = b"\x00", b"\x01"
_EMPTY = b"\x00"  # an empty array or map: a zero block count
# What the fast path may meet in a record it then hands to the generic encoder instead.
_UNWRITABLE = (TypeError, AttributeError, KeyError, ValueError, OverflowError)


def _shape(avro_type: Any) -> Any:
    """A declared Avro type as a comparable shape (names and docs left out)."""
    if isinstance(avro_type, list):
        return tuple(_shape(t) for t in avro_type)
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "enum":
            return ("enum", tuple(avro_type["symbols"]))
        if kind == "array":
            return ("array", _shape(avro_type["items"]))
        if kind == "map":
            return ("map", _shape(avro_type["values"]))
        if kind == "record":
            return ("record", _fields(avro_type))
        return _shape(kind)
    return avro_type


def _fields(schema: Mapping[str, Any]) -> tuple[tuple[str, Any, Any], ...]:
    return tuple(
        (f["name"], _shape(f["type"]), f.get("default", _NO_DEFAULT)) for f in schema["fields"]
    )


@functools.cache
def fast_layout() -> bool:
    """True when the registry's current ExecutionRequest and TimerState are the layouts this
    module writes."""
    registry = default_registry()
    return (
        _fields(registry.current("ExecutionRequest").schema) == REQUEST_LAYOUT
        and _fields(registry.current("TimerState").schema) == STATE_LAYOUT
    )


@functools.cache
def _headers() -> tuple[bytes, bytes]:
    registry = default_registry()
    return registry.current("ExecutionRequest").header, registry.current("TimerState").header


# The fields of a burst's requests and states other than their ids repeat: the same job version,
# type, tenant, slot, fire time, period and payload for a whole schedule's jobs; the same
# trigger, emission instant and lease terms for a whole tick. Those runs of fields are encoded
# once per distinct value tuple (bounded memos, cleared when full). Equal tuples encode to equal
# bytes: the values are ints, strings, None and bools (True == 1 encodes as 1 either way).
_MEMO_MAX = 4096
_SLOT_RUNS: dict[tuple[Any, ...], bytes] = {}
_TAIL_RUNS: dict[tuple[Any, ...], bytes] = {}
_STATE_RUNS: dict[tuple[Any, ...], bytes] = {}
_DATA_RUNS: dict[Any, bytes] = {}


def _remember(memo: dict[Any, bytes], key: Any, value: bytes) -> bytes:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


# The two runs of a request's fields, read in one C call each; a request without one of them
# (a caller's, leaving a field to its default) raises KeyError: the generic encoder writes it.
_SLOT_FIELDS = operator.itemgetter(
    "job_version", "job_type", "tenant_id", "priority", "attempt", "scheduled_time",
    "fire_time", "period_start", "period_end", "payload",
)  # fmt: skip
_TAIL_FIELDS = operator.itemgetter(
    "max_attempts", "trigger", "late", "requested_at", "lease_seconds", "heartbeat_seconds",
    "max_run_seconds", "queue", "workflow_id", "step_id",
)  # fmt: skip


_PENDING_ALL = operator.itemgetter(*(name for name, _, _ in PENDING_LAYOUT))
_STATE_TIMES = operator.itemgetter(
    "job_version", "last_scheduled_time", "last_fire_time", "next_scheduled_time", "updated_at"
)


def _fast_request(r: Mapping[str, Any]) -> bytes:
    slot = _SLOT_FIELDS(r)
    middle = _SLOT_RUNS.get(slot)
    if middle is None:
        middle = _remember(_SLOT_RUNS, slot, b"".join((
            _long(slot[0]), _string(slot[1]), _string(slot[2]), _PRIORITY[slot[3]],
            _long(slot[4]), _long(slot[5]), _long(slot[6]), _long(slot[7]), _opt_long(slot[8]),
            _string(slot[9]),
        )))  # fmt: skip
    tail = _TAIL_FIELDS(r)
    end = _TAIL_RUNS.get(tail)
    if end is None:
        end = _remember(_TAIL_RUNS, tail, b"".join((
            _long(tail[0]), _TRIGGER[tail[1]], _TRUE if tail[2] else _FALSE, _long(tail[3]),
            _long(tail[4]), _long(tail[5]), _opt_long(tail[6]), _opt_string(tail[7]),
            _opt_string(tail[8]), _opt_string(tail[9]),
        )))  # fmt: skip
    return b"".join((_headers()[0], _string(r["execution_id"]), _string(r["job_id"]), middle, end))


def encode_request(request: Mapping[str, Any]) -> bytes:
    """`request` as ExecutionRequest bytes, identical to `encode("ExecutionRequest", request)`."""
    if fast_layout() and _REQUEST_FIELDS.issuperset(request):
        try:
            return _fast_request(request)
        except _UNWRITABLE:
            pass  # the generic encoder writes it or says why it cannot
    return encode("ExecutionRequest", request)


def _fast_pending(entry: Mapping[str, Any], encoded: MutableMapping[RequestKey, bytes]) -> bytes:
    if not _PENDING_FIELDS.issuperset(entry):
        raise KeyError("a field TimerState's PendingTimer does not have")
    try:  # an execution's entry has every field (`ExecutionTracker.pending_of`)
        timer_id, kind, fire_at, execution_id, attempt, data, request = _PENDING_ALL(entry)
    except KeyError:  # a held slot's has no request; any other may leave fields to defaults
        g = entry.get
        timer_id, kind, fire_at = entry["timer_id"], entry["kind"], entry["fire_at"]
        execution_id, attempt, data, request = (
            g("execution_id"), g("attempt", 0), g("data"), g("request")
        )  # fmt: skip
    if request is None:
        raw = _NULL
    else:
        if type(request) is dict or isinstance(request, Mapping):  # a dict: no ABC check
            cached = encoded.pop(request_key(request), None)
            request = encode_request(request) if cached is None else cached
        elif type(request) is not bytes:
            raise TypeError("request")
        raw = _SOME + _long(len(request)) + request
    head = _string(timer_id)
    # An execution's own entry is named after it (every entry a burst's states carry): its
    # id is encoded once for both fields.
    execution = _SOME + head if execution_id == timer_id else _opt_string(execution_id)
    # The same few `data` texts recur (every queued entry's is one constant).
    written = _DATA_RUNS.get(data)
    if written is None:
        written = _remember(_DATA_RUNS, data, _opt_string(data))
    return b"".join((head, _KIND[kind], _long(fire_at), execution, _long(attempt), written, raw))


def _block(items: list[bytes]) -> bytes:
    """An Avro array or map of `items` (already encoded) as one block, as fastavro writes it."""
    if not items:
        return _EMPTY
    return _long(len(items)) + b"".join(items) + _EMPTY


def _fast_state(
    state: Mapping[str, Any], encoded: MutableMapping[RequestKey, bytes], seq: int
) -> bytes:
    try:  # a state the scheduler built has every field but `seq` (`states.job_state`)
        times = _STATE_TIMES(state)
        pending, offsets = state["pending"], state["input_offsets"]
    except KeyError:
        g = state.get
        pending = g("pending", ())  # None: not a list, so the generic encoder says so
        offsets = g("input_offsets", {})
        times = (state["job_version"], g("last_scheduled_time"), g("last_fire_time"),
                 g("next_scheduled_time"), state["updated_at"])  # fmt: skip
    middle = _STATE_RUNS.get(times)
    if middle is None:
        middle = _remember(_STATE_RUNS, times, b"".join((
            _long(times[0]), _opt_long(times[1]), _opt_long(times[2]), _opt_long(times[3]),
            _long(times[4]),
        )))  # fmt: skip
    return b"".join((
        _headers()[1], _string(state["job_id"]), middle,
        _block([_fast_pending(entry, encoded) for entry in pending]),
        _block([_string(k) + _long(v) for k, v in offsets.items()]), _long(seq),
    ))  # fmt: skip


def encode_timer_state(
    state: dict[str, Any], encoded: MutableMapping[RequestKey, bytes], seq: int
) -> bytes:
    """What `records.encode_state(state, encoded, seq)` returns, with the same effect on
    `encoded` (a pending request already encoded for its topic is taken out of it)."""
    if fast_layout() and _STATE_FIELDS.issuperset(state):
        try:
            return _fast_state(state, encoded, seq)
        except _UNWRITABLE:
            pass  # the generic path writes it or says why it cannot
    return encode_state(state, encoded, seq)
