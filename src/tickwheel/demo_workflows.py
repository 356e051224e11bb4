"""The demo's workflow (`make run`): a task, a durable sleep, an approval the demo grants
itself with a signed token, and a task that fails for good — so the first task's
compensation runs. Shown live beside the jobs, from `workflows.events`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tickwheel.errors import TickwheelError
from tickwheel.records import WorkflowEvent
from tickwheel.sdk.workflows import WorkflowsClient

# A local demo's own key: the approval below is signed and checked like any other.
DEMO_KEYS = {"demo": b"tickwheel-demo-approval-key"}
DEMO_APPROVER = "demo-approver@example.com"

DEFINITION: dict[str, Any] = {
    "definitionId": "demo_order",
    "version": 1,
    "onFailure": "compensate",
    "steps": [
        {
            "id": "reserve_stock",
            "type": "sleep",
            "payload": {"seconds": 1},
            "compensation": {"type": "noop", "payload": {"release": "{{ workflowId }}"}},
        },
        {"id": "cool_off", "kind": "sleep", "duration": "5s", "dependsOn": ["reserve_stock"]},
        {
            "id": "manager_ok",
            "kind": "approval",
            "dependsOn": ["cool_off"],
            "assignees": [DEMO_APPROVER],
            "timeout": "10m",
        },
        {
            "id": "charge_card",
            "type": "fail",
            "payload": {"mode": "permanent"},
            "dependsOn": ["manager_ok"],
            "onFailure": "compensate",
        },
    ],
}


def start_demo_workflow(bootstrap: str) -> tuple[WorkflowsClient, str]:
    """Publish the definition (once) and start an instance; returns the client and its id."""
    flows = WorkflowsClient(bootstrap, keys=DEMO_KEYS)
    flows.define(DEFINITION, actor="demo")
    return flows, flows.start("demo_order", {"order": "demo"})


def describe_workflow_event(event: WorkflowEvent) -> str:
    at = datetime.fromtimestamp(event["event_time"] / 1000, tz=UTC).strftime("%H:%M:%S")
    step = f" {event['step_id']}" if event.get("step_id") else ""
    who = f" by {event['actor']}" if event.get("actor") else ""
    error = f": {event['error']}" if event.get("error") else ""
    return (
        f"[{at}] workflow {event['workflow_id'][:14]:<14} #{event.get('seq', 0):<3} "
        f"{event['event_type']}{step}{who}{error}  ({event.get('status') or '-'})"
    )


def approve_when_asked(
    flows: WorkflowsClient, event: WorkflowEvent, workflow_id: str
) -> str | None:
    """When the demo's instance asks for approval: sign a token for that round and approve
    with it, as the approver's link would. Returns what was done, for the account."""
    step = event["step_id"]
    if event["workflow_id"] != workflow_id or event["event_type"] != "approval_requested":
        return None
    if step is None:
        return "  (an approval request without its step: nothing to approve)"
    try:
        token = flows.approval_token(workflow_id, step)
        claim = flows.approve(token, actor=DEMO_APPROVER, note="looks good")
    except TickwheelError as exc:
        return f"  (the demo could not approve: {exc})"
    data = json.loads(event["data"]) if event["data"] else {}
    return (
        f"  approval round {claim.round} (asked of {', '.join(data.get('assignees', []))}) "
        f"approved with a signed token"
    )
