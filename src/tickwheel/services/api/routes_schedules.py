"""`/schedules`: seed 003's vocabulary, mapped onto jobs, and the schedule preview.

A schedule is a recurring job seen through other names: `id` is `jobId`, `expression` the
cron, `timeZone` the zone, `target` the job type (or `{"type": ..., ...}`, whose other
fields go into the payload, as an `http` target's `url` does).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse

from tickwheel.core.cron import MAX_CRON_LENGTH
from tickwheel.core.describe import describe
from tickwheel.core.preview import MAX_PREVIEW_COUNT
from tickwheel.core.preview import preview_schedule as preview_rows
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.schedule import parse_schedule
from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput
from tickwheel.services.api.calendars import uses_calendar
from tickwheel.services.api.models import (
    PreviewView,
    ScheduleBody,
    SchedulePatch,
    ScheduleView,
)
from tickwheel.services.api.problems import Problem, invalid_input, problem_responses
from tickwheel.services.api.routes_job_commands import answers_pending
from tickwheel.services.api.routes_jobs import (
    BackendDep,
    JobId,
    _json,
    create_record,
    update_record,
)
from tickwheel.services.api.views import etag

router = APIRouter(tags=["schedules"])

# Core field names as this vocabulary spells them, for the pointers of a 422.
ALIASES = {"cron": "expression", "timezone": "timeZone", "type": "target", "jobId": "id"}
SCHEDULE_EXAMPLE = {
    "id": "nightly-export",
    "version": 1,
    "expression": "0 2 * * *",
    "timeZone": "Europe/London",
    "payload": {"bucket": "exports"},
    "target": "export",
    "enabled": True,
    "nextRun": "2026-12-02T02:00:00Z",
}


def schedule_view(record: dict[str, Any], now_ms: int, calendars: Any = None) -> dict[str, Any]:
    nxt = compile_record_schedule(record, calendars).next_after(now_ms)
    view = {
        "id": record["jobId"],
        "version": record["version"],
        "expression": record.get("cron"),
        "timeZone": record["timezone"],
        "payload": json.loads(record["payload"]),
        "target": record["type"],
        "enabled": record["enabled"],
        "nextRun": None if nxt is None else format_utc(nxt),
    }
    return {k: v for k, v in view.items() if v is not None}


def _respond(b: Any, record: dict[str, Any], status: int = 200) -> JSONResponse:
    headers = {"ETag": etag(record)}
    if status == 201:
        headers["Location"] = f"/v1/schedules/{record['jobId']}"
    calendars = b.known_calendars() if uses_calendar(record) else None
    view = schedule_view(record, b.now_ms(), calendars)
    return JSONResponse(view, status_code=status, headers=headers)


@router.post(
    "/schedules",
    status_code=201,
    summary="Create a schedule (seed 003)",
    responses={201: _json(ScheduleView, SCHEDULE_EXAMPLE), **problem_responses(400, 409, 422)},
)
@answers_pending
def create_schedule(
    b: BackendDep,
    body: Annotated[
        ScheduleBody,
        Body(
            openapi_examples={
                "daily": {
                    "value": {
                        "expression": "0 2 * * *",
                        "timeZone": "Europe/London",
                        "payload": {"bucket": "exports"},
                        "target": "export",
                    }
                }
            }
        ),
    ],
) -> JSONResponse:
    payload = dict(body.payload or {})
    if isinstance(body.target, str):
        job_type = body.target
    else:
        target = body.target.model_dump()
        job_type = target.pop("type")
        payload.update(target)
    spec: dict[str, Any] = {"type": job_type, "cron": body.expression, "payload": payload}
    for key, value in (("jobId", body.id), ("timezone", body.timeZone), ("enabled", body.enabled)):
        if value is not None:
            spec[key] = value
    return _respond(b, create_record(b, spec, ALIASES), 201)


# Declared before /schedules/{schedule_id}, which would otherwise take "preview" as an id.
@router.get(
    "/schedules/preview",
    summary="The next occurrences of a cron expression, as the timer will fire them",
    responses={
        200: _json(
            PreviewView,
            {
                "cron": "30 1 * * *",
                "timezone": "Europe/London",
                "description": "at 01:30 every day, Europe/London time",
                "occurrences": [
                    {
                        "scheduledMs": 1796175000000,
                        "utc": "2026-12-02T01:30:00Z",
                        "local": "2026-12-02T01:30:00+00:00",
                        "abbreviation": "GMT",
                        "note": None,
                    }
                ],
            },
        ),
        **problem_responses(422),
    },
)
def preview_schedule(
    b: BackendDep,
    # The parser's own limit: the query refuses nothing the core would accept.
    cron: Annotated[str, Query(max_length=MAX_CRON_LENGTH, examples=["30 1 * * *"])],
    timezone: Annotated[str, Query(max_length=100, examples=["Europe/London"])] = "UTC",
    count: Annotated[int, Query(ge=1, le=MAX_PREVIEW_COUNT)] = 10,
    calendar: Annotated[str | None, Query(max_length=64, examples=["uk"])] = None,
    business_days: Annotated[
        str | None, Query(alias="businessDays", max_length=20, examples=["previous"])
    ] = None,
) -> dict[str, Any]:
    """With `calendar` (a name on the cluster's `calendars` topic) and `businessDays` (`skip`,
    `next`, `previous`), the slots are compiled with that calendar as the timer compiles a job
    naming it, and a moved slot's note says from which day and why."""
    try:
        # The schedule is checked first: bad input is refused before the calendars are read.
        schedule = parse_schedule(
            cron=cron, timezone=timezone, calendar=calendar, business_days=business_days
        )
        calendars = None if calendar is None else _named_calendar(b, calendar)
        rows = preview_rows(schedule, b.now_ms(), count, calendars)
        text = describe(schedule)
    except InvalidInput as exc:
        raise invalid_input(exc, where="query") from None
    answer: dict[str, Any] = {
        "cron": cron,
        "timezone": timezone,
        "description": text,
        "occurrences": [row.as_dict() for row in rows],
    }
    if calendar is not None:
        answer["calendar"] = calendar
    if business_days is not None or calendar is not None:
        answer["businessDays"] = business_days or "skip"
    return answer


