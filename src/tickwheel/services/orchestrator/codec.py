"""The orchestrator's hot records (`WorkflowEvent`, `WorkflowSnapshot`, `TimerCommand`)
written as Avro binary directly.

Every folded input writes about four records — its events, its instance's snapshot, the next
step's command — and the generic codec (fastavro's schema-driven writer: field lookups and
union resolution per value) was the largest single cost of the fold path (decision 0094:
~12 µs a record). Here a record is the concatenation of its fields' encodings in schema
order, with the shared Avro primitives of `tickwheel.adapters.avro.binary` (the worker's and
the timer's codecs use the same, decisions 0114 and 0116).

The bytes are identical to `encode(name, record)` (`tests/unit/services/orchestrator/test_orchestrator_codec.py`,
hypothesis). The layouts are checked against the registry's current schemas on first use: a
new version whose fields differ turns this module's fast path off for that record, which then
goes through the generic encoder (slower, still correct) until this module is taught it (the
layout test fails first). A record the fast path cannot write as it is (an unknown field, a
missing required one, a value of the wrong type) goes to the generic encoder as well, which
writes it or refuses it (`UnencodableRecord`) exactly as before (decision 0131).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.adapters.avro import default_registry, encode
from tickwheel.adapters.avro.binary import write_long as _long
from tickwheel.adapters.avro.binary import write_opt_long as _opt_long
from tickwheel.adapters.avro.binary import write_opt_string as _opt_string
from tickwheel.adapters.avro.binary import write_string as _string

_REQUIRED = "<required>"
_OPT_STRING = ["null", "string"]
_OPT_LONG = ["null", "long"]

COMMAND_KINDS = ("trigger", "backfill", "run_step", "start_timer", "cancel_timer",
                 "cancel_execution")  # fmt: skip

# (field, declared type, default) of WorkflowEvent v2, WorkflowSnapshot v1, TimerCommand v2,
# in schema order: the registry's schema with names and docs left out must equal these.
EVENT_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("event_id", "string", _REQUIRED),
    ("event_time", "long", _REQUIRED),
    ("workflow_id", "string", _REQUIRED),
    ("definition_id", "string", _REQUIRED),
    ("definition_version", "int", _REQUIRED),
    ("event_type", "string", _REQUIRED),
    ("step_id", _OPT_STRING, None),
    ("attempt", "int", 0),
    ("data", _OPT_STRING, None),
    ("seq", "long", 0),
    ("actor", _OPT_STRING, None),
    ("tenant_id", _OPT_STRING, None),
    ("execution_id", _OPT_STRING, None),
    ("error", _OPT_STRING, None),
    ("cause_input_id", _OPT_STRING, None),
    ("status", _OPT_STRING, None),
)
SNAPSHOT_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("workflow_id", "string", _REQUIRED),
    ("definition_id", "string", _REQUIRED),
    ("definition_version", "int", _REQUIRED),
    ("status", "string", _REQUIRED),
    ("seq", "long", _REQUIRED),
    ("state", _OPT_STRING, None),
    ("updated_at", "long", _REQUIRED),
    ("input_offsets", {"type": "map", "values": "long"}, {}),
)
COMMAND_LAYOUT: tuple[tuple[str, Any, Any], ...] = (
    ("command_id", "string", _REQUIRED),
    ("job_id", "string", _REQUIRED),
    ("kind", {"type": "enum", "symbols": list(COMMAND_KINDS)}, _REQUIRED),
    ("requested_at", "long", _REQUIRED),
    ("range_start", _OPT_LONG, None),
    ("range_end", _OPT_LONG, None),
    ("execution_id", _OPT_STRING, None),
    ("data", _OPT_STRING, None),
    ("workflow_id", _OPT_STRING, None),
    ("step_id", _OPT_STRING, None),
    ("attempt", "int", 0),
    ("compensation", "boolean", False),
    ("job_type", _OPT_STRING, None),
    ("payload", _OPT_STRING, None),
    ("tenant_id", _OPT_STRING, None),
    ("max_attempts", "int", 1),
    ("timer_id", _OPT_STRING, None),
    ("fire_at", _OPT_LONG, None),
)
LAYOUTS = {"WorkflowEvent": EVENT_LAYOUT, "WorkflowSnapshot": SNAPSHOT_LAYOUT,
           "TimerCommand": COMMAND_LAYOUT}  # fmt: skip
_FIELDS = {name: frozenset(f for f, _, _ in layout) for name, layout in LAYOUTS.items()}
_KIND = {name: _long(i) for i, name in enumerate(COMMAND_KINDS)}
_FALSE, _TRUE = b"\x00", b"\x01"
_EMPTY = b"\x00"  # an empty map: a zero block count
# The values a batch repeats — its inputs' instants (every event, command and snapshot of
# an input carries its `at`), step keys, execution ids, event types, statuses, steps — are
# encoded once per distinct value, in C-implemented bounded caches (`typed`: an int, a bool
# and a float that compare equal are kept apart, so a value the generic encoder would write
# differently never takes another's bytes). Unique values (event and command ids, data) are
# written directly.
_CACHE = 8192
_long_c = functools.lru_cache(maxsize=_CACHE, typed=True)(_long)
_string_c = functools.lru_cache(maxsize=_CACHE, typed=True)(_string)
_opt_string_c = functools.lru_cache(maxsize=_CACHE, typed=True)(_opt_string)
_opt_long_c = functools.lru_cache(maxsize=_CACHE, typed=True)(_opt_long)
# What the fast path may meet in a record it then hands to the generic encoder instead.
_UNWRITABLE = (TypeError, AttributeError, KeyError, ValueError, OverflowError)


def _bare(avro_type: Any) -> Any:
    """A declared type without its names and docs, comparable with the layouts above."""
    if isinstance(avro_type, list):
        return [_bare(t) for t in avro_type]
    if isinstance(avro_type, dict):
        return {k: _bare(v) for k, v in avro_type.items() if k not in ("name", "namespace", "doc")}
    return avro_type


@functools.cache
def _header(record: str) -> bytes | None:
    """The current version's header when its layout is the one this module writes, else None
    (the fast path is off for that record)."""
    current = default_registry().current(record)
    fields = tuple(
        (f["name"], _bare(f["type"]), f.get("default", _REQUIRED)) for f in current.schema["fields"]
    )
    return current.header if fields == LAYOUTS[record] else None


def fast_layouts() -> dict[str, bool]:
    """Which of the hot records the registry's current schemas let this module write."""
    return {record: _header(record) is not None for record in LAYOUTS}


