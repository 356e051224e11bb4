"""The timer's state records on the wire: a job's in-flight requests travel inside its
TimerState as the very bytes written to the request topic (docs/decisions/0008).

The scheduler works with dicts; these two functions are the only place that knows a pending
entry's `request` is encoded separately.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from tickwheel.adapters.avro import decode, encode

RequestKey = tuple[str, int]


def request_key(request: Mapping[str, Any]) -> RequestKey:
    """What identifies a request's bytes: an attempt's request never changes once written."""
    return request["execution_id"], int(request["attempt"])


def encode_state(
    state: dict[str, Any], encoded: MutableMapping[RequestKey, bytes], seq: int
) -> bytes:
    """`state` as TimerState bytes, written by timer transaction `seq`. A pending request
    already encoded for its topic is taken out of `encoded`; any other is encoded here."""
    state = {**state, "seq": seq}
    pending = state.get("pending")
    if pending:
        state["pending"] = [_with_request_bytes(entry, encoded) for entry in pending]
    return encode("TimerState", state)


def _with_request_bytes(
    entry: dict[str, Any], encoded: MutableMapping[RequestKey, bytes]
) -> dict[str, Any]:
    request = entry.get("request")
    if not isinstance(request, Mapping):
        return entry
    raw = encoded.pop(request_key(request), None)
    if raw is None:
        raw = encode("ExecutionRequest", request)
    return {**entry, "request": raw}


def decode_state(value: bytes) -> dict[str, Any]:
    """TimerState bytes (any kept version) as a dict whose pending requests are dicts again.
    Raises `UndecodableRecord` if the record or a request inside it cannot be decoded."""
    state = decode(value, "TimerState")[1]
    for entry in state["pending"]:
        raw = entry.get("request")
        if raw is not None:
            entry["request"] = decode(raw, "ExecutionRequest")[1]
    return state


def checkpoint_key(partition: int) -> str:
    """Key of a partition's checkpoint record in timers.state (written to that partition
    explicitly; it is not a job id)."""
    return f"__partition__/{partition}"


def encode_checkpoint(
    partition: int, input_offsets: dict[str, int], seq: int, now_ms: int
) -> bytes:
    """The partition's checkpoint record: a TimerState under `checkpoint_key(partition)`."""
    return encode(
        "TimerState",
        {
            "job_id": checkpoint_key(partition),
            "job_version": 0,
            "last_scheduled_time": None,
            "last_fire_time": None,
            "next_scheduled_time": None,
            "updated_at": now_ms,
            "pending": [],
            "input_offsets": input_offsets,
            "seq": seq,
        },
    )
