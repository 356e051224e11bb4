"""The `ExecutionEvent`s of one attempt, encoded without building a dict per event.

Every event of an attempt (leased, heartbeats, its outcome) repeats the request's fields
(job, type, tenant, execution, attempt, slot, fire time) and the worker's id; only the event's
own fields (id, time, type, lease deadline, error, reason, details) change. `AttemptEvents`
encodes the repeated part once per attempt and writes each event as Avro around it. With the
generic codec (a dict per event, then fastavro) this was the largest share of a no-op
execution's cost (bench/reports/worker.md).

This is the worker's own logic, not a codec: which bytes repeat across an attempt and a batch.
The record's header and event types come from the generated codec of `ExecutionEvent`
(`adapters/avro/fast/execution_event.py`, decision 0214); the order the pieces are joined in is
the layout below, checked against the current schema when first used: a new schema version
whose fields differ makes `fast_layout()` False and every event goes through the generic
encoder until this module is taught the new layout (`tests/unit/services/worker/test_worker_codec.py`
fails first, and proves the bytes identical to `encode("ExecutionEvent", ...)`; decision 0114).
"""

from __future__ import annotations

import functools
import itertools
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tickwheel.adapters.avro import default_registry, encode
from tickwheel.adapters.avro.binary import write_long as _long
from tickwheel.adapters.avro.binary import write_opt_long as _opt_long
from tickwheel.adapters.avro.binary import write_opt_string as _opt_string
from tickwheel.adapters.avro.binary import write_string as _string
from tickwheel.adapters.avro.fast import execution_event as generated
from tickwheel.records import ExecutionRequest
from tickwheel.services.worker.events import Outcome, execution_event

EVENT_TYPES = generated.EXECUTION_EVENT_TYPE
_NULL_LONG = ["null", "long"]
_NULL_STRING = ["null", "string"]
# The fields of ExecutionEvent v1, in the order the pieces below are joined, as the schema
# declares their types.
EVENT_LAYOUT: tuple[tuple[str, Any], ...] = (
    ("event_id", "string"),
    ("event_time", "long"),
    ("event_type", list(EVENT_TYPES)),  # an enum: its symbols
    ("job_id", "string"),
    ("job_type", "string"),
    ("tenant_id", "string"),
    ("execution_id", "string"),
    ("attempt", "int"),
    ("scheduled_time", "long"),
    ("fire_time", _NULL_LONG),
    ("worker_id", _NULL_STRING),
    ("lease_deadline", _NULL_LONG),
    ("error", _NULL_STRING),
    ("error_kind", _NULL_STRING),
    ("reason", _NULL_STRING),
    ("details", _NULL_STRING),
)


_TYPE_INDEX = {name: _long(i) for i, name in enumerate(EVENT_TYPES)}
_TYPE_PREFIX = {name: name.encode() for name in EVENT_TYPES}  # an event id starts with it
_SMALL = [bytes((n,)) for n in range(0x80)]  # one-byte varints
_QUIET = b"\x00" * 4  # no error, error kind, reason or details: four null branches
_QUIET_DETAILS = b"\x00" * 3  # no error, error kind or reason
_UNSET = object()
_NULL_DEADLINE = b"\x00"  # no lease deadline: the null branch
# Runs of request fields, encoded once per distinct value tuple (bounded; cleared when full).
# Equal tuples encode to equal bytes: the values are strings, ints and None.
_MEMO_MAX = 4096
_LAST_TIME: tuple[int | None, bytes] = (None, b"")
_LAST_DEADLINE: tuple[int | None, bytes] = (None, _opt_long(None))
# The end of an outcome whose details are `{"duration_ms": n}` alone, for n under a second.
_DURATION_ENDS = [_QUIET_DETAILS + _opt_string(f'{{"duration_ms": {n}}}') for n in range(1000)]
# (type, tenant, attempt, slot, fire time, worker) -> the bytes of (type, tenant) and of
# (attempt, slot, fire time, worker), the two runs of an event's request fields.
_RUNS: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}


_PROCESS_SALT = uuid.uuid4().hex[:8]
_COUNTER = itertools.count()


def new_unique() -> str:
    """Unique within the worker id it goes with: a per-process salt and a counter (cheaper
    than a UUID per event, and a restarted process with a reused pid gets a new salt)."""
    return f"{_PROCESS_SALT}{next(_COUNTER):x}"


def _declared(avro_type: Any) -> Any:
    if isinstance(avro_type, dict) and avro_type.get("type") == "enum":
        return list(avro_type["symbols"])
    return avro_type


@functools.cache
def fast_layout() -> bool:
    """True when the current `ExecutionEvent` schema is the layout this module writes."""
    schema = default_registry().current("ExecutionEvent").schema
    declared = tuple((f["name"], _declared(f["type"])) for f in schema["fields"])
    return generated.fast_layout() and declared == EVENT_LAYOUT


def _header() -> bytes:
    return generated.HEADER


