"""`/executions` (seed 000) and `/runs` (seed 003): one execution's timeline, cancel, and a
run's retry (a new execution, through its dead letter as the console's retry goes: 0102).

The timeline is read from the history store, as `tickwheel executions get` does: eventually
consistent, so an execution the history sink has not written yet is a 404 for a moment.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request
from fastapi.responses import JSONResponse

from tickwheel.history import ExecutionNotFound, execution_timeline
from tickwheel.sdk.dead_letters import AlreadyResolved, DeadLettersClient, retry_execution
from tickwheel.services.api.models import CancelBody, CancelView
from tickwheel.services.api.problems import Problem, problem_responses
from tickwheel.services.api.routes_dead_letter_actions import (
    RetryBody,
    _by,
    problem_of,
    visible_letters,
)
from tickwheel.services.api.routes_jobs import BackendDep, _json
from tickwheel.services.api.tenancy import owner_of

router = APIRouter(tags=["executions"])

ExecutionId = Annotated[str, Path(min_length=1, max_length=200)]
TIMELINE_EXAMPLE = {
    "execution_id": "3f0c2a9e-7d1b-4c55-a0a4-9d3c6f2b1e77",
    "job_id": "nightly-reconcile",
    "job_type": "reconcile_daily",
    "scheduled_time": "2026-12-01T02:00:00+00:00",
    "status": "succeeded",
    "attempts": [{"attempt": 1, "outcome": "succeeded", "worker_id": "worker-1"}],
}


def read_timeline(b: Any, execution_id: str) -> dict[str, Any]:
    """The timeline as JSON values, if the execution is the request's tenant's; another
    tenant's is not found, like one that never ran."""
    reader = b.open_history()
    try:
        timeline = execution_timeline(reader, execution_id)
    finally:
        reader.close()
    if b.tenant_id is not None and owner_of(timeline) != b.tenant_id:
        raise ExecutionNotFound(execution_id)
    # The history's values include datetimes; the CLI's --json prints them the same way.
    value: dict[str, Any] = json.loads(json.dumps(timeline, default=str))
    return value


def _timeline(b: Any, execution_id: str) -> JSONResponse:
    return JSONResponse(read_timeline(b, execution_id))


TIMELINE_RESPONSES: dict[int | str, Any] = {
    200: {
        "description": "The timeline: attempts, leases, heartbeats, outcome",
        "content": {
            "application/json": {
                "schema": {"type": "object", "additionalProperties": True},
                "example": TIMELINE_EXAMPLE,
            }
        },
    },
    **problem_responses(404, 503),
}


@router.get(
    "/executions/{execution_id}",
    summary="An execution's timeline (or, for seed 000, "
    "a workflow instance's: which step, since when, what failed)",
    responses=TIMELINE_RESPONSES,
)
def get_execution(b: BackendDep, request: Request, execution_id: ExecutionId) -> JSONResponse:
    try:
        return _timeline(b, execution_id)
    except ExecutionNotFound:
        # Seed 000 calls a workflow instance an execution (its steps are retried under
        # /executions/{id}/steps): no job execution by that id, so perhaps a workflow's.
        from tickwheel.sdk.workflows import UnknownWorkflow
        from tickwheel.services.api.routes_workflows import Caller, read_workflow

        try:
            return JSONResponse(read_workflow(Caller(request), execution_id))
        except UnknownWorkflow:
            raise ExecutionNotFound(execution_id) from None


@router.get(
    "/runs/{run_id}",
    summary="A run's timeline (seed 003: a run is an execution)",
    responses=TIMELINE_RESPONSES,
)
def get_run(b: BackendDep, run_id: ExecutionId) -> JSONResponse:
    return _timeline(b, run_id)


@router.post(
    "/executions/{execution_id}/cancel",
    status_code=202,
    summary="Cancel an execution: a queued attempt never starts, a running one is signalled",
    responses={
        202: _json(
            CancelView,
            {
                "controlId": "9a7c7d0e-51f4-4c0e-8f7a-2f4b1c0d9e11",
                "executionId": TIMELINE_EXAMPLE["execution_id"],
                "jobId": "nightly-reconcile",
                "kind": "cancel",
                "requestedAt": 1796116313410,
                "reason": "customer closed",
            },
        ),
        **problem_responses(404, 422, 503),
    },
)
def cancel_execution(
    b: BackendDep,
    execution_id: ExecutionId,
    body: Annotated[
        CancelBody | None,
        Body(openapi_examples={"reason": {"value": {"reason": "customer closed"}}}),
    ] = None,
) -> dict[str, Any]:
    _may_cancel(b, execution_id, body.jobId if body else None)
    record = b.cancel(
        execution_id,
        job_id=body.jobId if body else None,
        reason=body.reason if body else None,
    )
    return {
        "controlId": record["control_id"],
        "executionId": record["execution_id"],
        "jobId": record["job_id"],
        "kind": record["kind"],
        "requestedAt": record["requested_at"],
        "reason": record["reason"],
    }


