"""The API's side of workflows: the seed's `POST /workflows` body as a definition and a start,
and a tenant's view of `tickwheel.sdk.workflows.WorkflowsClient` (decision 0098).

Seed 000 §3 posts a definition and asks for an instance in one call:
`{definitionId, definitionVersion, steps, onFailure}` → 202 `{workflowId}`. Here that body is
the definition document (`definitionVersion` is the document's `version`; a step of
`"type": "human_approval"` is the core's `"kind": "approval"`), published if that version is
new (the same document again is a no-op, versions being immutable), then one instance of that
version is started with the body's `input`. A body without `steps` starts a version published
before.

A workflow belongs to the tenant its definition names (`tenantId`, written from the caller's
key; a definition without one is the tenant `default`): another tenant's instance is answered
as one that does not exist.
"""

from __future__ import annotations

from typing import Any

from tickwheel.core.workflow import TERMINAL
from tickwheel.errors import InvalidInput
from tickwheel.sdk.workflows import UnknownWorkflow, WorkflowTimeline
from tickwheel.services.api.keys import DEFAULT_TENANT

# The seed's word for an approval step, as a step `type`; the core's is `kind: approval`.
SEED_APPROVAL_TYPE = "human_approval"
# The seed's body's names → the definition document's (for errors pointing into the body).
BODY_ALIASES = {"version": "definitionVersion"}
FINISHED = TERMINAL


def seed_step(step: Any) -> Any:
    """One step of the seed's body as the core's: `type: human_approval` is an approval."""
    if isinstance(step, dict) and step.get("type") == SEED_APPROVAL_TYPE and "kind" not in step:
        return {k: v for k, v in step.items() if k != "type"} | {"kind": "approval"}
    return step


def definition_document(body: dict[str, Any], tenant_id: str) -> dict[str, Any]:
    """The definition document the body of `POST /workflows` stands for, owned by `tenant_id`."""
    given = body.get("tenantId")
    if given is not None and given != tenant_id:
        raise InvalidInput(
            "tenantId", f"{given!r}; accepted: your key's tenant {tenant_id!r}, or none"
        )
    document: dict[str, Any] = {
        "definitionId": body["definitionId"],
        "version": body["definitionVersion"],
        "steps": [seed_step(step) for step in body["steps"]],
    }
    for name in ("onFailure", "onCancel", "description"):
        if body.get(name) is not None:
            document[name] = body[name]
    if tenant_id != DEFAULT_TENANT:
        document["tenantId"] = tenant_id
    return document


def definition_tenant(document: dict[str, Any] | None) -> str:
    tenant = (document or {}).get("tenantId")
    return tenant if isinstance(tenant, str) and tenant else DEFAULT_TENANT


class TenantWorkflows:
    """The workflow client narrowed to the instances of one tenant (None: every tenant)."""

    def __init__(self, client: Any, tenant_id: str | None) -> None:
        self.client = client
        self.tenant_id = tenant_id

    def _owns(self, document: dict[str, Any] | None) -> bool:
        return self.tenant_id is None or definition_tenant(document) == self.tenant_id

    def define_and_start(
        self, body: dict[str, Any], *, workflow_id: str | None, actor: str
    ) -> dict[str, Any]:
        """Publish the body's definition if it is new, then start one instance of it."""
        did, version = body["definitionId"], body["definitionVersion"]
        if body.get("steps") is not None:
            document = definition_document(body, self.tenant_id or DEFAULT_TENANT)
            self.client.define(document, actor=actor)
        published = self.client.definitions(did)
        versions = sorted(v for (_, v) in published if self._owns(published[(did, v)]))
        version = version if version is not None else (versions[-1] if versions else None)
        if version not in versions:
            raise UnknownWorkflow("definition", f"{did} v{version or 'any'}")
        started = self.client.start(
            did, body.get("input"), workflow_id=workflow_id, version=version
        )
        return {
            "workflowId": started,
            "definitionId": did,
            "definitionVersion": version,
            "status": "starting",
        }

    def get(self, workflow_id: str) -> WorkflowTimeline:
        timeline: WorkflowTimeline = self.client.get(workflow_id)
        if self.tenant_id is not None:
            did, version = timeline.definition_id, timeline.definition_version
            if not self._owns(self.client.definitions(did).get((did, version))):
                raise UnknownWorkflow("instance", workflow_id)
        return timeline

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.client.list(status)
        if self.tenant_id is None:
            return rows
        documents = self.client.definitions()
        return [
            r
            for r in rows
            if self._owns(documents.get((r["definitionId"], r["definitionVersion"])))
        ]

    def step(self, workflow_id: str, step_id: str) -> dict[str, Any]:
        """The step's state in the tenant's instance; an unknown step is not found."""
        steps = self.get(workflow_id).steps
        if step_id not in steps:
            raise UnknownWorkflow("step", f"{workflow_id}/{step_id}")
        return steps[step_id]