def _named_calendar(b: Any, name: str) -> dict[str, Any]:
    known = b.known_calendars()
    if name not in known:
        raise InvalidInput(
            "calendar",
            f"no calendar named {name!r} on the cluster; accepted: one `tickwheel calendars "
            "list` shows (a job naming a missing calendar has no slot until it is put)",
        )
    return {name: known[name]}


@router.get(
    "/schedules/{schedule_id}",
    summary="Get a schedule",
    responses={200: _json(ScheduleView, SCHEDULE_EXAMPLE), **problem_responses(404)},
)
def get_schedule(b: BackendDep, schedule_id: JobId) -> JSONResponse:
    return _respond(b, b.jobs.get(schedule_id))


@router.patch(
    "/schedules/{schedule_id}",
    summary="Change a schedule (seed 003), optionally at an expected version",
    responses={
        200: _json(ScheduleView, {**SCHEDULE_EXAMPLE, "version": 2, "enabled": False}),
        **problem_responses(404, 409, 422),
    },
)
@answers_pending
def patch_schedule(
    b: BackendDep,
    schedule_id: JobId,
    body: Annotated[
        SchedulePatch,
        Body(openapi_examples={"disable": {"value": {"expectedVersion": 1, "enabled": False}}}),
    ],
) -> JSONResponse:
    given = body.model_dump(exclude_unset=True)
    expected = given.pop("expectedVersion", None)
    names = {"expression": "cron", "timeZone": "timezone", "enabled": "enabled"}
    changes = {names.get(k, k): v for k, v in given.items()}
    if not changes and expected is None:
        raise Problem(
            422,
            "validation-error",
            "nothing to change; accepted: enabled, expression, timeZone, payload",
            errors=[{"pointer": "", "detail": "empty patch"}],
        )
    return _respond(b, update_record(b, schedule_id, changes, expected, ALIASES))
