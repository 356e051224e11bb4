"""`/jobs`: create, read, list, patch, delete, pause, resume, trigger, backfill.

Writes go through the backend's jobs client. With the single writer running they are
commands judged by the owner of the job's partition (decisions 0099, 0126): 201/200/204, a 409
with `currentVersion`, a 404, or a 202 with `/v1/job-commands/{id}` when the verdict is late
(`routes_job_commands`). Without one, the API's client checks `expectedVersion` and publishes
under a lock per job, linearizable through one API instance only (decision 0101).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from tickwheel.core.definition import MAX_BACKFILL, parse_instant_ms
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import JobExists
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.calendars import compile_job, uses_calendar
from tickwheel.services.api.idempotency import derived_command_id, derived_job_id
from tickwheel.services.api.keys import DEFAULT_TENANT
from tickwheel.services.api.models import (
    JOB_EXAMPLE,
    SEED_CRON,
    SEED_ONE_OFF,
    BackfillBody,
    BackfillView,
    CommandView,
    JobList,
    JobPatch,
    JobSpec,
    JobView,
    PauseBody,
)
from tickwheel.services.api.problems import Problem, invalid_input, problem_responses
from tickwheel.services.api.routes_job_commands import (
    COMMAND_EXAMPLE,
    PENDING_EXAMPLE,
    answers_pending,
    command_view,
    create_record_async,
    keyed_write,
    recorded_response,
    run_keyed_async,
    update_record_async,
)
from tickwheel.services.api.routes_job_commands import (
    create_record as create_record,
)
from tickwheel.services.api.routes_job_commands import router as commands_router
from tickwheel.services.api.routes_job_commands import (
    update_record as update_record,
)
from tickwheel.services.api.tenancy import TenantJobs
from tickwheel.services.api.views import (
    decode_cursor,
    encode_cursor,
    etag,
    job_filter,
    job_view,
    parse_etag,
)

log = logging.getLogger("tickwheel.api")
router = APIRouter(tags=["jobs"])
router.include_router(commands_router)

MAX_PAGE = 500
# Where a pause's reason is kept until the definition has a field of its own for it.
PAUSE_REASON_LABEL = "tickwheel/paused-reason"
IMMUTABLE = ("jobId", "tenantId", "version", "createdAt", "updatedAt")


async def backend(request: Request) -> Backend:
    """The app's backend, narrowed to the tenant of the request's key (set by the door).
    Async: it does no I/O, and a sync dependency is run on the thread pool, a hand-off to
    another thread and back per request for nothing (little CPU, but a wait for a thread
    when the machine is loaded)."""
    value: Backend = request.app.state.backend
    principal = getattr(request.state, "principal", None)
    if principal is None:
        return value
    return dataclasses.replace(
        value, jobs=TenantJobs(value.jobs, principal.tenant_id), tenant_id=principal.tenant_id
    )


BackendDep = Annotated[Backend, Depends(backend)]
JobId = Annotated[str, Path(min_length=1, max_length=200, examples=["nightly-reconcile"])]


def _json(model: type, example: Any) -> dict[str, Any]:
    return {"model": model, "content": {"application/json": {"example": example}}}


# A write whose verdict is late (decision 0126): the command is judged later.
_PENDING = {
    "description": "Accepted: the verdict is late; follow Location",
    "content": {"application/json": {"example": PENDING_EXAMPLE}},
}


def job_response(
    b: Backend, record: dict[str, Any], status: int = 200, location: bool = False
) -> JSONResponse:
    headers = {"ETag": etag(record)}
    if location:
        headers["Location"] = f"/v1/jobs/{record['jobId']}"
    calendars = b.known_calendars() if uses_calendar(record) else None
    view = job_view(record, b.now_ms(), calendars)
    return JSONResponse(view, status_code=status, headers=headers)


@router.post(
    "/jobs",
    status_code=201,
    summary="Create a job",
    responses={
        201: _json(JobView, JOB_EXAMPLE),
        202: _PENDING,
        **problem_responses(400, 409, 422, 503),
    },
)
@answers_pending
async def create_job(
    b: BackendDep,
    request: Request,
    spec: Annotated[
        JobSpec,
        Body(
            openapi_examples={
                "one-off": {"summary": "Seed 000: a one-off", "value": SEED_ONE_OFF},
                "daily": {"summary": "Seed 000: daily, with a template", "value": SEED_CRON},
            }
        ),
    ],
) -> JSONResponse:
    body = spec.model_dump(exclude_unset=True)
    key = getattr(request.state, "idempotency_key", None)
    derived = None
    if key is not None and not body.get("jobId"):
        # Every retry with this key names the same job: a crash between the job's write and
        # the key's record cannot make a second one (decision 0069).
        derived = body["jobId"] = derived_job_id(b.tenant_id or DEFAULT_TENANT, key)
    keyed = keyed_write(request, lambda r: job_response(b, r, 201, location=True))
    # A coroutine (decision 0165): the command's acknowledgement and verdict are awaited on
    # the event loop, no route thread held for them.
    try:
        record = await run_keyed_async(request, keyed, lambda: create_record_async(b, body))
    except JobExists:
        if derived is None:
            raise
        # Made by this key's first request, whose record was lost (a read may wait: a thread).
        record = await run_in_threadpool(b.jobs.get, derived)
    recorded = None if keyed is None else recorded_response(keyed)
    return recorded or job_response(b, record, 201, location=True)


@router.get(
    "/jobs",
    summary="List jobs, ordered by id, a page at a time; filter by type, enabled, labels "
    "(`label=k:v`, repeatable, all must match), owner (the `owner` label), id substring",
    responses={
        200: _json(JobList, {"items": [JOB_EXAMPLE], "nextCursor": None}),
        **problem_responses(422, 503),
    },
)
def list_jobs(
    b: BackendDep,
    response: Response,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
    type: Annotated[str | None, Query(max_length=100)] = None,
    enabled: bool | None = None,
    label: Annotated[list[str] | None, Query(max_length=300, examples=[["team:payments"]])] = None,
    owner: Annotated[str | None, Query(max_length=200)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    after = decode_cursor(cursor) if cursor else None
    keep = job_filter(type=type, enabled=enabled, labels=label or [], owner=owner, q=q)
    records = [r for r in b.jobs.list() if (after is None or r["jobId"] > after) and keep(r)]
    page = records[:limit]
    next_cursor = encode_cursor(page[-1]["jobId"]) if len(records) > limit else None
    if next_cursor:
        given = {
            "limit": limit,
            "cursor": next_cursor,
            "type": type,
            "q": q,
            "owner": owner,
            "enabled": None if enabled is None else str(enabled).lower(),
            "label": label,
        }
        query = urlencode({k: v for k, v in given.items() if v is not None}, doseq=True)
        response.headers["Link"] = f'</v1/jobs?{query}>; rel="next"'
    now = b.now_ms()
    calendars = b.known_calendars() if any(uses_calendar(r) for r in page) else None
    return {"items": [job_view(r, now, calendars) for r in page], "nextCursor": next_cursor}


@router.get(
    "/jobs/{job_id}",
    summary="Get a job",
    responses={
        200: _json(JobView, JOB_EXAMPLE),
        304: {"description": "Not modified"},
        **problem_responses(404, 503),
    },
)
def get_job(
    b: BackendDep,
    job_id: JobId,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    record = b.jobs.get(job_id)
    if if_none_match is not None and parse_etag(if_none_match) == record["version"]:
        return Response(status_code=304, headers={"ETag": etag(record)})
    return job_response(b, record)


@router.patch(
    "/jobs/{job_id}",
    summary="Change a job (JSON merge patch), optionally at an expected version",
    responses={
        200: _json(JobView, {**JOB_EXAMPLE, "version": 2}),
        202: _PENDING,
        **problem_responses(404, 409, 412, 422, 503),
    },
)
@answers_pending
async def patch_job(
    b: BackendDep,
    job_id: JobId,
    patch: Annotated[
        JobPatch,
        Body(
            openapi_examples={
                "move": {"value": {"expectedVersion": 1, "cron": "30 2 * * *"}},
            }
        ),
    ],
    if_match: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    changes = patch.model_dump(exclude_unset=True)
    expected = changes.pop("expectedVersion", None)
    for name in IMMUTABLE:
        if name in changes:
            raise Problem(
                422,
                "validation-error",
                f"{name}: cannot be changed; accepted: the definition's other fields",
                errors=[{"pointer": f"/{name}", "detail": "immutable"}],
            )
    if if_match is not None:
        wanted = parse_etag(if_match)
        current = (await run_in_threadpool(b.jobs.get, job_id))["version"]
        if wanted != current:
            raise Problem(
                412,
                "precondition-failed",
                f"If-Match {if_match!r} does not match the current version v{current}",
                currentVersion=current,
            )
        expected = expected if expected is not None else wanted
    # Awaited on the event loop as a create is, when the jobs client can (decision 0165).
    return job_response(b, await update_record_async(b, job_id, changes, expected))


@router.delete(
    "/jobs/{job_id}",
    status_code=204,
    summary="Delete a job (a tombstone: it stops firing)",
    responses={204: {"description": "Deleted"}, 202: _PENDING, **problem_responses(404, 503)},
)
@answers_pending
async def delete_job(b: BackendDep, job_id: JobId) -> Response:
    # Awaited on the event loop as a create is, when the jobs client can (decision 0165).
    ask = getattr(b.jobs, "creates_await", None)
    if ask is not None and ask() and hasattr(b.jobs, "delete_async"):
        await b.jobs.delete_async(job_id)
    else:
        await run_in_threadpool(b.jobs.delete, job_id)
    return Response(status_code=204)


@router.post(
    "/jobs/{job_id}/pause",
    summary="Pause a job, with a reason",
    responses={
        200: _json(JobView, {**JOB_EXAMPLE, "enabled": False}),
        202: _PENDING,
        **problem_responses(404, 422, 503),
    },
)
@answers_pending
async def pause_job(
    b: BackendDep,
    job_id: JobId,
    body: Annotated[
        PauseBody | None,
        Body(openapi_examples={"reason": {"value": {"reason": "upstream outage, INC-42"}}}),
    ] = None,
) -> JSONResponse:
    reason = body.reason if body else None
    changes: dict[str, Any] = {"enabled": False}
    if reason:
        labels = dict((await run_in_threadpool(b.jobs.get, job_id)).get("labels") or {})
        changes["labels"] = {**labels, PAUSE_REASON_LABEL: reason}
    record = await update_record_async(b, job_id, changes, None)
    log.info("job paused", extra={"action": "job_paused", "job_id": job_id, "reason": reason})
    return job_response(b, record)


@router.post(
    "/jobs/{job_id}/resume",
    summary="Resume a paused job",
    responses={200: _json(JobView, JOB_EXAMPLE), 202: _PENDING, **problem_responses(404, 503)},
)
@answers_pending
async def resume_job(b: BackendDep, job_id: JobId) -> JSONResponse:
    labels = dict((await run_in_threadpool(b.jobs.get, job_id)).get("labels") or {})
    changes: dict[str, Any] = {"enabled": True}
    if labels.pop(PAUSE_REASON_LABEL, None) is not None:
        changes["labels"] = labels
    return job_response(b, await update_record_async(b, job_id, changes, None))


@router.post(
    "/jobs/{job_id}/trigger",
    status_code=202,
    summary="Fire a job now, once, outside its schedule",
    responses={202: _json(CommandView, COMMAND_EXAMPLE), **problem_responses(404, 503)},
)
def trigger_job(b: BackendDep, job_id: JobId) -> dict[str, Any]:
    return command_view(b.jobs.trigger(job_id))


@router.post(
    "/jobs/{job_id}/backfill",
    status_code=202,
    summary="Emit every slot of the schedule in (from, to]; dryRun counts them",
    responses={
        200: _json(BackfillView, {"jobId": "nightly-reconcile", "slots": 11, "dryRun": True}),
        202: _json(
            BackfillView,
            {
                "jobId": "nightly-reconcile",
                "slots": 11,
                "dryRun": False,
                "commandId": "5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10",
            },
        ),
        **problem_responses(404, 422, 503),
    },
)
def backfill_job(
    request: Request,
    b: BackendDep,
    job_id: JobId,
    body: Annotated[
        BackfillBody,
        Body(
            openapi_examples={
                "dry-run": {
                    "value": {
                        "from": "2026-11-01T00:00:00Z",
                        "to": "2026-11-12T00:00:00Z",
                        "dryRun": True,
                    }
                }
            }
        ),
    ],
) -> JSONResponse:
    try:
        from_ms = parse_instant_ms(body.from_, "from")
        to_ms = parse_instant_ms(body.to, "to")
        if to_ms <= from_ms:
            raise InvalidInput("to", "must be after `from`")
    except InvalidInput as exc:
        raise invalid_input(exc) from None
    compiled = compile_job(b.known_calendars, b.jobs.get(job_id))
    slots = len(compiled.first(from_ms, to_ms, MAX_BACKFILL + 1))
    if slots > MAX_BACKFILL:
        raise invalid_input(
            InvalidInput(
                "from",
                f"the range holds more than {MAX_BACKFILL} slots; accepted: at most that many "
                "(split the range into several backfills)",
            )
        )
    view: dict[str, Any] = {"jobId": job_id, "slots": slots, "dryRun": body.dryRun}
    if body.dryRun:
        return JSONResponse(view, status_code=200)
    try:
        # A keyed backfill's command id comes from its key: a retry after a lost answer
        # names the same executions (decision 0121), never a second run of every slot.
        slot = getattr(request.state, "idempotency_slot", None)
        command_id = derived_command_id(slot) if slot is not None else None
        command = b.jobs.backfill(job_id, from_ms, to_ms, command_id)
    except InvalidInput as exc:
        raise invalid_input(exc) from None
    return JSONResponse({**view, "commandId": command["command_id"]}, status_code=202)
