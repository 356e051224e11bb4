"""`/workflows` and `/approvals`: start (seed 000's body), read, list, stream, cancel, repair a
step, decide an approval — through `tickwheel.sdk.workflows` (decision 0098).

Every change is an input on `workflows.inputs` that the orchestrator owning the instance folds
later, so each answers 202: the timeline (`GET /workflows/{id}`) shows when it was applied. An
instance the orchestrator has not folded yet is a 404 for a moment, like an execution the
history has not recorded yet. In seed 000's vocabulary a workflow instance is the execution
whose steps are retried: `POST /executions/{id}/steps/{stepId}/retry` takes a workflow id.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tickwheel.core.workflow.approval import verify_approval
from tickwheel.errors import InvalidInput
from tickwheel.sdk.workflows import approval_keys
from tickwheel.services.api.event_streams import EVENT_STREAM, Interval, Timeout, stream
from tickwheel.services.api.keys import DEFAULT_TENANT
from tickwheel.services.api.problems import Problem, invalid_input, problem_responses
from tickwheel.services.api.routes_jobs import _json
from tickwheel.services.api.workflow_models import (
    ACCEPTED_EXAMPLE,
    SEED_WORKFLOW,
    TIMELINE_EXAMPLE,
    WORKFLOW_ID_EXAMPLE,
    ActionAccepted,
    ApprovalAccepted,
    ApprovalBody,
    StepCompleteBody,
    WorkflowAccepted,
    WorkflowCancelBody,
    WorkflowList,
    WorkflowSignalBody,
    WorkflowStart,
    WorkflowTimelineView,
)
from tickwheel.services.api.workflows import BODY_ALIASES, FINISHED, TenantWorkflows

router = APIRouter(tags=["workflows"])

WorkflowId = Annotated[str, Path(min_length=1, max_length=200, examples=[WORKFLOW_ID_EXAMPLE])]
StepId = Annotated[str, Path(min_length=1, max_length=100, examples=["encode_480"])]
Token = Annotated[str, Path(min_length=1, max_length=2000)]
STATUSES = (
    "running",
    "stopping",
    "compensating",
    "blocked",
    "succeeded",
    "failed",
    "cancelled",
    "compensated",
)


class Caller:
    """The request's tenant's view of the workflows, and the actor its changes are signed by."""

    def __init__(self, request: Request) -> None:
        principal = getattr(request.state, "principal", None)
        tenant = principal.tenant_id if principal is not None else None
        self.client = request.app.state.workflows
        self.now_ms = request.app.state.backend.now_ms
        self.flows = TenantWorkflows(self.client, tenant)
        key = principal.key_id if principal is not None else None
        self.actor = f"api:{tenant or DEFAULT_TENANT}/{key or 'dev'}"


CallerDep = Annotated[Caller, Depends(Caller)]
ACCEPTED = {
    202: _json(
        ActionAccepted,
        {
            "workflowId": WORKFLOW_ID_EXAMPLE,
            "stepId": "encode_480",
            "action": "retry",
            "actor": "api:acme/3f9c0a1b2c3d4e5f",
        },
    ),
    **problem_responses(404, 422, 503),
}


@router.post(
    "/workflows",
    status_code=202,
    summary="Start a workflow (seed 000's body: its definition, published if new, and one "
    "instance)",
    responses={202: _json(WorkflowAccepted, ACCEPTED_EXAMPLE), **problem_responses(404, 422, 503)},
)
def start_workflow(
    c: CallerDep,
    body: Annotated[WorkflowStart, Body(openapi_examples={"seed": {"value": SEED_WORKFLOW}})],
) -> JSONResponse:
    fields = body.model_dump(exclude_none=False)
    try:
        started = c.flows.define_and_start(fields, workflow_id=body.workflowId, actor=c.actor)
    except InvalidInput as exc:
        raise invalid_input(exc, aliases=BODY_ALIASES) from None
    location = f"/v1/workflows/{started['workflowId']}"
    return JSONResponse(started, status_code=202, headers={"Location": location})


@router.get(
    "/workflows",
    summary="The tenant's workflow instances (of one status, if given)",
    responses={
        200: _json(
            WorkflowList,
            {
                "items": [
                    {**ACCEPTED_EXAMPLE, "status": "running", "seq": 4, "updatedAt": 1796112004100}
                ]
            },
        ),
        **problem_responses(422, 503),
    },
)
def list_workflows(
    c: CallerDep,
    status: Annotated[str | None, Query(json_schema_extra={"enum": [*STATUSES]})] = None,
) -> dict[str, Any]:
    if status is not None and status not in STATUSES:
        raise Problem(
            422,
            "validation-error",
            f"status: {status!r}; accepted: {', '.join(STATUSES)}",
            errors=[{"parameter": "status", "detail": f"accepted: {', '.join(STATUSES)}"}],
        )
    return {"items": c.flows.list(status)}


def read_workflow(c: Caller, workflow_id: str) -> dict[str, Any]:
    value: dict[str, Any] = c.flows.get(workflow_id).to_json()
    return value


@router.get(
    "/workflows/{workflow_id}",
    summary="A workflow's timeline: each step's state, since when, what failed, and every event",
    responses={200: _json(WorkflowTimelineView, TIMELINE_EXAMPLE), **problem_responses(404, 503)},
)
def get_workflow(c: CallerDep, workflow_id: WorkflowId) -> dict[str, Any]:
    return read_workflow(c, workflow_id)


def _finished(timeline: dict[str, Any]) -> bool:
    return timeline.get("status") in FINISHED


@router.get(
    "/workflows/{workflow_id}/events",
    summary="A workflow's timeline as SSE, until it ends",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The timeline as it changes, then `end`",
            "content": {
                EVENT_STREAM: {
                    "schema": {"type": "string"},
                    "example": "event: timeline\nid: 0\ndata: {...}\n\n",
                }
            },
        },
        **problem_responses(404, 422, 503),
    },
)
async def workflow_events(
    c: CallerDep, workflow_id: WorkflowId, timeout: Timeout = 60, interval: Interval = 1.0
) -> StreamingResponse:
    return await stream(partial(read_workflow, c, workflow_id), timeout, interval, _finished)


@router.post(
    "/workflows/{workflow_id}/cancel",
    status_code=202,
    summary="Cancel a workflow (its compensations run, as its onCancel says)",
    responses=ACCEPTED,
)
def cancel_workflow(
    c: CallerDep,
    workflow_id: WorkflowId,
    body: Annotated[
        WorkflowCancelBody | None,
        Body(openapi_examples={"reason": {"value": {"reason": "wrong source"}}}),
    ] = None,
) -> dict[str, Any]:
    c.flows.get(workflow_id)
    c.client.cancel(workflow_id, actor=c.actor, reason=(body.reason if body else None) or "")
    return {"workflowId": workflow_id, "stepId": None, "action": "cancel", "actor": c.actor}


@router.post(
    "/workflows/{workflow_id}/signals/{name}",
    status_code=202,
    summary="Send a signal to a workflow written as code (its ctx.wait_signal)",
    responses=ACCEPTED,
)
def signal_workflow(
    c: CallerDep,
    workflow_id: WorkflowId,
    name: Annotated[str, Path(min_length=1, max_length=200)],
    body: Annotated[
        WorkflowSignalBody | None,
        Body(openapi_examples={"approval": {"value": {"payload": {"approved": True}}}}),
    ] = None,
) -> dict[str, Any]:
    c.flows.get(workflow_id)
    signal_id = c.client.signal(
        workflow_id,
        name,
        body.payload if body else None,
        signal_id=body.signalId if body else None,
    )
    return {"workflowId": workflow_id, "signal": name, "signalId": signal_id, "actor": c.actor}


def _repair(
    c: Caller, workflow_id: str, step_id: str, action: str, output: Any = None
) -> dict[str, Any]:
    c.flows.step(workflow_id, step_id)
    if action == "retry":
        c.client.retry_step(workflow_id, step_id, actor=c.actor)
    elif action == "skip":
        c.client.skip_step(workflow_id, step_id, actor=c.actor)
    else:
        c.client.complete_step(workflow_id, step_id, output, actor=c.actor)
    return {"workflowId": workflow_id, "stepId": step_id, "action": action, "actor": c.actor}


RETRY = "Retry a step: its next attempt, same execution id (reopens a failed workflow)"
SKIP = "Skip a step by hand (its dependents run; they see a null output)"
COMPLETE = "Complete a stuck step by hand, with an output"
CompleteBody = Annotated[
    StepCompleteBody | None,
    Body(openapi_examples={"output": {"value": {"output": {"path": "s3://b/v-480.mp4"}}}}),
]

for prefix, name, id_doc in (
    ("/workflows/{workflow_id}", "workflow", ""),
    ("/executions/{workflow_id}", "execution", " (seed 000: the workflow instance's id)"),
):

    @router.post(
        f"{prefix}/steps/{{step_id}}/retry",
        status_code=202,
        summary=RETRY + id_doc,
        responses=ACCEPTED,
        operation_id=f"retry_{name}_step",
    )
    def retry_step(c: CallerDep, workflow_id: WorkflowId, step_id: StepId) -> dict[str, Any]:
        return _repair(c, workflow_id, step_id, "retry")

    @router.post(
        f"{prefix}/steps/{{step_id}}/skip",
        status_code=202,
        summary=SKIP + id_doc,
        responses=ACCEPTED,
        operation_id=f"skip_{name}_step",
    )
    def skip_step(c: CallerDep, workflow_id: WorkflowId, step_id: StepId) -> dict[str, Any]:
        return _repair(c, workflow_id, step_id, "skip")

    @router.post(
        f"{prefix}/steps/{{step_id}}/complete",
        status_code=202,
        summary=COMPLETE + id_doc,
        responses=ACCEPTED,
        operation_id=f"complete_{name}_step",
    )
    def complete_step(
        c: CallerDep, workflow_id: WorkflowId, step_id: StepId, body: CompleteBody = None
    ) -> dict[str, Any]:
        return _repair(c, workflow_id, step_id, "complete", body.output if body else None)


@router.post(
    "/approvals/{token}",
    status_code=202,
    summary="Approve or reject a waiting approval with its signed token (the approve scope)",
    responses={
        202: _json(
            ApprovalAccepted,
            {
                "workflowId": WORKFLOW_ID_EXAMPLE,
                "stepId": "approve",
                "round": 1,
                "decision": "approve",
                "actor": "api:acme/3f9c0a1b2c3d4e5f",
            },
        ),
        **problem_responses(404, 409, 422, 503),
    },
)
def decide_approval(
    c: CallerDep,
    token: Token,
    body: Annotated[
        ApprovalBody,
        Body(
            openapi_examples={
                "approve": {"value": {"decision": "approve", "note": "checked the 480p cut"}}
            }
        ),
    ],
) -> dict[str, Any]:
    keys = c.client.keys if c.client.keys is not None else approval_keys()
    try:
        if not keys:
            raise InvalidInput(
                "token",
                "this API holds no approval keys (TICKWHEEL_APPROVAL_KEYS), so no token verifies",
            )
        claim = verify_approval(token, keys, c.now_ms())
    except InvalidInput as exc:
        raise invalid_input(exc, where="path") from None
    state = c.flows.step(claim.workflow_id, claim.step)  # another tenant's: 404
    if state.get("status") != "waiting" or state.get("round") != claim.round:
        raise Problem(
            409,
            "approval-closed",
            f"{claim.step!r} of {claim.workflow_id!r} is not "
            f"waiting on round {claim.round} (it is {state.get('status')}, round "
            f"{state.get('round')}): decided, timed out or reassigned",
        )
    decide = c.client.approve if body.decision == "approve" else c.client.reject
    decide(token, actor=c.actor, note=body.note or "")
    return {
        "workflowId": claim.workflow_id,
        "stepId": claim.step,
        "round": claim.round,
        "decision": body.decision,
        "actor": c.actor,
    }