def _may_cancel(b: Any, execution_id: str, job_id: str | None) -> None:
    """A tenant cancels only its own executions: the history must show the execution is its
    own, or the body must name a job of its own (a queued execution the history has not
    recorded yet); else 404, as for an execution that does not exist."""
    if job_id is not None:
        b.jobs.get(job_id)  # another tenant's job is an UnknownJob (404)
    try:
        timeline = read_timeline(b, execution_id)
    except ExecutionNotFound:
        if job_id is None:
            raise ExecutionNotFound(execution_id) from None
        return
    except Exception:
        if job_id is None:
            raise
        return  # the history is away; the job named is the tenant's
    if job_id is not None and timeline.get("job_id") not in (None, job_id):
        raise ExecutionNotFound(execution_id)


#: A run's statuses that a retry answers with a new execution; the others are refused (409).
RETRYABLE = ("failed", "dead_lettered", "cancelled")
RETRY_EXAMPLE = {
    "runId": TIMELINE_EXAMPLE["execution_id"],
    "jobId": "nightly-reconcile",
    "executionId": "0d3e5a47-8b1c-5f2e-9a6d-4c7b8e1f2a30",
    "commandId": "9a7c7d0e-51f4-4c0e-8f7a-2f4b1c0d9e11",
    "via": "dead-letter",
    "deadLetterId": f"dlq:{TIMELINE_EXAMPLE['execution_id']}",
}


def _retry_run(
    request: Request, b: Any, run_id: str, note: str | None, by: str | None, noun: str = "run"
) -> Any:
    timeline = read_timeline(b, run_id)  # unknown, or another tenant's: 404
    status = timeline.get("status")
    if status not in RETRYABLE:
        code = "run-succeeded" if status == "succeeded" else "run-not-finished"
        raise Problem(
            409,
            code,
            f"{noun} {run_id!r} is {status}; accepted: one that failed, "
            "was dead-lettered or was cancelled",
            runStatus=status,
        )
    client = DeadLettersClient(b.bootstrap, b.clock, jobs=b.jobs, tenant_id=b.tenant_id)
    try:
        done = retry_execution(
            client,
            visible_letters(request, b),
            run_id,
            str(timeline.get("job_id") or ""),
            by=_by(request, by),
            note=note,
        )
    except AlreadyResolved as exc:
        raise problem_of(exc) from None
    return JSONResponse(
        status_code=202,
        content={
            "runId": run_id,
            "jobId": timeline.get("job_id"),
            "executionId": done["execution_id"],
            "commandId": done["command_id"],
            "via": done["via"],
            "deadLetterId": done["dead_letter_id"],
        },
    )


RETRY_RESPONSES: dict[int | str, Any] = {
    202: {
        "description": "The new execution asked of the job's timer",
        "content": {"application/json": {"example": RETRY_EXAMPLE}},
    },
    **problem_responses(404, 409, 422, 503),
}
RETRY_EXAMPLES = {"note": {"value": {"note": "upstream fixed"}}}


@router.post(
    "/runs/{run_id}/retry",
    status_code=202,
    summary="Retry a failed, dead-lettered or cancelled run: a new execution of its job, "
    "through its dead letter if it has one (decision 0102)",
    responses=RETRY_RESPONSES,
)
def retry_run(
    request: Request,
    b: BackendDep,
    run_id: ExecutionId,
    body: Annotated[RetryBody | None, Body(openapi_examples=RETRY_EXAMPLES)] = None,
) -> Any:
    return _retry_run(request, b, run_id, body.note if body else None, body.by if body else None)


@router.post(
    "/executions/{execution_id}/retry",
    status_code=202,
    summary="Retry a failed, dead-lettered or cancelled execution (seed 000's word for "
    "a run): the same as POST /runs/{id}/retry, the console's retry (decision 0102)",
    responses=RETRY_RESPONSES,
)
def retry_execution_route(
    request: Request,
    b: BackendDep,
    execution_id: ExecutionId,
    body: Annotated[RetryBody | None, Body(openapi_examples=RETRY_EXAMPLES)] = None,
) -> Any:
    return _retry_run(
        request,
        b,
        execution_id,
        body.note if body else None,
        body.by if body else None,
        noun="execution",
    )