def details_json(details: Mapping[str, Any] | None) -> str | None:
    """The `details` field as `execution_event` writes it (an outcome's usual details, its
    duration alone, without the JSON encoder)."""
    if not details:
        return None
    if len(details) == 1 and type(details.get("duration_ms")) is int:
        return f'{{"duration_ms": {details["duration_ms"]}}}'
    return json.dumps(details, default=str)


def _middle(request: ExecutionRequest, worker_id: str) -> bytes:
    """An event's bytes from `job_id` to `worker_id`: the request's part of every event."""
    # Type and tenant, and attempt, slot, fire time and worker, repeat across a batch (a
    # schedule's jobs, one worker): both runs' bytes are written once per distinct values.
    key = (
        request["job_type"],
        request["tenant_id"],
        request["attempt"],
        request["scheduled_time"],
        request["fire_time"],
        worker_id,
    )
    runs = _RUNS.get(key)
    if runs is None:
        runs = _remember_runs(
            key,
            (
                _string(key[0]) + _string(key[1]),
                b"".join((_long(key[2]), _long(key[3]), _opt_long(key[4]), _opt_string(worker_id))),
            ),
        )
    job_id = request["job_id"].encode()
    execution_id = request["execution_id"].encode()
    return b"".join(
        (
            _SMALL[len(job_id) << 1] if len(job_id) < 64 else _long(len(job_id)),
            job_id,
            runs[0],
            _SMALL[len(execution_id) << 1] if len(execution_id) < 64 else _long(len(execution_id)),
            execution_id,
            runs[1],
        )
    )