# An instance's identity (id, definition, version) starts every event and snapshot of it:
# encoded once per distinct triple (bounded; cleared when full). Equal triples of str, str,
# int encode to equal bytes (a str equal to a cached one is a str: its bytes are the same).
_IDENTITY_MAX = 4096
_IDENTITIES: dict[tuple[Any, Any, Any], bytes] = {}


def _identity(workflow_id: Any, definition_id: Any, version: Any) -> bytes:
    if type(version) is not int:  # a float or bool equal to a cached int must not hit it
        raise TypeError("definition_version")
    key = (workflow_id, definition_id, version)
    found = _IDENTITIES.get(key)
    if found is None:
        if len(_IDENTITIES) >= _IDENTITY_MAX:
            _IDENTITIES.clear()
        found = _IDENTITIES[key] = _string(workflow_id) + _string(definition_id) + _long(version)
    return found


def _fast_event(header: bytes, e: Mapping[str, Any]) -> bytes:
    g = e.get
    return b"".join((
        header, _string(e["event_id"]), _long_c(e["event_time"]),
        _identity(e["workflow_id"], e["definition_id"], e["definition_version"]),
        _string_c(e["event_type"]), _opt_string_c(g("step_id")), _long_c(g("attempt", 0)),
        _opt_string(g("data")), _long_c(g("seq", 0)), _opt_string_c(g("actor")),
        _opt_string_c(g("tenant_id")), _opt_string_c(g("execution_id")),
        _opt_string(g("error")), _opt_string_c(g("cause_input_id")),
        _opt_string_c(g("status")),
    ))  # fmt: skip


def _map_of_longs(values: Mapping[str, int]) -> bytes:
    """An Avro map as one block, as fastavro writes it (a count, the entries, a zero)."""
    if not values:
        return _EMPTY
    return (_long(len(values)) + b"".join(_string(k) + _long(v) for k, v in values.items())
            + _EMPTY)  # fmt: skip


def _fast_snapshot(header: bytes, s: Mapping[str, Any]) -> bytes:
    offsets = s.get("input_offsets", {})
    if not isinstance(offsets, Mapping):
        raise TypeError("input_offsets")
    return b"".join((
        header, _identity(s["workflow_id"], s["definition_id"], s["definition_version"]),
        _string_c(s["status"]), _long_c(s["seq"]), _opt_string(s.get("state")),
        _long_c(s["updated_at"]), _map_of_longs(offsets),
    ))  # fmt: skip


def _boolean(value: Any) -> bytes:
    if type(value) is not bool:
        raise TypeError("a boolean")
    return _TRUE if value else _FALSE


def _fast_command(header: bytes, c: Mapping[str, Any]) -> bytes:
    g = c.get
    return b"".join((
        header, _string(c["command_id"]), _string_c(c["job_id"]), _KIND[c["kind"]],
        _long_c(c["requested_at"]), _opt_long_c(g("range_start")), _opt_long_c(g("range_end")),
        _opt_string_c(g("execution_id")), _opt_string(g("data")),
        _opt_string_c(g("workflow_id")), _opt_string_c(g("step_id")), _long_c(g("attempt", 0)),
        _boolean(g("compensation", False)), _opt_string_c(g("job_type")),
        _opt_string_c(g("payload")), _opt_string_c(g("tenant_id")),
        _long_c(g("max_attempts", 1)), _opt_string_c(g("timer_id")), _opt_long_c(g("fire_at")),
    ))  # fmt: skip


_WRITERS: dict[str, Callable[[bytes, Mapping[str, Any]], bytes]] = {
    "WorkflowEvent": _fast_event, "WorkflowSnapshot": _fast_snapshot,
    "TimerCommand": _fast_command,
}  # fmt: skip


def encode_record(record: str, value: Mapping[str, Any]) -> bytes:
    """`value` as `record` bytes, identical to `encode(record, value)`: the fast path for the
    orchestrator's hot records, the generic encoder for any other record, layout or value."""
    writer = _WRITERS.get(record)
    if writer is not None:
        header = _header(record)
        if header is not None and _FIELDS[record].issuperset(value):
            try:
                return writer(header, value)
            except _UNWRITABLE:
                pass  # the generic encoder writes it or says why it cannot
    return encode(record, value)
