"""Request and response shapes, for the OpenAPI document and the first line of validation.

The scheduling core remains the one judge of a definition (`tickwheel.core.definition`):
these models check JSON types strictly (no "5" for 5) and forbid unknown fields, and the
core checks everything else, naming the field; both become 422 problems with pointers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tickwheel.core.definition import MISFIRE_POLICIES, OVERLAP_POLICIES, PRIORITIES
from tickwheel.core.schedule import DST_POLICIES

# Seed 000 §3, verbatim: a one-off and a daily job whose payload names its period.
SEED_ONE_OFF: dict[str, Any] = {
    "type": "reconcile_daily",
    "payload": {"date": "2026-07-31"},
    "runAt": "2026-08-01T02:00:00Z",
    "priority": "normal",
    "maxAttempts": 5,
    "idempotencyKey": "reconcile:2026-07-31",
}
SEED_CRON: dict[str, Any] = {
    "type": "reconcile_daily",
    "cron": "0 2 * * *",
    "timezone": "Europe/London",
    "payloadTemplate": {"date": "{{ periodStart | date }}"},
    "expectedMaxInterval": "26h",
}
JOB_EXAMPLE: dict[str, Any] = {
    "jobId": "nightly-reconcile",
    "version": 1,
    "type": "reconcile_daily",
    "cron": "0 2 * * *",
    "timezone": "Europe/London",
    "payload": {},
    "payloadTemplate": {"date": "{{ periodStart | date }}"},
    "expectedMaxInterval": "26h",
    "enabled": True,
    "nextRun": "2026-12-02T02:00:00Z",
    "description": "at 02:00 every day, Europe/London time",
}


def _enum(values: tuple[str, ...]) -> Any:
    # Documented as an enum (so generated requests use it) but judged by the core, whose
    # message says what is accepted.
    return Field(default=None, json_schema_extra={"enum": [*values, None]})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class JobSpec(_Strict):
    """A job definition (DESIGN §13 field names). `payloadTemplate` may be a JSON object
    whose strings hold placeholders, or the template's text."""

    model_config = ConfigDict(json_schema_extra={"examples": [SEED_ONE_OFF, SEED_CRON]})

    jobId: str | None = None
    type: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any] | None = None
    payloadTemplate: dict[str, Any] | str | None = None
    runAt: str | None = None
    cron: str | None = None
    timezone: str | None = None
    every: str | None = None
    phase: str | None = None
    startAt: str | None = None
    endAt: str | None = None
    maxRuns: int | None = None
    priority: str | None = _enum(PRIORITIES)
    maxAttempts: int | None = None
    idempotencyKey: str | None = None
    expectedMaxInterval: str | None = None
    jitter: str | None = None
    misfirePolicy: str | None = _enum(MISFIRE_POLICIES)
    maxCatchUp: int | None = None
    overlapPolicy: str | None = _enum(OVERLAP_POLICIES)
    dstPolicy: str | None = _enum(DST_POLICIES)
    tenantId: str | None = None
    enabled: bool | None = None
    labels: dict[str, str] | None = None
    maxRunTime: str | None = None
    # Several specs, exclusions and a holiday calendar's business-day rule (docs/schedules.md);
    # checked by the core's validator like every other field.
    schedules: list[dict[str, Any]] | None = None
    exclude: list[str] | None = None
    calendar: str | None = None
    businessDays: str | None = _enum(("skip", "next", "previous"))


class JobPatch(_Strict):
    """A JSON merge patch of a definition: the fields to change (`null` clears an optional
    one), and optionally `expectedVersion`, refused with 409 if the job has moved on."""

    model_config = ConfigDict(extra="allow")

    expectedVersion: int | None = Field(default=None, ge=1)


class JobView(BaseModel):
    """A stored definition as JSON, with `nextRun` (recurring) or `scheduledFor` (one-off)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [JOB_EXAMPLE]})

    jobId: str
    version: int
    type: str
    enabled: bool
    payload: dict[str, Any]
    payloadTemplate: dict[str, Any] | str | None = None
    nextRun: str | None = None
    scheduledFor: str | None = None
    description: str | None = None


class JobList(BaseModel):
    items: list[JobView]
    nextCursor: str | None = None


class PauseBody(_Strict):
    reason: str | None = Field(default=None, max_length=500)


class BackfillBody(_Strict):
    """Every slot of the job's schedule in (from, to]; `dryRun` counts them and sends nothing."""

    from_: str = Field(alias="from", examples=["2026-11-01T00:00:00Z"])
    to: str = Field(examples=["2026-11-12T00:00:00Z"])
    dryRun: bool = False


class BackfillView(BaseModel):
    jobId: str
    slots: int
    dryRun: bool
    commandId: str | None = None


class CommandView(BaseModel):
    """A command accepted for the job's owning timer (carried out asynchronously)."""

    commandId: str
    jobId: str
    kind: str
    requestedAt: int
    rangeStart: int | None = None
    rangeEnd: int | None = None


class Target(_Strict):
    """What a schedule runs: the job type and, for an `http` target, its request fields."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1, max_length=100)


class ScheduleBody(_Strict):
    """Seed 003's schedule: `expression` (cron), `timeZone`, `payload`, `target`."""

    id: str | None = None
    expression: str
    timeZone: str | None = None
    payload: dict[str, Any] | None = None
    target: str | Target
    enabled: bool | None = None


class SchedulePatch(_Strict):
    expectedVersion: int | None = Field(default=None, ge=1)
    enabled: bool | None = None
    expression: str | None = None
    timeZone: str | None = None
    payload: dict[str, Any] | None = None


class ScheduleView(BaseModel):
    id: str
    version: int
    expression: str | None = None
    timeZone: str
    payload: dict[str, Any]
    target: str
    enabled: bool
    nextRun: str | None = None


class PreviewRowView(BaseModel):
    scheduledMs: int
    utc: str
    local: str
    abbreviation: str
    note: str | None = None


class PreviewView(BaseModel):
    cron: str
    timezone: str
    description: str
    occurrences: list[PreviewRowView]
    calendar: str | None = None  # given with ?calendar=: the holiday calendar compiled with
    businessDays: str | None = None  # the business-day rule (skip with a calendar alone)


class CancelBody(_Strict):
    reason: str | None = Field(default=None, max_length=500)
    jobId: str | None = None


class CancelView(BaseModel):
    controlId: str
    executionId: str
    jobId: str | None = None
    kind: str
    requestedAt: int
    reason: str | None = None


class Health(BaseModel):
    status: str