def _remember_runs(key: tuple[Any, ...], runs: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    if len(_RUNS) >= _MEMO_MAX:
        _RUNS.clear()
    _RUNS[key] = runs
    return runs


class AttemptEvents:
    """Encodes the events of one attempt of `request` by `worker_id`."""

    __slots__ = (
        "_header",
        "_id_tail",
        "_id_tail_bytes",
        "_middle",
        "job_key",
        "request",
        "worker_id",
    )

    def __init__(self, request: ExecutionRequest, worker_id: str) -> None:
        self.request = request
        self.worker_id = worker_id
        self.job_key: str = request["job_id"]
        self._id_tail = f":{request['execution_id']}:{request['attempt']}:{worker_id}:"
        self._middle: bytes | None = None
        self._id_tail_bytes = self._id_tail.encode()
        self._header = b""
        if fast_layout():
            self._header = _header()
            self._middle = _middle(request, worker_id)

    def encode(
        self,
        event_type: str,
        *,
        event_time_ms: int,
        unique: str,
        lease_deadline_ms: int | None = None,
        error: str | None = None,
        error_kind: str | None = None,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> bytes:
        """One event's bytes, identical to `encode("ExecutionEvent", execution_event(...))`."""
        if self._middle is None:  # a schema this module was not taught: the generic path
            return encode(
                "ExecutionEvent",
                execution_event(
                    self.request,
                    event_type,
                    worker_id=self.worker_id,
                    event_time_ms=event_time_ms,
                    unique=unique,
                    lease_deadline_ms=lease_deadline_ms,
                    error=error,
                    error_kind=error_kind,
                    reason=reason,
                    details=dict(details) if details else None,
                ),
            )
        if error is None and error_kind is None and reason is None:  # most events
            if details is None:
                end = _QUIET
            else:
                duration = details.get("duration_ms") if len(details) == 1 else None
                if type(duration) is int and 0 <= duration < len(_DURATION_ENDS):
                    end = _DURATION_ENDS[duration]  # an outcome's usual details
                else:
                    end = _QUIET_DETAILS + _opt_string(details_json(details))
        else:
            end = b"".join(
                (
                    _opt_string(error),
                    _opt_string(error_kind),
                    _opt_string(reason),
                    _opt_string(details_json(details)),
                )
            )
        # A batch's events share their instants: the last one's bytes are kept (a tuple,
        # swapped whole, so threads that encode at once never see half an update).
        global _LAST_TIME, _LAST_DEADLINE
        last = _LAST_TIME
        if last[0] != event_time_ms:
            last = _LAST_TIME = (event_time_ms, _long(event_time_ms))
        deadline = _LAST_DEADLINE
        if deadline[0] != lease_deadline_ms:
            deadline = _LAST_DEADLINE = (lease_deadline_ms, _opt_long(lease_deadline_ms))
        # The event id, `<type>:<execution>:<attempt>:<worker>:<unique>`, as an Avro string:
        # its length (a zig-zag varint, one or two bytes for any id under 8 KiB), its UTF-8.
        prefix, tail, tag = _TYPE_PREFIX[event_type], self._id_tail_bytes, unique.encode()
        z = (len(prefix) + len(tail) + len(tag)) << 1
        size = (
            _SMALL[z]
            if z < 0x80
            else bytes(((z & 0x7F) | 0x80, z >> 7))
            if z < 0x4000
            else _long(z >> 1)
        )
        return b"".join(
            (
                self._header,
                size,
                prefix,
                tail,
                tag,
                last[1],
                _TYPE_INDEX[event_type],
                self._middle,
                deadline[1],
                end,
            )
        )


class BatchEvents:
    """The leases and outcomes of an inline batch, each kind written in one loop over the
    batch: a call with a dozen keyword arguments per event, and an `AttemptEvents` per
    attempt, were a third of what the events cost (decision 0162). Each record is the bytes
    `AttemptEvents.encode` gives for the same request, event and unique (the unit test holds
    them equal); an event this loop does not write (an outcome other than a plain
    `succeeded`, a schema it was not taught) goes through `AttemptEvents`."""

    __slots__ = ("_stems", "requests", "worker_id")

    def __init__(self, requests: Sequence[ExecutionRequest], worker_id: str) -> None:
        self.requests = requests
        self.worker_id = worker_id
        # Per attempt: its event ids' bytes after the type, and its `_middle`.
        self._stems: list[tuple[bytes, bytes]] = []

    def leases(
        self, event_time_ms: int, deadlines_ms: Sequence[int | None]
    ) -> list[tuple[str, bytes]]:
        """Each request's `leased` event (`deadlines_ms[i]` its lease deadline), in order."""
        worker_id = self.worker_id
        if not fast_layout():
            return [
                (
                    request["job_id"],
                    AttemptEvents(request, worker_id).encode(
                        "leased",
                        event_time_ms=event_time_ms,
                        unique=new_unique(),
                        lease_deadline_ms=deadline,
                    ),
                )
                for request, deadline in zip(self.requests, deadlines_ms, strict=True)
            ]
        header, salt, count, stems = _header(), _PROCESS_SALT, _COUNTER, self._stems
        head = _long(event_time_ms)  # after the id: the time, then the type
        head += _TYPE_INDEX["leased"]
        last_deadline: object = _UNSET  # None is a deadline's value (no deadline)
        deadline_bytes = b""
        records: list[tuple[str, bytes]] = []
        for request, deadline in zip(self.requests, deadlines_ms, strict=True):
            tail = f"leased:{request['execution_id']}:{request['attempt']}:{worker_id}:"
            tail_bytes = tail.encode()
            tag = f"{salt}{next(count):x}".encode()
            middle = _middle(request, worker_id)
            if deadline != last_deadline:
                last_deadline, deadline_bytes = deadline, _opt_long(deadline)
            z = (len(tail_bytes) + len(tag)) << 1
            size = _SMALL[z] if z < 0x80 else _long(z >> 1)
            records.append(
                (
                    request["job_id"],
                    b"".join(
                        (
                            header,
                            size,
                            tail_bytes,
                            tag,
                            head,
                            middle,
                            deadline_bytes,
                            _QUIET,
                        )
                    ),
                )
            )
            stems.append((tail_bytes[6:], middle))  # without "leased"
        return records

    def outcomes(
        self, ends: Sequence[tuple[Outcome | None, float, int]]
    ) -> list[tuple[str, bytes]]:
        """Each attempt's outcome event, in order: `ends[i]` is (its `Outcome`, or None for a
        handler that returned None, which is `succeeded`; when it ended; its milliseconds).
        Call after `leases`."""
        header, salt, count = _header(), _PROCESS_SALT, _COUNTER
        kind = _TYPE_INDEX["succeeded"]
        last_ms: int | None = None
        time_bytes = b""
        records: list[tuple[str, bytes]] = []
        stems = self._stems or [(b"", b"")] * len(self.requests)
        for request, (tail, middle), (outcome, ended, duration) in zip(
            self.requests, stems, ends, strict=True
        ):
            ended_ms = int(ended * 1000)
            if outcome is None and middle and 0 <= duration < len(_DURATION_ENDS):
                tag = f"{salt}{next(count):x}".encode()
                if ended_ms != last_ms:
                    last_ms, time_bytes = ended_ms, _long(ended_ms)
                z = (9 + len(tail) + len(tag)) << 1  # 9: "succeeded"
                size = _SMALL[z] if z < 0x80 else _long(z >> 1)
                records.append(
                    (
                        request["job_id"],
                        b"".join(
                            (
                                header,
                                size,
                                b"succeeded",
                                tail,
                                tag,
                                time_bytes,
                                kind,
                                middle,
                                _NULL_DEADLINE,
                                _DURATION_ENDS[duration],
                            )
                        ),
                    )
                )
                continue
            events = AttemptEvents(request, self.worker_id)
            if outcome is None:
                value = events.encode(
                    "succeeded",
                    event_time_ms=ended_ms,
                    unique=new_unique(),
                    details={"duration_ms": duration},
                )
            else:
                value = events.encode(
                    outcome.event_type,
                    event_time_ms=ended_ms,
                    unique=new_unique(),
                    error=outcome.error,
                    error_kind=outcome.error_kind,
                    reason=outcome.reason,
                    details=outcome.details,
                )
            records.append((request["job_id"], value))
        return records
