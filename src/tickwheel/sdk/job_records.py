"""A job definition as a record (decision 0127's one shape): validated by the scheduling core
into the Avro `JobDefinition`, turned back into the JSON spec it was made from, and decoded as
a read finds it. Split from `sdk/jobs.py` (the client); every name here is importable from
there as before.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.core import definition as _definition
from tickwheel.core.record_schedule import record_schedule, specs_as_json
from tickwheel.core.schedule import Schedule
from tickwheel.environment import env_int
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.sdk.ssrf import (
    RequestRefused,
    Resolver,
    SsrfGuard,
    address_problem,
    system_resolver,
)

MAX_PAYLOAD_BYTES_VAR = "TICKWHEEL_MAX_PAYLOAD_BYTES"
KNOWN_FIELDS = set(_definition.KNOWN_FIELDS)
PRIORITIES = _definition.PRIORITIES
MISFIRE_POLICIES = _definition.MISFIRE_POLICIES
OVERLAP_POLICIES = _definition.OVERLAP_POLICIES
parse_instant_ms = _definition.parse_instant_ms


class UnknownJob(TickwheelError, LookupError):
    """No job has this id: it was never created, or it was deleted (`job_id` says which)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id!r} (never created, or deleted)")
        self.job_id = job_id


class JobExists(TickwheelError, ValueError):
    """`create` was given the id of a job that exists: update it instead (`job_id`)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id!r} exists already; update it instead of creating it")
        self.job_id = job_id


def validate_job(
    spec: dict[str, Any],
    now_ms: int,
    version: int = 1,
    created_at_ms: int | None = None,
    *,
    resolver: Resolver | None = None,
    max_payload_bytes: int | None = None,
) -> dict[str, Any]:
    """A JSON job definition (DESIGN §13 field names) checked and turned into the Avro
    `JobDefinition` record. Raises InvalidInput naming the field and what is accepted.

    The rules are the core's (`tickwheel.core.definition`), which the timer applies to
    every record it reads too. On top, an `http` job's host name is resolved here (the
    core does no I/O) and refused if it resolves to an address the worker's SSRF guard
    would refuse; a name that does not resolve from here is left to the worker, whose
    network may differ. `max_payload_bytes` defaults to TICKWHEEL_MAX_PAYLOAD_BYTES (the timer
    applies the same limit), read at the call: nothing here reads the environment at import.
    """
    if max_payload_bytes is None:
        max_payload_bytes = payload_limit()
    guard = SsrfGuard.from_env()
    record = _definition.validate_definition(
        spec,
        now_ms,
        version=version,
        created_at_ms=created_at_ms,
        new_job_id=str(uuid.uuid4()),
        max_payload_bytes=max_payload_bytes,
        allowed_networks=guard.allowed_networks,
    )
    if record["type"] == "http" and record["payloadTemplate"] is None:
        _vet_http_host(json.loads(record["payload"]).get("url"), guard, resolver)
    return dict(record)


def payload_limit(environ: Mapping[str, str] | None = None) -> int:
    """The largest payload a definition may carry: TICKWHEEL_MAX_PAYLOAD_BYTES, else 64 KiB;
    a bad value is refused in one line naming the variable."""
    return env_int(MAX_PAYLOAD_BYTES_VAR, _definition.DEFAULT_MAX_PAYLOAD_BYTES, environ=environ)


def _vet_http_host(url: str, guard: SsrfGuard, resolver: Resolver | None) -> None:
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    try:
        ipaddress.ip_address(host.split("%")[0])
        return  # a literal: the core has judged it already
    except ValueError:
        pass
    try:
        addresses = (resolver or system_resolver)(host, port)
    except RequestRefused:
        return
    for text in addresses:
        try:
            address = ipaddress.ip_address(text.split("%")[0])
        except ValueError:
            continue
        problem = address_problem(address, guard.allowed_networks)
        if problem is not None:
            raise InvalidInput(
                "payload.url",
                f"host {host!r} resolves to {problem}; accepted: a host with public addresses "
                "only, or one in TICKWHEEL_HTTP_ALLOWED_NETWORKS",
            )


def definition_to_spec(record: dict[str, Any]) -> dict[str, Any]:
    """The JSON view of a stored definition (what `jobs get` prints and an update starts from)."""
    spec = {k: v for k, v in record.items() if v is not None}
    spec["payload"] = json.loads(record["payload"])
    if isinstance(record.get("freshness"), str):  # JSON text in the record, an object here
        spec["freshness"] = json.loads(record["freshness"])
    # Instants are stored as epoch ms and written as ISO 8601 (what an update starts from).
    for name in ("runAt", "phase", "startAt", "endAt", "disabledReviewBy"):
        if record.get(name) is not None:
            spec[name] = (
                datetime.fromtimestamp(record[name] / 1000, tz=UTC)
                .isoformat()
                .replace("+00:00", "Z")
            )
    if record.get("schedules") is not None:  # their phases too (JobDefinition v5)
        spec["schedules"] = specs_as_json(record["schedules"])
    return spec


RECORD_ONLY_FIELDS = ("version", "createdAt", "updatedAt")


def as_spec(document: dict[str, Any]) -> dict[str, Any]:
    """A definition as `create` and `update` take it: a stored record (what `get` returns:
    `payload` as JSON text, instants as epoch ms, with `version`, `createdAt`, `updatedAt`)
    becomes the JSON spec it was made from; a spec is returned as it is. So what a read
    returns can be written back unchanged: the client has one shape, the record."""
    if not any(name in document for name in RECORD_ONLY_FIELDS):
        return document
    spec = definition_to_spec(document)
    for name in RECORD_ONLY_FIELDS:
        spec.pop(name, None)
    return spec


def _definition_of(value: bytes | None) -> dict[str, Any] | None:
    """A stored definition, or None for a tombstone or a record that is not a definition (a
    producer's garbage, which the timer dead-letters: it is nobody's job)."""
    if value is None:
        return None
    try:
        return decode(value, "JobDefinition")[1]
    except UndecodableRecord:
        return None


def schedule_of(record: dict[str, Any]) -> Schedule:
    """The schedule of a stored definition (cron, interval or one-off, with its bounds)."""
    return record_schedule(record)
