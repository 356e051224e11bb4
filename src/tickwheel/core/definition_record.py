"""The stored form of a job definition (a decoded `JobDefinition` record) checked by the same
rules as its JSON form (`core/definition.py`): the timer runs this on every record it reads, live
and at restore, so what the SDK refuses never schedules, however it reached the topic."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from tickwheel.core.definition import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    check_job_id,
    validate_definition,
)
from tickwheel.core.record_schedule import freeze_specs, specs_as_json
from tickwheel.core.targets import IPNetwork
from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput

__all__ = ["check_definition_record"]

_RECORD_INSTANTS = ("phase", "startAt", "endAt", "disabledReviewBy")
_RECORD_ONLY = ("version", "createdAt", "updatedAt")


def _record_int(record: Mapping[str, Any], field: str, low: int) -> int:
    value = record.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise InvalidInput(field, f"{value!r}; accepted: an integer of at least {low}")
    return value


def check_definition_record(
    record: Mapping[str, Any],
    key: str | None,
    *,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    allowed_networks: Iterable[IPNetwork] = (),
) -> None:
    """Apply `validate_definition`'s rules to a decoded `JobDefinition` record and its key.

    The stored form differs from the JSON one only in representation (payload as JSON
    text, `runAt` as epoch ms, the zone always written, version and timestamps present);
    it is turned back into the JSON form and checked by the same code. Also: the record
    key must equal `jobId` (the timer keys jobs by the key, requests by `jobId`). Returns
    None, or raises `InvalidInput` naming the field and what is accepted.
    """
    if not isinstance(record, Mapping):
        raise InvalidInput("definition", "accepted: a JobDefinition record")
    shape = _shape(record, max_payload_bytes, allowed_networks)
    if shape is not None:
        try:
            known = shape in _VALID_SHAPES
        except TypeError:  # a container where the schema has none: checked uncached
            shape, known = None, False
        if known:
            # Everything but its identity and payload was checked already, for another job.
            _check_identity_and_payload(record, key, max_payload_bytes)
            return
    _check_record(record, key, max_payload_bytes, allowed_networks)
    if shape is not None:
        _VALID_SHAPES[shape] = None
        if len(_VALID_SHAPES) > _VALID_SHAPES_KEPT:
            del _VALID_SHAPES[next(iter(_VALID_SHAPES))]


# A million jobs in a restore share a few thousand shapes (schedule, template, policies, ...):
# what makes a record valid apart from its identity and payload is checked once per shape.
_VALID_SHAPES: dict[tuple[Any, ...], None] = {}
_VALID_SHAPES_KEPT = 65_536
_NOT_SHAPE = frozenset({"jobId", "version", "createdAt", "updatedAt", "payload", "idempotencyKey"})


def _shape(
    record: Mapping[str, Any], max_payload_bytes: int, allowed_networks: Iterable[IPNetwork]
) -> tuple[Any, ...] | None:
    """The record without what differs between otherwise identical jobs; None when the rest of
    the record cannot stand for its validity (an `http` job's target is in its payload). It
    may not hash (a container where the schema has none): the caller checks that record
    uncached."""
    if record.get("type") == "http":
        return None
    # Field names and values in the record's own order (a decoded record's is the schema's):
    # cheap to build, and two orders of the same fields are only a cache miss. The values are
    # taken in one C call; only the fields the schema makes maps or arrays are frozen (a
    # container anywhere else fails the hash below: that record is checked uncached).
    names = tuple(record)
    plan = _SHAPE_PLANS.get(names)
    if plan is None:
        plan = _shape_plan(names)
    take, containers = plan
    values = take(record)
    if containers:
        thawed = list(values)
        for at in containers:
            value = thawed[at]
            thawed[at] = tuple(value.items()) if isinstance(value, dict) else freeze_specs(value)
        values = tuple(thawed)
    count_from = None
    if record.get("maxRuns") is not None and record.get("startAt") is None:
        count_from = record.get("createdAt")  # counted from the job's creation (schedules §3)
    return (max_payload_bytes, _networks_key(allowed_networks), names, count_from, values)


# The allowed networks as a shape holds them: their text, remembered per immutable collection
# (the timer passes one constant), since an `ipaddress` network hashes in Python, not in C.
_NETWORK_KEYS: dict[int, tuple[object, tuple[str, ...]]] = {}


def _networks_key(networks: Iterable[IPNetwork]) -> tuple[str, ...]:
    remembered = _NETWORK_KEYS.get(id(networks))
    if remembered is not None and remembered[0] is networks:
        return remembered[1]
    key = tuple(str(network) for network in networks)
    if isinstance(networks, tuple | frozenset) and len(_NETWORK_KEYS) < 64:
        _NETWORK_KEYS[id(networks)] = (networks, key)  # kept alive here, so its id stays its
    return key


# The record fields whose values are maps or arrays (labels, schedules, exclude).
_CONTAINER_FIELDS = frozenset({"labels", "schedules", "exclude"})
_SHAPE_PLANS: dict[
    tuple[str, ...], tuple[Callable[[Mapping[str, Any]], tuple[Any, ...]], tuple[int, ...]]
] = {}


def _shape_plan(
    names: tuple[str, ...],
) -> tuple[Callable[[Mapping[str, Any]], tuple[Any, ...]], tuple[int, ...]]:
    """For records with these field names, in this order: what takes a record's shape values
    (as a tuple), and where among them the containers are."""
    kept = [name for name in names if name not in _NOT_SHAPE]
    getter = operator.itemgetter(*kept) if kept else None

    def take(record: Mapping[str, Any]) -> tuple[Any, ...]:
        if getter is None:
            return ()
        values = getter(record)
        return values if len(kept) > 1 else (values,)

    containers = tuple(at for at, name in enumerate(kept) if name in _CONTAINER_FIELDS)
    plan = (take, containers)
    if len(_SHAPE_PLANS) < 256:  # a handful of record layouts (one per schema version)
        _SHAPE_PLANS[names] = plan
    return plan


def _check_identity_and_payload(
    record: Mapping[str, Any], key: str | None, max_payload_bytes: int
) -> None:
    """The rules `_check_record` applies to what `_shape` leaves out, the same way."""
    job_id = _check_key(record, key)
    check_job_id(job_id)
    _record_int(record, "version", 1)
    _record_int(record, "createdAt", 0)
    _record_int(record, "updatedAt", 0)
    payload_text, payload = _payload_of(record)
    if not isinstance(payload, dict):
        raise InvalidInput("payload", f"a JSON {type(payload).__name__}; accepted: a JSON object")
    _check_size(record, payload_text, max_payload_bytes)
    idempotency_key = record.get("idempotencyKey")
    if idempotency_key is not None and not isinstance(idempotency_key, str):
        raise InvalidInput("idempotencyKey", "accepted: a string")


def _check_record(
    record: Mapping[str, Any],
    key: str | None,
    max_payload_bytes: int,
    allowed_networks: Iterable[IPNetwork],
) -> None:
    _check_key(record, key)
    version = _record_int(record, "version", 1)
    created_at = _record_int(record, "createdAt", 0)
    updated_at = _record_int(record, "updatedAt", 0)
    spec: dict[str, Any] = {
        k: v for k, v in record.items() if v is not None and k not in _RECORD_ONLY
    }
    payload_text, spec["payload"] = _payload_of(record)
    run_at = record.get("runAt")
    if run_at is not None:
        if not isinstance(run_at, int) or isinstance(run_at, bool):
            raise InvalidInput("runAt", f"{run_at!r}; accepted: epoch milliseconds")
        try:
            instant = datetime.fromtimestamp(run_at / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(
                "runAt", f"{run_at} ms is out of range; accepted: 1900-01-01 to 9000-01-01"
            ) from None
        spec["runAt"] = instant.isoformat()
        # A one-off's stored zone is the "UTC" the SDK writes; any other is refused below.
        if spec.get("timezone") == "UTC":
            del spec["timezone"]
    for name in _RECORD_INSTANTS:
        value = spec.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidInput(name, f"{value!r}; accepted: epoch milliseconds")
            spec[name] = format_utc(value)
    if "schedules" in spec:
        spec["schedules"] = specs_as_json(spec["schedules"])
    _check_size(record, payload_text, max_payload_bytes)
    validate_definition(
        spec,
        updated_at,
        version=version,
        created_at_ms=created_at,
        max_payload_bytes=max_payload_bytes,
        allowed_networks=allowed_networks,
    )


def _check_key(record: Mapping[str, Any], key: str | None) -> Any:
    """The record's `jobId`, which must be its key: the timer keys jobs by the key, requests
    by `jobId`, so a mismatch would land a job's events on another partition."""
    job_id = record.get("jobId")
    if key != job_id:
        raise InvalidInput(
            "jobId",
            f"the record key {key!r} differs from jobId {job_id!r}; accepted: a record keyed "
            "by its jobId",
        )
    return job_id


def _payload_of(record: Mapping[str, Any]) -> tuple[str, Any]:
    """(the stored payload text, its JSON value)."""
    payload_text = record.get("payload")
    if not isinstance(payload_text, str):
        raise InvalidInput("payload", "accepted: the JSON text of an object")
    try:
        return payload_text, json.loads(payload_text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "payload", f"is not JSON ({exc.msg}); accepted: the JSON text of an object"
        ) from None


def _check_size(record: Mapping[str, Any], payload_text: str, max_payload_bytes: int) -> None:
    # Published payloads were measured in compact form; measure them as stored.
    size = len(payload_text.encode()) + len((record.get("payloadTemplate") or "").encode())
    if size > max_payload_bytes:
        raise InvalidInput(
            "payload",
            f"is {size} bytes with its template; accepted: at most {max_payload_bytes} bytes",
        )
