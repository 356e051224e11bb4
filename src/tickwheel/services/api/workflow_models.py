"""Request and response shapes of the workflow and approval routes (OpenAPI, first checks).

The steps of `POST /workflows` are objects the workflow core judges (`parse_definition`): the
model only checks they are objects, so a step field the core learns needs no change here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tickwheel.core.workflow.definition import MAX_STEPS, ON_CANCEL, ON_FAILURE
from tickwheel.services.api.models import _enum, _Strict

# Seed 000 §3, verbatim.
SEED_WORKFLOW: dict[str, Any] = {
    "definitionId": "video_publish",
    "definitionVersion": 7,
    "steps": [
        {"id": "probe", "type": "probe_source"},
        {"id": "encode_480", "type": "encode", "dependsOn": ["probe"]},
        {
            "id": "approve",
            "type": "human_approval",
            "dependsOn": ["encode_480"],
            "timeout": "72h",
            "onTimeout": "escalate",
        },
    ],
    "onFailure": "compensate",
}
WORKFLOW_ID_EXAMPLE = "wf-5b0d6c1e-2f7a-4e55-9a51-0c3f7d2b9e10"
ACCEPTED_EXAMPLE = {
    "workflowId": WORKFLOW_ID_EXAMPLE,
    "definitionId": "video_publish",
    "definitionVersion": 7,
    "status": "starting",
}
TIMELINE_EXAMPLE: dict[str, Any] = {
    "workflowId": WORKFLOW_ID_EXAMPLE,
    "definitionId": "video_publish",
    "definitionVersion": 7,
    "status": "running",
    "steps": {
        "probe": {
            "status": "succeeded",
            "attempt": 1,
            "round": 0,
            "startedAt": 1796112000000,
            "endedAt": 1796112004000,
            "compensation": None,
            "output": {"seconds": 93},
        },
        "encode_480": {
            "status": "running",
            "attempt": 2,
            "round": 0,
            "startedAt": 1796112004100,
            "endedAt": None,
            "compensation": None,
            "output": None,
        },
        "approve": {
            "status": "pending",
            "attempt": 0,
            "round": 0,
            "startedAt": None,
            "endedAt": None,
            "compensation": None,
            "output": None,
        },
    },
    "events": [
        {
            "seq": 1,
            "event_type": "workflow_started",
            "step_id": None,
            "at": 1796112000000,
            "actor": None,
            "data": None,
        },
    ],
}


class WorkflowStart(_Strict):
    """Seed 000's body: a definition version (published if new) and one instance of it.
    Without `steps`, an instance of a version published before (`definitionVersion`, or the
    latest). `input` is the instance's start input; `workflowId` names it (else generated)."""

    model_config = ConfigDict(json_schema_extra={"examples": [SEED_WORKFLOW]})

    definitionId: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    definitionVersion: int | None = Field(default=None, ge=1, le=2**31 - 1)
    steps: list[dict[str, Any]] | None = Field(default=None, min_length=1, max_length=MAX_STEPS)
    onFailure: str | None = _enum(ON_FAILURE)
    onCancel: str | None = _enum(ON_CANCEL)
    description: str | None = Field(default=None, max_length=500)
    tenantId: str | None = None
    input: Any = None
    workflowId: str | None = Field(default=None, min_length=1, max_length=200)


class WorkflowAccepted(BaseModel):
    workflowId: str
    definitionId: str
    definitionVersion: int
    status: str


class WorkflowTimelineView(BaseModel):
    """An instance: its status, each step's state (by step id), and every event, oldest
    first."""

    model_config = ConfigDict(json_schema_extra={"examples": [TIMELINE_EXAMPLE]})

    workflowId: str
    definitionId: str
    definitionVersion: int
    status: str
    steps: dict[str, dict[str, Any]]
    events: list[dict[str, Any]]


class WorkflowSummary(BaseModel):
    workflowId: str
    definitionId: str
    definitionVersion: int
    status: str
    seq: int
    updatedAt: int


class WorkflowList(BaseModel):
    items: list[WorkflowSummary]


class WorkflowCancelBody(_Strict):
    reason: str | None = Field(default=None, max_length=500)


class WorkflowSignalBody(_Strict):
    """A signal for a workflow written as code: what its `ctx.wait_signal` returns, and the
    id that makes a retried call count once (one is made when it is absent)."""

    payload: Any = None
    signalId: str | None = Field(default=None, min_length=1, max_length=200)


class StepCompleteBody(_Strict):
    """The output the step is completed with by hand (JSON, as a handler would return)."""

    output: Any = None


class ActionAccepted(BaseModel):
    """An operator input accepted for the instance's orchestrator (applied asynchronously)."""

    workflowId: str
    stepId: str | None = None
    action: str
    actor: str


class ApprovalBody(_Strict):
    decision: Literal["approve", "reject"]
    note: str | None = Field(default=None, max_length=2000)


class ApprovalAccepted(BaseModel):
    workflowId: str
    stepId: str
    round: int
    decision: str
    actor: str
